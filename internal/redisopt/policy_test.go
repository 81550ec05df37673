package redisopt_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/sentinel"
)

// policy is the part of a client's options the policy decides, as a live
// client reports it (go-redis normalizes MaxRetries -1 to 0).
type policy struct {
	MaxRetries, DialerRetries              int
	ContextTimeoutEnabled, DisableIdentity bool
	Maint                                  maintnotifications.Mode
}

func policyOf(o *redis.Options) policy {
	p := policy{MaxRetries: o.MaxRetries, DialerRetries: o.DialerRetries,
		ContextTimeoutEnabled: o.ContextTimeoutEnabled, DisableIdentity: o.DisableIdentity}
	if o.MaintNotificationsConfig != nil {
		p.Maint = o.MaintNotificationsConfig.Mode
	}
	return p
}

// live is o as a client built from it reports it.
func live(t *testing.T, o *redis.Options) *redis.Options {
	t.Helper()
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c.Options()
}

// Every way rediskit builds go-redis options gives the same policy: the
// options a caller gets from guard.ClientConfig, guard.ClientConfigFromURL and
// redisurl.Config.Options, and the options rediskit's own routed clients
// (Sentinel, multidb) report. Each passes Check, guard.New and
// multidb.NewClient.
func TestPolicyIsTheSameEverywhere(t *testing.T) {
	want := policyOf(live(t, redisopt.Inner(&redis.Options{Addr: "127.0.0.1:1"})))
	if want != (policy{MaxRetries: 0, DialerRetries: 1, ContextTimeoutEnabled: true, DisableIdentity: true, Maint: maintnotifications.ModeDisabled}) {
		t.Fatalf("Inner's policy, as a live client reports it: %+v", want)
	}

	fromURL := func(raw string) *redis.Options {
		t.Helper()
		c, err := redisurl.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		o, err := c.Options()
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	fromSettings := func(s guard.ClientConfig) *redis.Options {
		t.Helper()
		o, err := s.Options()
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	settingsFromURL := func(raw string) guard.ClientConfig {
		t.Helper()
		s, err := guard.ClientConfigFromURL(raw)
		if err != nil {
			t.Fatal(err)
		}
		s.KeyPrefix = "test"
		return s
	}

	// The routed clients run (discovery, health checks): against a real
	// deployment, so that no dial fails and leaves go-redis's redialer
	// behind.
	l := lab.New(t, lab.Config{Sentinels: 1})
	sc, err := sentinel.NewClient(sentinel.Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sc.Close() })
	mc, err := multidb.NewClient(multidb.Config{Databases: []multidb.Database{{Name: "a", Options: &redis.Options{Addr: l.Node(0).Addr()}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mc.Close() })

	for _, tc := range []struct {
		name string
		opt  *redis.Options // as the client reports it
	}{
		{"redisurl redis://", live(t, fromURL("redis://127.0.0.1:1"))},
		{"redisurl rediss:// with timeouts", live(t, fromURL("rediss://u:pw@127.0.0.1:1/2?readTimeout=250ms&clientName=x"))},
		{"redisurl unix://", live(t, fromURL("unix:///run/redis.sock"))},
		{"guard.ClientConfig", live(t, fromSettings(guard.ClientConfig{Addr: "127.0.0.1:1", KeyPrefix: "test"}))},
		{"guard.ClientConfigFromURL", live(t, fromSettings(settingsFromURL("redis://127.0.0.1:1?dialTimeout=1s")))},
		{"sentinel.Client", sc.Options()},
		{"multidb.Client", mc.Options()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := policyOf(tc.opt); got != want {
				t.Errorf("policy %+v, want %+v (redisopt.Inner's)", got, want)
			}
			if vs := redisopt.Check(tc.opt); len(vs) > 0 {
				t.Errorf("Check: %s", vs)
			}
		})
	}
}

// guard.New(redis.NewClient(opt)) with opt from redisurl.Config.Options:
// the line a service writes. multidb accepts the same client.
func TestAClientFromAURLIsAccepted(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	cfg, err := redisurl.Parse(l.URL() + "?readTimeout=200ms")
	if err != nil {
		t.Fatal(err)
	}
	opt, err := cfg.Options()
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opt)
	defer client.Close()
	g, err := guard.New(client, guard.Config{KeyPrefix: "shop"})
	if err != nil {
		t.Fatalf("guard.New(redis.NewClient(cfg.Options())): %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := g.Call(ctx, "ping", func(ctx context.Context, c redis.Cmdable) error { return c.Ping(ctx).Err() }); err != nil {
		t.Errorf("a guarded PING through that client: %v", err)
	}
	mc, err := multidb.NewClient(multidb.Config{Databases: []multidb.Database{{Name: "a", Client: client}}})
	if err != nil {
		t.Errorf("multidb.NewClient with that client: %v", err)
	} else {
		_ = mc.Close()
	}
}

// Check, guard.New and multidb.NewClient refuse the same clients, for the
// same reasons: the policy has one definition.
func TestCheckIsWhatGuardAndMultidbRefuse(t *testing.T) {
	addr := lab.New(t, lab.Standalone()).Node(0).Addr() // multidb checks the clients it accepts
	for _, tc := range []struct {
		name   string
		opt    redis.Options
		fields []string // Check's violations, in order
	}{
		{"go-redis defaults", redis.Options{}, []string{"MaxRetries", "DialerRetries", "ContextTimeoutEnabled"}},
		{"retries commands", redis.Options{MaxRetries: 2, DialerRetries: 1, ContextTimeoutEnabled: true}, []string{"MaxRetries"}},
		{"retries dials by default", redis.Options{MaxRetries: -1, ContextTimeoutEnabled: true}, []string{"DialerRetries"}},
		{"retries dials", redis.Options{MaxRetries: -1, DialerRetries: 2, ContextTimeoutEnabled: true}, []string{"DialerRetries"}},
		{"ignores deadlines", redis.Options{MaxRetries: -1, DialerRetries: 1}, []string{"ContextTimeoutEnabled"}},
		{"the policy", redis.Options{MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true}, nil},
		{"the policy, extras left as the caller set them", redis.Options{MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true, PoolSize: 3}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.Addr = addr
			client := redis.NewClient(&tc.opt)
			defer client.Close()
			vs := redisopt.Check(client.Options())
			var fields []string
			for _, v := range vs {
				fields = append(fields, v.Field)
				if !strings.Contains(v.Problem, v.Field) {
					t.Errorf("problem %q does not name %s", v.Problem, v.Field)
				}
			}
			if strings.Join(fields, ",") != strings.Join(tc.fields, ",") {
				t.Fatalf("Check = %v, want %v", fields, tc.fields)
			}

			_, gerr := guard.New(client, guard.Config{KeyPrefix: "shop"})
			mc, merr := multidb.NewClient(multidb.Config{Databases: []multidb.Database{{Name: "a", Client: client}}})
			if merr == nil {
				_ = mc.Close()
			}
			for _, r := range []struct {
				who string
				err error
			}{{"guard.New", gerr}, {"multidb.NewClient", merr}} {
				if (r.err != nil) != (len(vs) > 0) {
					t.Errorf("%s: %v, want refused exactly when Check reports something (%v)", r.who, r.err, fields)
					continue
				}
				for _, v := range vs {
					if !strings.Contains(r.err.Error(), v.Problem) {
						t.Errorf("%s: %v does not say %q", r.who, r.err, v.Problem)
					}
				}
			}
		})
	}
}
