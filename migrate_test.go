package rediskit

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
	"github.com/redis/go-redis/v9/maintnotifications"
	"github.com/redis/go-redis/v9/push"

	"github.com/rediskit/rediskit/internal/optconv"
	"github.com/rediskit/rediskit/redisurl"
)

// Every field of redis.UniversalOptions has a rule, mapped or refused: a
// go-redis upgrade that adds one fails here until it is handled.
func TestUniversalRulesCoverEveryField(t *testing.T) {
	optconv.CheckRules(t, universalRules, "universalRules (migrate.go)")
}

// A field without a rule is refused when set, and passes when zero.
func TestUniversalFieldWithoutARuleIsRefused(t *testing.T) {
	rules := map[string]universalRule{}
	for k, v := range universalRules {
		if k != "PoolFIFO" {
			rules[k] = v
		}
	}
	uo := &redis.UniversalOptions{Addrs: []string{"a:1"}, PoolFIFO: true}
	_, err := convertUniversal(uo, rules)
	var ue *UniversalOptionsError
	if !errors.As(err, &ue) || len(ue.Refused) != 1 || ue.Refused[0].Field != "PoolFIFO" || ue.Refused[0].Value != "true" ||
		!strings.Contains(ue.Refused[0].Reason, "does not know") {
		t.Fatalf("convert with PoolFIFO unknown = %v; want PoolFIFO refused as unknown", err)
	}
	uo.PoolFIFO = false
	if _, err := convertUniversal(uo, rules); err != nil {
		t.Fatalf("convert with PoolFIFO unknown and zero: %v", err)
	}
}

type streamingCreds struct {
	auth.StreamingCredentialsProvider
}

// Each field converts to its counterpart, or is refused with a reason.
// Every field of redis.UniversalOptions has a case.
func TestFromUniversalOptions(t *testing.T) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	dial := func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("test") }
	parsed := func(t *testing.T, c Config) *redisurl.Config {
		u, err := redisurl.Parse(c.URL)
		if err != nil {
			t.Fatalf("Config.URL %q: %v", c.URL, err)
		}
		return u
	}
	tests := []struct {
		name    string
		fields  []string
		set     func(*redis.UniversalOptions)
		check   func(t *testing.T, c Config) bool
		refused []string
	}{
		{"one server", []string{"Addrs"}, func(uo *redis.UniversalOptions) { uo.Addrs = []string{"10.0.0.1:6380"} },
			func(t *testing.T, c Config) bool {
				u := parsed(t, c)
				return u.Kind == redisurl.Standalone && u.Addr == "10.0.0.1:6380" && c.Kind == KindAuto
			}, nil},
		{"no address: go-redis's default", []string{"Addrs"}, func(uo *redis.UniversalOptions) { uo.Addrs = nil },
			func(t *testing.T, c Config) bool { return parsed(t, c).Addr == "127.0.0.1:6379" }, nil},
		{"several addresses: a cluster", []string{"Addrs"}, func(uo *redis.UniversalOptions) { uo.Addrs = []string{"a:1", "b:2"} },
			func(t *testing.T, c Config) bool {
				u := parsed(t, c)
				return u.Kind == redisurl.Cluster && slices.Equal(u.Addrs, []string{"a:1", "b:2"}) && c.Kind == KindCluster
			}, nil},
		{"cluster mode with one address", []string{"IsClusterMode"}, func(uo *redis.UniversalOptions) { uo.IsClusterMode = true },
			func(t *testing.T, c Config) bool {
				u := parsed(t, c)
				return u.Kind == redisurl.Cluster && slices.Equal(u.Addrs, []string{"10.0.0.1:6379"}) && c.Kind == KindCluster
			}, nil},
		{"master name: Sentinel", []string{"MasterName", "SentinelUsername", "SentinelPassword"},
			func(uo *redis.UniversalOptions) {
				uo.MasterName, uo.Addrs = "mymaster", []string{"s1:26379", "s2:26379"}
				uo.SentinelUsername, uo.SentinelPassword = "su", "sp"
			},
			func(t *testing.T, c Config) bool {
				u := parsed(t, c)
				return u.Kind == redisurl.Sentinel && u.MasterName == "mymaster" && slices.Equal(u.Sentinels, []string{"s1:26379", "s2:26379"}) &&
					u.SentinelUsername == "su" && u.SentinelPassword == "sp"
			}, nil},
		{"client name", []string{"ClientName"}, func(uo *redis.UniversalOptions) { uo.ClientName = "app" },
			func(_ *testing.T, c Config) bool { return c.ClientName == "app" }, nil},
		{"database", []string{"DB"}, func(uo *redis.UniversalOptions) { uo.DB = 3 },
			func(t *testing.T, c Config) bool { return parsed(t, c).DB == 3 }, nil},
		{"database of a cluster", []string{"DB"}, func(uo *redis.UniversalOptions) { uo.DB, uo.IsClusterMode = 3, true }, nil, []string{"DB"}},
		{"credentials", []string{"Username", "Password"}, func(uo *redis.UniversalOptions) { uo.Username, uo.Password = "u", "p" },
			func(t *testing.T, c Config) bool {
				u := parsed(t, c)
				return c.Username == "u" && c.Password == "p" && u.Password == "" // kept out of the URL
			}, nil},
		{"TLS", []string{"TLSConfig"}, func(uo *redis.UniversalOptions) { uo.TLSConfig = tlsCfg },
			func(t *testing.T, c Config) bool { return parsed(t, c).TLS && c.TLSConfig == tlsCfg }, nil},
		{"TLS with a dialer", []string{"TLSConfig", "Dialer"}, func(uo *redis.UniversalOptions) { uo.TLSConfig, uo.Dialer = tlsCfg, dial },
			nil, []string{"Dialer", "TLSConfig"}},
		{"timeouts", []string{"DialTimeout", "ReadTimeout", "WriteTimeout", "ContextTimeoutEnabled"},
			func(uo *redis.UniversalOptions) {
				uo.DialTimeout, uo.ReadTimeout, uo.WriteTimeout, uo.ContextTimeoutEnabled = time.Second, 2*time.Second, 3*time.Second, true
			},
			func(_ *testing.T, c Config) bool {
				return c.DialTimeout == time.Second && c.ReadTimeout == 2*time.Second && c.WriteTimeout == 3*time.Second
			}, nil},
		{"no timeouts", []string{"DialTimeout", "ReadTimeout", "WriteTimeout"},
			func(uo *redis.UniversalOptions) { uo.DialTimeout, uo.ReadTimeout, uo.WriteTimeout = -1, -1, -1 },
			nil, []string{"DialTimeout", "ReadTimeout", "WriteTimeout"}},
		{"pool size", []string{"PoolSize"}, func(uo *redis.UniversalOptions) { uo.PoolSize = 7 },
			func(_ *testing.T, c Config) bool { return c.PoolSize == 7 }, nil},
		{"negative pool size", []string{"PoolSize"}, func(uo *redis.UniversalOptions) { uo.PoolSize = -1 }, nil, []string{"PoolSize"}},
		{"read only", []string{"ReadOnly"}, func(uo *redis.UniversalOptions) { uo.ReadOnly = true },
			func(_ *testing.T, c Config) bool { return c.ReadFrom == ReplicaPreferred }, nil},
		{"route by latency", []string{"RouteByLatency", "ReadOnly"}, func(uo *redis.UniversalOptions) { uo.RouteByLatency, uo.ReadOnly = true, true },
			func(_ *testing.T, c Config) bool { return c.ReadFrom == Nearest }, nil},
		{"route randomly", []string{"RouteRandomly"}, func(uo *redis.UniversalOptions) { uo.RouteRandomly = true }, nil, []string{"RouteRandomly"}},
		{"latency tolerance", []string{"RouteByLatencyTolerance"}, func(uo *redis.UniversalOptions) { uo.RouteByLatencyTolerance = time.Millisecond },
			nil, []string{"RouteByLatencyTolerance"}},
		{"retries off", []string{"MaxRetries", "MinRetryBackoff", "MaxRetryBackoff", "DialerRetries"},
			func(uo *redis.UniversalOptions) {
				uo.MaxRetries, uo.MinRetryBackoff, uo.MaxRetryBackoff, uo.DialerRetries = -1, -1, -1, 1
			},
			func(*testing.T, Config) bool { return true }, nil},
		{"retries", []string{"MaxRetries", "MinRetryBackoff", "MaxRetryBackoff", "DialerRetries", "DialerRetryTimeout"},
			func(uo *redis.UniversalOptions) {
				uo.MaxRetries, uo.MinRetryBackoff, uo.MaxRetryBackoff, uo.DialerRetries, uo.DialerRetryTimeout = 3, 1, 1, 5, 1
			},
			nil, []string{"MaxRetries", "MinRetryBackoff", "MaxRetryBackoff", "DialerRetries", "DialerRetryTimeout"}},
		{"redirects", []string{"MaxRedirects"}, func(uo *redis.UniversalOptions) { uo.MaxRedirects = 8 }, nil, []string{"MaxRedirects"}},
		{"failing timeout", []string{"FailingTimeoutSeconds"}, func(uo *redis.UniversalOptions) { uo.FailingTimeoutSeconds = 15 },
			nil, []string{"FailingTimeoutSeconds"}},
		{"streaming credentials", []string{"StreamingCredentialsProvider"},
			func(uo *redis.UniversalOptions) { uo.StreamingCredentialsProvider = streamingCreds{} }, nil, []string{"StreamingCredentialsProvider"}},
		{"push processor", []string{"PushNotificationProcessor"},
			func(uo *redis.UniversalOptions) { uo.PushNotificationProcessor = push.NewVoidProcessor() }, nil, []string{"PushNotificationProcessor"}},
		{"maintenance notifications off", []string{"MaintNotificationsConfig"},
			func(uo *redis.UniversalOptions) {
				uo.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
			},
			func(*testing.T, Config) bool { return true }, nil},
		{"maintenance notifications on", []string{"MaintNotificationsConfig"},
			func(uo *redis.UniversalOptions) {
				uo.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeEnabled}
			},
			nil, []string{"MaintNotificationsConfig"}},
		{"no-ops", []string{"UnstableResp3", "DisableIdentity", "DisableIndentity"},
			func(uo *redis.UniversalOptions) {
				uo.UnstableResp3, uo.DisableIdentity, uo.DisableIndentity = true, true, true
			}, //nolint:staticcheck // the deprecated spelling is a field to convert
			func(*testing.T, Config) bool { return true }, nil},
		{"client-side cache", []string{"ClientSideCacheConfig", "ClientSideCache", "ClientSideCacheStrategy",
			"ClientSideCacheRefreshOnInvalidate", "ClientSideCacheCoalesceMisses", "ClientSideCacheInvalidationBatchWindow"},
			func(uo *redis.UniversalOptions) {
				uo.ClientSideCacheConfig = &redis.ClientSideCacheConfig{}
				uo.ClientSideCacheStrategy, uo.ClientSideCacheRefreshOnInvalidate, uo.ClientSideCacheCoalesceMisses = 1, true, true
				uo.ClientSideCacheInvalidationBatchWindow = time.Millisecond
			},
			nil, []string{"ClientSideCacheConfig", "ClientSideCacheStrategy", "ClientSideCacheRefreshOnInvalidate",
				"ClientSideCacheCoalesceMisses", "ClientSideCacheInvalidationBatchWindow"}},
		{"typed packages' settings", []string{"Dialer", "OnConnect", "Protocol", "CredentialsProvider", "CredentialsProviderContext",
			"ReadBufferSize", "WriteBufferSize", "PipelineReadBufferSize", "PipelineWriteBufferSize", "PipelinePoolSize", "PoolFIFO",
			"MaxConcurrentDials", "PoolTimeout", "MinIdleConns", "MaxIdleConns", "MaxActiveConns", "ConnMaxIdleTime", "ConnMaxLifetime",
			"ConnMaxLifetimeJitter", "IdentitySuffix", "AutoPipelineOptions"},
			func(uo *redis.UniversalOptions) {
				uo.Dialer, uo.OnConnect, uo.Protocol = dial, func(context.Context, *redis.Conn) error { return nil }, 2
				uo.CredentialsProvider = func() (string, string) { return "", "" }
				uo.CredentialsProviderContext = func(context.Context) (string, string, error) { return "", "", nil }
				uo.ReadBufferSize, uo.WriteBufferSize, uo.PipelineReadBufferSize, uo.PipelineWriteBufferSize, uo.PipelinePoolSize = 1, 1, 1, 1, 1
				uo.PoolFIFO, uo.MaxConcurrentDials, uo.PoolTimeout, uo.MinIdleConns, uo.MaxIdleConns, uo.MaxActiveConns = true, 1, 1, 1, 1, 1
				uo.ConnMaxIdleTime, uo.ConnMaxLifetime, uo.ConnMaxLifetimeJitter, uo.IdentitySuffix = 1, 1, 1, "s"
				uo.AutoPipelineOptions = &redis.AutoPipelineOptions{}
			},
			nil, []string{"Dialer", "OnConnect", "Protocol", "CredentialsProvider", "CredentialsProviderContext",
				"ReadBufferSize", "WriteBufferSize", "PipelineReadBufferSize", "PipelineWriteBufferSize", "PipelinePoolSize", "PoolFIFO",
				"MaxConcurrentDials", "PoolTimeout", "MinIdleConns", "MaxIdleConns", "MaxActiveConns", "ConnMaxIdleTime", "ConnMaxLifetime",
				"ConnMaxLifetimeJitter", "IdentitySuffix", "AutoPipelineOptions"}},
	}
	covered := map[string]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, f := range tt.fields {
				covered[f] = true
			}
			uo := &redis.UniversalOptions{Addrs: []string{"10.0.0.1:6379"}}
			tt.set(uo)
			c, err := FromUniversalOptions(uo)
			if tt.refused == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !tt.check(t, c) {
					t.Fatalf("converted to %+v", c)
				}
				if _, err := c.withDefaults(); err != nil {
					t.Fatalf("the Config is refused: %v", err)
				}
				return
			}
			var ue *UniversalOptionsError
			if !errors.As(err, &ue) {
				t.Fatalf("err = %v, want a *UniversalOptionsError", err)
			}
			var got []string
			for _, r := range ue.Refused {
				got = append(got, r.Field)
				if r.Reason == "" || r.Value == "" || !strings.Contains(err.Error(), r.Field+" ("+r.Value+"): "+r.Reason) {
					t.Errorf("refusal %+v: a value and a reason, in the message %q", r, err)
				}
			}
			if !slices.Equal(got, tt.refused) {
				t.Fatalf("refused %v, want %v (%v)", got, tt.refused, err)
			}
			if !reflect.ValueOf(c).IsZero() {
				t.Fatalf("Config %+v with an error", c)
			}
		})
	}
	for _, f := range optconv.Fields[redis.UniversalOptions]() {
		if !covered[f] {
			t.Errorf("no case converts redis.UniversalOptions.%s", f)
		}
	}
	if _, err := FromUniversalOptions(nil); err == nil {
		t.Error("FromUniversalOptions(nil) succeeded")
	}
}

// A refusal never shows a password, whatever else is refused.
func TestFromUniversalOptionsHidesSecrets(t *testing.T) {
	_, err := FromUniversalOptions(&redis.UniversalOptions{Addrs: []string{"a:1"}, Password: "s3cret-pw", SentinelPassword: "s3cret-sp",
		MasterName: "m", MaxRetries: 3, IdentitySuffix: "s3cret-suffix"})
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("err = %v: want a refusal without the secrets", err)
	}
}

// The tables of docs/go-redis.md name every field of redis.UniversalOptions
// and redis.Options.
func TestDocMapsEveryUniversalAndOptionsField(t *testing.T) {
	optconv.CheckDocTable[redis.UniversalOptions](t, "docs/go-redis.md", "## From redis.UniversalOptions")
	optconv.CheckDocTable[redis.Options](t, "docs/go-redis.md", "## From redis.Options")
}
