package sentinel

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/auth"
	"github.com/redis/go-redis/v9/push"

	"github.com/rediskit/rediskit/internal/optconv"
	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/replica"
)

// failoverFields are the exported fields of redis.FailoverOptions.
func failoverFields() []string {
	var names []string
	t := reflect.TypeFor[redis.FailoverOptions]()
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			names = append(names, f.Name)
		}
	}
	return names
}

// Every field of redis.FailoverOptions has a rule, mapped or refused: a
// go-redis upgrade that adds one fails here until it is handled (and the
// conversion meanwhile refuses the new field whenever it is set).
func TestFailoverRulesCoverEveryField(t *testing.T) {
	fields := failoverFields()
	for _, name := range fields {
		if _, ok := failoverRules[name]; !ok {
			t.Errorf("redis.FailoverOptions.%s is neither mapped nor refused: add a rule to failoverRules (migrate.go), a case to TestFromFailoverOptions and a row to the table in docs/go-redis.md", name)
		}
	}
	for name := range failoverRules {
		if !slices.Contains(fields, name) {
			t.Errorf("failoverRules has a rule for %s, which redis.FailoverOptions no longer has", name)
		}
	}
}

// A field without a rule is refused when set, and passes when zero.
func TestFailoverFieldWithoutARuleIsRefused(t *testing.T) {
	rules := rulesWithout(failoverRules, "PoolFIFO")
	fo := &redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"a:1"}, PoolFIFO: true}
	_, err := convertFailover(fo, rules)
	var fe *FailoverOptionsError
	if !errors.As(err, &fe) || len(fe.Refused) != 1 || fe.Refused[0].Field != "PoolFIFO" || fe.Refused[0].Value != "true" ||
		!strings.Contains(fe.Refused[0].Reason, "does not know") {
		t.Fatalf("convert with PoolFIFO unknown = %v; want PoolFIFO refused as unknown", err)
	}
	fo.PoolFIFO = false
	if _, err := convertFailover(fo, rules); err != nil {
		t.Fatalf("convert with PoolFIFO unknown and zero: %v", err)
	}
}

func rulesWithout(m map[string]failoverRule, key string) map[string]failoverRule {
	out := make(map[string]failoverRule, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}

type streamingCreds struct {
	auth.StreamingCredentialsProvider
}

// latencyWindow reads the LatencyWindow a *replica.Selector was made
// with.
func latencyWindow(t *testing.T, s ReplicaSelector) time.Duration {
	t.Helper()
	sel, ok := s.(*replica.Selector)
	if !ok {
		t.Fatalf("ReplicaSelector is %T, want *replica.Selector", s)
	}
	return time.Duration(reflect.ValueOf(sel).Elem().FieldByName("cfg").FieldByName("LatencyWindow").Int())
}

// Each field converts to its counterpart, or is refused with a reason.
// Every field of redis.FailoverOptions has a case.
func TestFromFailoverOptions(t *testing.T) {
	var dialed, connected bool
	dial := func(context.Context, string, string) (net.Conn, error) { dialed = true; return nil, errors.New("test") }
	onConnect := func(context.Context, *redis.Conn) error { connected = true; return nil }
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}

	tests := []struct {
		name    string
		fields  []string // the FailoverOptions fields the case exercises
		set     func(*redis.FailoverOptions)
		check   func(o Config) bool
		refused []string
	}{
		{"master name", []string{"MasterName"}, func(fo *redis.FailoverOptions) { fo.MasterName = "other" },
			func(o Config) bool { return o.MasterName == "other" }, nil},
		{"sentinels", []string{"SentinelAddrs"}, func(fo *redis.FailoverOptions) { fo.SentinelAddrs = []string{"a:1", "b:2"} },
			func(o Config) bool { return slices.Equal(o.SentinelAddrs, []string{"a:1", "b:2"}) }, nil},
		{"client name", []string{"ClientName"}, func(fo *redis.FailoverOptions) { fo.ClientName = "app" },
			func(o Config) bool { return o.ClientName == "app" }, nil},
		{"sentinel credentials", []string{"SentinelUsername", "SentinelPassword"},
			func(fo *redis.FailoverOptions) { fo.SentinelUsername, fo.SentinelPassword = "su", "sp" },
			func(o Config) bool { return o.SentinelUsername == "su" && o.SentinelPassword == "sp" }, nil},
		{"route by latency", []string{"RouteByLatency"}, func(fo *redis.FailoverOptions) { fo.RouteByLatency = true },
			func(o Config) bool { return o.ReadFrom == Nearest && o.ReplicaSelector == nil }, nil},
		{"route by latency, replicas only", []string{"RouteByLatency", "ReplicaOnly"},
			func(fo *redis.FailoverOptions) { fo.RouteByLatency, fo.ReplicaOnly = true, true },
			func(o Config) bool { return o.ReadFrom == Replica && o.ReplicaSelector == nil }, nil},
		{"latency tolerance", []string{"RouteByLatencyTolerance"},
			func(fo *redis.FailoverOptions) {
				fo.RouteByLatency, fo.RouteByLatencyTolerance = true, 5*time.Millisecond
			},
			func(o Config) bool {
				return o.ReadFrom == Nearest && latencyWindow(t, o.ReplicaSelector) == 5*time.Millisecond
			}, nil},
		{"latency tolerance without RouteByLatency has no effect", []string{"RouteByLatencyTolerance"},
			func(fo *redis.FailoverOptions) { fo.RouteByLatencyTolerance = 5 * time.Millisecond },
			func(o Config) bool { return o.ReadFrom == "" && o.ReplicaSelector == nil }, nil},
		{"negative tolerance", []string{"RouteByLatencyTolerance"},
			func(fo *redis.FailoverOptions) {
				fo.RouteByLatency, fo.RouteByLatencyTolerance = true, -time.Millisecond
			},
			nil, []string{"RouteByLatencyTolerance"}},
		{"route randomly", []string{"RouteRandomly"}, func(fo *redis.FailoverOptions) { fo.RouteRandomly = true },
			func(o Config) bool {
				_, rr := o.ReplicaSelector.(*roundRobin)
				return o.ReadFrom == ReplicaPreferred && rr
			}, nil},
		{"route randomly, replicas only", []string{"RouteRandomly", "ReplicaOnly"},
			func(fo *redis.FailoverOptions) { fo.RouteRandomly, fo.ReplicaOnly = true, true },
			func(o Config) bool {
				_, rr := o.ReplicaSelector.(*roundRobin)
				return o.ReadFrom == Replica && rr
			}, nil},
		{"route randomly and by latency", []string{"RouteRandomly", "RouteByLatency"},
			func(fo *redis.FailoverOptions) { fo.RouteRandomly, fo.RouteByLatency = true, true }, nil, []string{"RouteRandomly"}},
		{"replicas only", []string{"ReplicaOnly"}, func(fo *redis.FailoverOptions) { fo.ReplicaOnly = true },
			func(o Config) bool { return o.ReadFrom == Replica }, nil},
		{"disconnected replicas", []string{"UseDisconnectedReplicas"},
			func(fo *redis.FailoverOptions) { fo.ReplicaOnly, fo.UseDisconnectedReplicas = true, true }, nil, []string{"UseDisconnectedReplicas"}},
		{"dialer", []string{"Dialer"}, func(fo *redis.FailoverOptions) { fo.Dialer = dial },
			func(o Config) bool {
				dialed = false
				_, _ = o.Dialer(context.Background(), "tcp", "a:1")
				return dialed
			}, nil},
		{"on connect", []string{"OnConnect"}, func(fo *redis.FailoverOptions) { fo.OnConnect = onConnect },
			func(o Config) bool {
				connected = false
				_ = o.OnConnect(context.Background(), nil)
				return connected
			}, nil},
		{"RESP2", []string{"Protocol"}, func(fo *redis.FailoverOptions) { fo.Protocol = 2 },
			func(o Config) bool { return o.Protocol == 2 }, nil},
		{"RESP3", []string{"Protocol"}, func(fo *redis.FailoverOptions) { fo.Protocol = 3 },
			func(o Config) bool { return o.Protocol == 3 }, nil},
		{"protocol 1 is go-redis's RESP3", []string{"Protocol"}, func(fo *redis.FailoverOptions) { fo.Protocol = 1 },
			func(o Config) bool { return o.Protocol == 0 }, nil},
		{"protocol 4", []string{"Protocol"}, func(fo *redis.FailoverOptions) { fo.Protocol = 4 }, nil, []string{"Protocol"}},
		{"data-node credentials", []string{"Username", "Password"},
			func(fo *redis.FailoverOptions) { fo.Username, fo.Password = "u", "p" },
			func(o Config) bool { return o.Username == "u" && o.Password == "p" }, nil},
		{"credentials provider", []string{"CredentialsProvider"},
			func(fo *redis.FailoverOptions) {
				fo.CredentialsProvider = func() (string, string) { return "cu", "cp" }
			},
			func(o Config) bool {
				u, p, err := o.CredentialsProvider(context.Background())
				return u == "cu" && p == "cp" && err == nil
			}, nil},
		{"credentials provider with context", []string{"CredentialsProviderContext", "CredentialsProvider"},
			func(fo *redis.FailoverOptions) {
				fo.CredentialsProvider = func() (string, string) { return "old", "old" }
				fo.CredentialsProviderContext = func(context.Context) (string, string, error) { return "new", "new", nil }
			},
			func(o Config) bool {
				u, _, _ := o.CredentialsProvider(context.Background())
				return u == "new" // go-redis's precedence
			}, nil},
		{"streaming credentials", []string{"StreamingCredentialsProvider"},
			func(fo *redis.FailoverOptions) { fo.StreamingCredentialsProvider = streamingCreds{} }, nil, []string{"StreamingCredentialsProvider"}},
		{"database", []string{"DB"}, func(fo *redis.FailoverOptions) { fo.DB = 3 },
			func(o Config) bool { return o.DB == 3 }, nil},
		{"retries off", []string{"MaxRetries"}, func(fo *redis.FailoverOptions) { fo.MaxRetries = -1 },
			func(Config) bool { return true }, nil},
		{"retries", []string{"MaxRetries"}, func(fo *redis.FailoverOptions) { fo.MaxRetries = 3 }, nil, []string{"MaxRetries"}},
		{"no backoff", []string{"MinRetryBackoff", "MaxRetryBackoff"},
			func(fo *redis.FailoverOptions) { fo.MinRetryBackoff, fo.MaxRetryBackoff = -1, -1 },
			func(Config) bool { return true }, nil},
		{"backoff", []string{"MinRetryBackoff", "MaxRetryBackoff"},
			func(fo *redis.FailoverOptions) {
				fo.MinRetryBackoff, fo.MaxRetryBackoff = time.Millisecond, time.Second
			},
			nil, []string{"MinRetryBackoff", "MaxRetryBackoff"}},
		{"dial timeout", []string{"DialTimeout"}, func(fo *redis.FailoverOptions) { fo.DialTimeout = 5 * time.Second },
			func(o Config) bool { return o.DialTimeout == 5*time.Second }, nil},
		{"no dial timeout", []string{"DialTimeout"}, func(fo *redis.FailoverOptions) { fo.DialTimeout = -1 }, nil, []string{"DialTimeout"}},
		{"one dial", []string{"DialerRetries"}, func(fo *redis.FailoverOptions) { fo.DialerRetries = 1 },
			func(Config) bool { return true }, nil},
		{"dial retries", []string{"DialerRetries", "DialerRetryTimeout", "DialerRetryBackoff"},
			func(fo *redis.FailoverOptions) {
				fo.DialerRetries, fo.DialerRetryTimeout = 5, 100*time.Millisecond
				fo.DialerRetryBackoff = func(int) time.Duration { return time.Millisecond }
			},
			nil, []string{"DialerRetries", "DialerRetryTimeout", "DialerRetryBackoff"}},
		{"read and write timeouts", []string{"ReadTimeout", "WriteTimeout"},
			func(fo *redis.FailoverOptions) { fo.ReadTimeout, fo.WriteTimeout = 5*time.Second, 4*time.Second },
			func(o Config) bool { return o.ReadTimeout == 5*time.Second && o.WriteTimeout == 4*time.Second }, nil},
		{"no read or write timeout", []string{"ReadTimeout", "WriteTimeout"},
			func(fo *redis.FailoverOptions) { fo.ReadTimeout, fo.WriteTimeout = -1, -2 }, nil, []string{"ReadTimeout", "WriteTimeout"}},
		{"context timeouts", []string{"ContextTimeoutEnabled"}, func(fo *redis.FailoverOptions) { fo.ContextTimeoutEnabled = true },
			func(Config) bool { return true }, nil},
		{"buffers", []string{"ReadBufferSize", "WriteBufferSize", "PipelineReadBufferSize", "PipelineWriteBufferSize", "PipelinePoolSize"},
			func(fo *redis.FailoverOptions) {
				fo.ReadBufferSize, fo.WriteBufferSize = 1<<10, 2<<10
				fo.PipelineReadBufferSize, fo.PipelineWriteBufferSize, fo.PipelinePoolSize = 3<<10, 4<<10, 5
			},
			func(o Config) bool {
				return o.ReadBufferSize == 1<<10 && o.WriteBufferSize == 2<<10 && o.PipelineReadBufferSize == 3<<10 &&
					o.PipelineWriteBufferSize == 4<<10 && o.PipelinePoolSize == 5
			}, nil},
		{"auto-pipelining", []string{"AutoPipelineOptions"},
			func(fo *redis.FailoverOptions) { fo.AutoPipelineOptions = &redis.AutoPipelineOptions{MaxBatchSize: 50} },
			func(o Config) bool { return o.AutoPipelineOptions != nil && o.AutoPipelineOptions.MaxBatchSize == 50 }, nil},
		{"pool", []string{"PoolFIFO", "PoolSize", "MaxConcurrentDials", "PoolTimeout", "MinIdleConns", "MaxIdleConns", "MaxActiveConns",
			"ConnMaxIdleTime", "ConnMaxLifetime", "ConnMaxLifetimeJitter"},
			func(fo *redis.FailoverOptions) {
				fo.PoolFIFO, fo.PoolSize, fo.MaxConcurrentDials, fo.PoolTimeout = true, 20, 4, 2*time.Second
				fo.MinIdleConns, fo.MaxIdleConns, fo.MaxActiveConns = 1, 5, 30
				fo.ConnMaxIdleTime, fo.ConnMaxLifetime, fo.ConnMaxLifetimeJitter = time.Minute, time.Hour, 6*time.Minute
			},
			func(o Config) bool {
				return o.PoolFIFO && o.PoolSize == 20 && o.MaxConcurrentDials == 4 && o.PoolTimeout == 2*time.Second &&
					o.MinIdleConns == 1 && o.MaxIdleConns == 5 && o.MaxActiveConns == 30 &&
					o.ConnMaxIdleTime == time.Minute && o.ConnMaxLifetime == time.Hour && o.ConnMaxLifetimeJitter == 6*time.Minute
			}, nil},
		{"TLS", []string{"TLSConfig"}, func(fo *redis.FailoverOptions) { fo.TLSConfig = tlsCfg },
			func(o Config) bool { return o.TLSConfig == tlsCfg && o.SentinelTLSConfig == nil }, nil},
		{"TLS with a dialer", []string{"TLSConfig", "Dialer"},
			func(fo *redis.FailoverOptions) { fo.TLSConfig, fo.Dialer = tlsCfg, dial }, nil, []string{"TLSConfig"}},
		{"identity, go-redis's default", []string{"DisableIdentity", "DisableIndentity"}, func(*redis.FailoverOptions) {},
			func(o Config) bool { return o.Identity }, nil},
		{"identity off", []string{"DisableIdentity"}, func(fo *redis.FailoverOptions) { fo.DisableIdentity = true },
			func(o Config) bool { return !o.Identity }, nil},
		{"identity off, the old spelling", []string{"DisableIndentity"}, func(fo *redis.FailoverOptions) { fo.DisableIndentity = true },
			func(o Config) bool { return !o.Identity }, nil},
		{"identity suffix", []string{"IdentitySuffix"}, func(fo *redis.FailoverOptions) { fo.IdentitySuffix = "svc" },
			func(o Config) bool { return o.IdentitySuffix == "svc" && o.Identity }, nil},
		{"failing timeout", []string{"FailingTimeoutSeconds"}, func(fo *redis.FailoverOptions) { fo.FailingTimeoutSeconds = 15 },
			nil, []string{"FailingTimeoutSeconds"}},
		{"unstable RESP3 (a no-op)", []string{"UnstableResp3"}, func(fo *redis.FailoverOptions) { fo.UnstableResp3 = true },
			func(Config) bool { return true }, nil},
		{"push processor", []string{"PushNotificationProcessor"},
			func(fo *redis.FailoverOptions) { fo.PushNotificationProcessor = push.NewVoidProcessor() }, nil, []string{"PushNotificationProcessor"}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range tt.fields {
				covered[f] = true
			}
			fo := &redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"10.0.0.1:26379"}}
			tt.set(fo)
			o, err := FromFailoverOptions(fo)
			if tt.refused == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !tt.check(o) {
					t.Fatalf("converted to %+v", o)
				}
				return
			}
			var fe *FailoverOptionsError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FailoverOptionsError", err)
			}
			var got []string
			for _, r := range fe.Refused {
				got = append(got, r.Field)
				if r.Reason == "" || r.Value == "" || !strings.Contains(err.Error(), r.Field+" ("+r.Value+"): "+r.Reason) {
					t.Errorf("refusal %+v: a value and a reason, in the message %q", r, err)
				}
			}
			if !slices.Equal(got, tt.refused) {
				t.Fatalf("refused %v, want %v (%v)", got, tt.refused, err)
			}
			if !reflect.ValueOf(o).IsZero() {
				t.Fatalf("Config %+v with an error", o)
			}
		})
	}
	for _, f := range failoverFields() {
		if !covered[f] {
			t.Errorf("no case converts redis.FailoverOptions.%s", f)
		}
	}
}

// The simplest go-redis configuration converts to a Config NewClient
// accepts, with go-redis's identity (CLIENT SETINFO) kept on; refused
// fields are listed together, in the struct's order, and the message shows
// no credential; nil is an error.
func TestFromFailoverOptionsWhole(t *testing.T) {
	o, err := FromFailoverOptions(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"10.0.0.1:26379", "10.0.0.2"}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := o.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.SentinelAddrs, []string{"10.0.0.1:26379", "10.0.0.2:26379"}) || d.ReadFrom != Master || !d.Identity ||
		d.Protocol != DefaultProtocol || d.ConnMaxIdleTime != DefaultConnMaxIdleTime {
		t.Fatalf("defaults: %+v", d)
	}

	_, err = FromFailoverOptions(&redis.FailoverOptions{MasterName: "mymaster", SentinelAddrs: []string{"a:1"},
		Password: "data-s3cret", SentinelPassword: "sentinel-s3cret", Username: "app-user",
		UseDisconnectedReplicas: true, MaxRetries: 5, DialerRetries: 3})
	var fe *FailoverOptionsError
	if !errors.As(err, &fe) {
		t.Fatalf("err = %v", err)
	}
	var got []string
	for _, r := range fe.Refused {
		got = append(got, r.Field+"="+r.Value)
	}
	if want := []string{"UseDisconnectedReplicas=true", "MaxRetries=5", "DialerRetries=3"}; !slices.Equal(got, want) {
		t.Fatalf("refused %v, want %v", got, want)
	}
	if !strings.HasPrefix(err.Error(), "sentinel: 3 redis.FailoverOptions fields have no counterpart: ") {
		t.Errorf("message: %v", err)
	}
	for _, secret := range []string{"s3cret", "app-user"} {
		if strings.Contains(err.Error(), secret) {
			t.Errorf("the message shows %q: %v", secret, err)
		}
	}
	if _, err := FromFailoverOptions(nil); err == nil {
		t.Fatal("FromFailoverOptions(nil) converted")
	}
}

// A go-redis failover URL converts: the userinfo to the sentinels'
// credentials, the username and password parameters to the data nodes',
// every server verified against its own name; rediskit's own URL form is
// sent to NewClientFromURL.
func TestFromFailoverURL(t *testing.T) {
	o, err := FromFailoverURL("rediss://sent:sentinel-pw@s1.example:26379/2?master_name=mymaster&addr=s2.example:26380" +
		"&username=app&password=app-pw&dial_timeout=3&read_timeout=6s&max_retries=-1&route_by_latency=true&pool_fifo=true")
	if err != nil {
		t.Fatal(err)
	}
	if o.MasterName != "mymaster" || !slices.Equal(o.SentinelAddrs, []string{"s1.example:26379", "s2.example:26380"}) ||
		o.SentinelUsername != "sent" || o.SentinelPassword != "sentinel-pw" || o.Username != "app" || o.Password != "app-pw" ||
		o.DB != 2 || o.DialTimeout != 3*time.Second || o.ReadTimeout != 6*time.Second || o.ReadFrom != Nearest || !o.PoolFIFO {
		t.Fatalf("converted: %+v", o)
	}
	if o.TLSConfig == nil || o.TLSConfig.ServerName != "" || o.TLSConfig.InsecureSkipVerify {
		t.Fatalf("TLS: %+v (want verification against each server's own name)", o.TLSConfig)
	}

	for _, tt := range []struct{ url, want string }{
		{"redis://h:26379?master_name=m&max_retries=2", "MaxRetries (2)"},
		{"redis+sentinel://h1,h2/mymaster", "rediskit's sentinel URL"},
		{"redis://sent:pw-7f3kQ@h:x?master_name=m", "not shown"},
	} {
		_, err := FromFailoverURL(tt.url)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "7f3kQ") {
			t.Errorf("FromFailoverURL(%q) = %v, want an error saying %q", tt.url, err, tt.want)
		}
	}
	var ue *redisurl.Error
	if _, err := FromFailoverURL("redis+sentinel://h1/m"); !errors.As(err, &ue) {
		t.Errorf("a rediskit URL: %v, want a *redisurl.Error", err)
	}
}

// The table of docs/go-redis.md names every field of redis.FailoverOptions.
func TestDocMapsEveryFailoverField(t *testing.T) {
	optconv.CheckDocTable[redis.FailoverOptions](t, "../docs/go-redis.md", "## From redis.FailoverOptions")
}
