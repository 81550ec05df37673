package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rediskit/rediskit/internal/optconv"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// Every field of redis.ClusterOptions has a rule, mapped or refused: a
// go-redis upgrade that adds one fails here until it is handled.
func TestClusterRulesCoverEveryField(t *testing.T) {
	optconv.CheckRules(t, clusterRules, "clusterRules (migrate.go)")
}

// A field without a rule is refused when set, and passes when zero.
func TestClusterFieldWithoutARuleIsRefused(t *testing.T) {
	rules := map[string]clusterRule{}
	for k, v := range clusterRules {
		if k != "PoolFIFO" {
			rules[k] = v
		}
	}
	co := &redis.ClusterOptions{Addrs: []string{"a:1"}, PoolFIFO: true}
	_, err := convertCluster(co, rules)
	var ce *ClusterOptionsError
	if !errors.As(err, &ce) || len(ce.Refused) != 1 || ce.Refused[0].Field != "PoolFIFO" || !strings.Contains(ce.Refused[0].Reason, "does not know") {
		t.Fatalf("convert with PoolFIFO unknown = %v; want PoolFIFO refused as unknown", err)
	}
	co.PoolFIFO = false
	if _, err := convertCluster(co, rules); err != nil {
		t.Fatalf("convert with PoolFIFO unknown and zero: %v", err)
	}
}

// Each field converts to its counterpart, or is refused with a reason.
func TestFromClusterOptions(t *testing.T) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	dial := func(context.Context, string, string) (net.Conn, error) { return nil, errors.New("test") }
	onConnect := func(context.Context, *redis.Conn) error { return nil }
	creds := func(context.Context) (string, string, error) { return "u", "p", nil }
	ap := &redis.AutoPipelineOptions{MaxBatchSize: 7}
	// node applies the Config's NodeOptions to fresh options.
	node := func(c Config) *redis.Options {
		o := &redis.Options{}
		if c.NodeOptions != nil {
			c.NodeOptions(o)
		}
		return o
	}
	seeds := []string{"10.0.0.1:7000", "10.0.0.2:7000"}
	tests := []struct {
		name    string
		set     func(*redis.ClusterOptions)
		check   func(c Config) bool
		refused []string
	}{
		{"seeds, zero elsewhere: rediskit's defaults", func(*redis.ClusterOptions) {},
			func(c Config) bool { return slices.Equal(c.Addrs, seeds) && c.NodeOptions == nil && c.ReadFrom == "" }, nil},
		{"no seed", func(co *redis.ClusterOptions) { co.Addrs = nil }, nil, []string{"Addrs"}},
		{"identity and credentials", func(co *redis.ClusterOptions) { co.ClientName, co.Username, co.Password = "app", "u", "secret-pw" },
			func(c Config) bool { return c.ClientName == "app" && c.Username == "u" && c.Password == "secret-pw" }, nil},
		{"TLS", func(co *redis.ClusterOptions) { co.TLSConfig = tlsCfg }, func(c Config) bool { return c.TLSConfig == tlsCfg }, nil},
		{"TLS with a dialer", func(co *redis.ClusterOptions) { co.TLSConfig, co.Dialer = tlsCfg, dial }, nil, []string{"TLSConfig"}},
		{"timeouts", func(co *redis.ClusterOptions) {
			co.DialTimeout, co.ReadTimeout, co.WriteTimeout, co.ContextTimeoutEnabled = time.Second, 2*time.Second, 3*time.Second, true
		}, func(c Config) bool {
			return c.DialTimeout == time.Second && c.ReadTimeout == 2*time.Second && c.WriteTimeout == 3*time.Second
		}, nil},
		{"no timeout", func(co *redis.ClusterOptions) { co.ReadTimeout, co.WriteTimeout = -1, -1 }, nil, []string{"ReadTimeout", "WriteTimeout"}},
		{"pool size", func(co *redis.ClusterOptions) { co.PoolSize = 20 }, func(c Config) bool { return c.PoolSize == 20 }, nil},
		{"negative pool size", func(co *redis.ClusterOptions) { co.PoolSize = -1 }, nil, []string{"PoolSize"}},
		{"redirects", func(co *redis.ClusterOptions) { co.MaxRedirects = 8 }, func(c Config) bool { return c.MaxRedirects == 8 }, nil},
		{"no redirects", func(co *redis.ClusterOptions) { co.MaxRedirects = -1 }, nil, []string{"MaxRedirects"}},
		{"reload interval", func(co *redis.ClusterOptions) { co.ClusterStateReloadInterval = 30 * time.Second },
			func(c Config) bool { return c.RefreshInterval == 30*time.Second }, nil},
		{"read only", func(co *redis.ClusterOptions) { co.ReadOnly = true }, func(c Config) bool { return c.ReadFrom == ReplicaPreferred }, nil},
		{"by latency", func(co *redis.ClusterOptions) {
			co.ReadOnly, co.RouteByLatency, co.RouteByLatencyTolerance = true, true, 3*time.Millisecond
		},
			func(c Config) bool { return c.ReadFrom == Nearest && c.Replica.LatencyWindow == 3*time.Millisecond }, nil},
		{"randomly", func(co *redis.ClusterOptions) { co.ReadOnly, co.RouteRandomly = true, true }, nil, []string{"RouteRandomly"}},
		{"go-redis's retries", func(co *redis.ClusterOptions) {
			co.MaxRetries, co.MinRetryBackoff, co.MaxRetryBackoff = 3, time.Millisecond, time.Second
			co.DialerRetries, co.DialerRetryTimeout = 5, time.Second
			co.DialerRetryBackoff = func(int) time.Duration { return 0 }
		}, nil, []string{"DialerRetries", "DialerRetryBackoff", "DialerRetryTimeout", "MaxRetries", "MaxRetryBackoff", "MinRetryBackoff"}},
		{"go-redis's no-retry values", func(co *redis.ClusterOptions) { co.MaxRetries, co.DialerRetries = -1, 1 },
			func(Config) bool { return true }, nil},
		{"what rediskit does itself", func(co *redis.ClusterOptions) {
			co.NewClient = redis.NewClient
			co.ClusterSlots = func(context.Context) ([]redis.ClusterSlot, error) { return nil, nil }
		}, nil, []string{"ClusterSlots", "NewClient"}},
		{"routing policies, identity, RESP3 flag: accepted", func(co *redis.ClusterOptions) {
			co.DisableRoutingPolicies, co.DisableIdentity, co.DisableIndentity, co.UnstableResp3 = true, true, true, true
		}, func(c Config) bool { return c.NodeOptions == nil }, nil},
		{"notifications and failing timeout", func(co *redis.ClusterOptions) {
			co.FailingTimeoutSeconds = 5
			co.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeEnabled}
		}, nil, []string{"FailingTimeoutSeconds", "MaintNotificationsConfig"}},
		{"maintenance notifications off", func(co *redis.ClusterOptions) {
			co.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		}, func(Config) bool { return true }, nil},
		{"node settings through NodeOptions", func(co *redis.ClusterOptions) {
			co.Dialer, co.OnConnect, co.Protocol, co.CredentialsProviderContext = dial, onConnect, 2, creds
			co.PoolFIFO, co.PoolTimeout, co.MinIdleConns, co.MaxIdleConns, co.MaxActiveConns = true, time.Second, 2, 4, 8
			co.ConnMaxIdleTime, co.ConnMaxLifetime, co.ConnMaxLifetimeJitter = time.Minute, time.Hour, time.Second
			co.ReadBufferSize, co.WriteBufferSize, co.MaxConcurrentDials = 1<<16, 1<<15, 3
			co.PipelineReadBufferSize, co.PipelineWriteBufferSize, co.PipelinePoolSize = 1<<14, 1<<13, 5
			co.IdentitySuffix, co.AutoPipelineOptions = "-x", ap
		}, func(c Config) bool {
			o := node(c)
			return o.Dialer != nil && o.OnConnect != nil && o.Protocol == 2 && o.CredentialsProviderContext != nil &&
				o.PoolFIFO && o.PoolTimeout == time.Second && o.MinIdleConns == 2 && o.MaxIdleConns == 4 && o.MaxActiveConns == 8 &&
				o.ConnMaxIdleTime == time.Minute && o.ConnMaxLifetime == time.Hour && o.ConnMaxLifetimeJitter == time.Second &&
				o.ReadBufferSize == 1<<16 && o.WriteBufferSize == 1<<15 && o.MaxConcurrentDials == 3 &&
				o.PipelineReadBufferSize == 1<<14 && o.PipelineWriteBufferSize == 1<<13 && o.PipelinePoolSize == 5 &&
				!o.DisableIdentity && o.IdentitySuffix == "-x" && o.AutoPipelineOptions == ap
		}, nil},
		{"a password provider", func(co *redis.ClusterOptions) {
			co.CredentialsProvider = func() (string, string) { return "u", "p" }
		}, func(c Config) bool { return node(c).CredentialsProvider != nil }, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			co := &redis.ClusterOptions{Addrs: slices.Clone(seeds), Password: "secret-pw"}
			tt.set(co)
			c, err := FromClusterOptions(co)
			if tt.refused != nil {
				var ce *ClusterOptionsError
				if !errors.As(err, &ce) {
					t.Fatalf("FromClusterOptions = %v; want a *ClusterOptionsError refusing %v", err, tt.refused)
				}
				optconv.CheckRefused(t, ce.Refused, err.Error(), tt.refused, "redis.ClusterOptions", "secret-pw")
				return
			}
			if err != nil {
				t.Fatalf("FromClusterOptions: %v", err)
			}
			if !tt.check(c) {
				t.Fatalf("FromClusterOptions = %+v", c)
			}
		})
	}
	if _, err := FromClusterOptions(nil); err == nil {
		t.Fatal("FromClusterOptions(nil): no error")
	}
}

// A go-redis user's cluster options, converted, make a client that works
// on a real cluster, its OnConnect and Dialer on every node it dials.
func TestFromClusterOptionsServes(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	var connects, dials atomic.Int64
	d := &net.Dialer{}
	cfg, err := FromClusterOptions(&redis.ClusterOptions{
		Addrs:        []string{l.Node(0).Addr()},
		MaxRetries:   -1,
		MinIdleConns: 1,
		OnConnect:    func(context.Context, *redis.Conn) error { connects.Add(1); return nil },
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			dials.Add(1)
			return d.DialContext(ctx, network, addr)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 50 {
		key := string(rune('a'+i%26)) + "-key"
		if err := c.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		if v, err := c.Get(ctx, key).Int(); err != nil || v != i {
			t.Fatalf("GET %s: %d, %v", key, v, err)
		}
	}
	if dials.Load() == 0 || connects.Load() == 0 {
		t.Fatalf("the converted Dialer dialled %d times, OnConnect ran %d times: want both on the node clients", dials.Load(), connects.Load())
	}
}

// The table of docs/go-redis.md names every field of redis.ClusterOptions.
func TestDocMapsEveryClusterField(t *testing.T) {
	optconv.CheckDocTable[redis.ClusterOptions](t, "../docs/go-redis.md", "## From redis.ClusterOptions")
}
