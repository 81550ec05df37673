package rediskit

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/optconv"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/redisurl"
)

// Every field of redis.Options has a rule: shared with UniversalOptions
// (its universal rule), or one of Options' own in optionsRules. A go-redis
// upgrade that adds a field of its own to Options fails here.
func TestOptionsRulesCoverEveryField(t *testing.T) {
	optconv.CheckRules(t, optionsOwn(), "optionsRules (migrate_options.go)")
	for name := range optionsRules {
		if _, shared := reflectField[redis.UniversalOptions](name); shared {
			t.Errorf("optionsRules has %s, which UniversalOptions shares: its universal rule decides", name)
		}
	}
}

func reflectField[T any](name string) (string, bool) {
	for _, f := range optconv.Fields[T]() {
		if f == name {
			return f, true
		}
	}
	return "", false
}

func TestFromOptions(t *testing.T) {
	parsed := func(t *testing.T, c Config) *redisurl.Config {
		t.Helper()
		u, err := redisurl.Parse(c.URL)
		if err != nil {
			t.Fatalf("Config.URL %q: %v", c.URL, err)
		}
		return u
	}
	tests := []struct {
		name    string
		opt     redis.Options
		check   func(t *testing.T, c Config) bool
		refused []string
	}{
		{"address", redis.Options{Addr: "10.0.0.1:6380", DB: 2},
			func(t *testing.T, c Config) bool {
				u := parsed(t, c)
				return u.Kind == redisurl.Standalone && u.Addr == "10.0.0.1:6380" && u.DB == 2 && c.Kind == KindAuto
			}, nil},
		{"no address: go-redis's default", redis.Options{},
			func(t *testing.T, c Config) bool { return parsed(t, c).Addr == "127.0.0.1:6379" }, nil},
		{"tcp", redis.Options{Network: "tcp", Addr: "h:1"},
			func(t *testing.T, c Config) bool { return parsed(t, c).Addr == "h:1" }, nil},
		{"a Unix socket", redis.Options{Network: "unix", Addr: "/run/redis.sock"},
			func(t *testing.T, c Config) bool {
				u := parsed(t, c)
				return u.Kind == redisurl.Unix && u.SocketPath == "/run/redis.sock"
			}, nil},
		{"another network", redis.Options{Network: "udp", Addr: "h:1"}, nil, []string{"Network"}},
		{"shared fields follow the universal rules", redis.Options{Addr: "h:1", Username: "u", Password: "secret", ClientName: "app",
			ReadTimeout: 2 * time.Second, PoolSize: 7},
			func(t *testing.T, c Config) bool {
				return c.Username == "u" && c.Password == "secret" && c.ClientName == "app" && c.ReadTimeout == 2*time.Second &&
					c.PoolSize == 7 && parsed(t, c).Password == ""
			}, nil},
		{"go-redis's retries", redis.Options{Addr: "h:1", MaxRetries: 3}, nil, []string{"MaxRetries"}},
		{"go-redis's no-retry value", redis.Options{Addr: "h:1", MaxRetries: -1},
			func(*testing.T, Config) bool { return true }, nil},
		{"node address", redis.Options{Addr: "h:1", NodeAddress: "n:1"}, nil, []string{"NodeAddress"}},
		{"dial backoff", redis.Options{Addr: "h:1", DialerRetryBackoff: func(int) time.Duration { return 0 }}, nil, []string{"DialerRetryBackoff"}},
		{"limiter", redis.Options{Addr: "h:1", Limiter: nopLimiter{}}, nil, []string{"Limiter"}},
		{"several refused at once", redis.Options{Addr: "h:1", Limiter: nopLimiter{}, MaxRetries: 2, PoolFIFO: true},
			nil, []string{"Limiter", "MaxRetries", "PoolFIFO"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := FromOptions(&tt.opt)
			if tt.refused != nil {
				var oe *OptionsError
				if !errors.As(err, &oe) {
					t.Fatalf("FromOptions = %v; want an *OptionsError refusing %v", err, tt.refused)
				}
				optconv.CheckRefused(t, oe.Refused, err.Error(), tt.refused, "redis.Options", "secret")
				return
			}
			if err != nil {
				t.Fatalf("FromOptions: %v", err)
			}
			if !tt.check(t, c) {
				t.Fatalf("FromOptions = %+v (URL %s)", c, c.URL)
			}
		})
	}
	if _, err := FromOptions(nil); err == nil {
		t.Fatal("FromOptions(nil): no error")
	}
}

type nopLimiter struct{}

func (nopLimiter) Allow() error         { return nil }
func (nopLimiter) ReportResult(_ error) {}

// A go-redis user's options, converted, make a client that works on a
// real server, with its credentials and database.
func TestFromOptionsServes(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Password: "pw-from-options"})
	cfg, err := FromOptions(&redis.Options{Addr: l.Node(0).Addr(), Password: "pw-from-options", DB: 3, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Kind() != KindStandalone || strings.Contains(c.String(), "pw-from-options") {
		t.Fatalf("%s: kind %v", c, c.Kind())
	}
	roundTrip(ctx, t, c, "from-options")
	v, err := l.Node(0).Do(ctx, "EVAL", "redis.call('SELECT', 3) return redis.call('GET', KEYS[1])", 1, "from-options").Text()
	if err != nil || v != "v-from-options" {
		t.Fatalf("the key in database 3: %q, %v", v, err)
	}
}
