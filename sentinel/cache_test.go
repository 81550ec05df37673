package sentinel

import (
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestCache reads through the client-side cache on a Sentinel lab: a
// repeated read is served without reaching the master, another client's
// write ends it, a failover moves reads to the new master's own entries
// (what the old master served is never served for it), and a read
// without WithTTL is never cached.
func TestCache(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	c, _ := newTestClient(t, l, func(cfg *Config) { cfg.Cache = &clientcache.Config{} })
	cached := clientcache.WithTTL(ctx, time.Minute)
	other := l.Node(0).NewClient()
	defer other.Close()

	master, err := l.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Served from the cache: the master sees the first GET only.
	if err := c.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "a cached read", func() bool {
		before := calls(t, master, "get")
		v, err := c.Get(cached, "k").Result()
		if err != nil || v != "v1" {
			t.Fatalf("GET k: %q %v", v, err)
		}
		return calls(t, master, "get") == before
	})
	for range 10 {
		if v, err := c.Get(cached, "k").Result(); err != nil || v != "v1" {
			t.Fatalf("GET k: %q %v", v, err)
		}
	}
	// A missing key's nil is cached too, and typed as redis.Nil.
	for range 3 {
		if err := c.Get(cached, "missing").Err(); err != redis.Nil { //nolint:errorlint // go-redis's own sentinel value
			t.Fatalf("GET missing: %v, want redis.Nil", err)
		}
	}
	// Without WithTTL a read goes to the server.
	before := calls(t, master, "get")
	if err := c.Get(ctx, "k").Err(); err != nil {
		t.Fatal(err)
	}
	if got := calls(t, master, "get"); got != before+1 {
		t.Fatalf("an uncached GET ran %d times on the master, want 1", got-before)
	}

	// Another client's write ends the entry.
	if err := other.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the invalidation", func() bool {
		v, err := c.Get(cached, "k").Result()
		if err != nil {
			t.Fatal(err)
		}
		return v == "v2"
	})

	// A failover: the new master's entries are its own.
	for _, key := range []string{"a", "b", "c"} {
		if err := c.Set(ctx, key, "old", 0).Err(); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "replication of "+key, func() bool {
			return l.Node(1).Do(ctx, "GET", key).Val() == "old"
		})
		if err := c.Get(cached, key).Err(); err != nil {
			t.Fatal(err)
		}
	}
	res, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the client on the new master", func() bool {
		return c.Stats().Master == res.NewMaster.Addr()
	})
	// Written on the new master by another client: the client must read
	// it, not what the old master served.
	nm := res.NewMaster.NewClient()
	defer nm.Close()
	for _, key := range []string{"a", "b", "c"} {
		if err := nm.Set(ctx, key, "new", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := c.Get(cached, key).Result(); err != nil || v != "new" {
			t.Fatalf("after the failover, GET %s: %q %v, want new", key, v, err)
		}
	}
	st := c.Stats().Cache
	if st.Hits < 10 || st.Misses == 0 || st.Fills == 0 || st.Invalidations == 0 || st.Flushes == 0 {
		t.Fatalf("cache stats: %+v", st)
	}
	t.Logf("cache stats: %+v", st)
}

// TestCacheTrackingRefused: a server that will not track (the ACL forbids
// CLIENT TRACKING) leaves reads uncached, correct, and says so in the log
// at error level.
func TestCacheTrackingRefused(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	admin := l.Node(0).NewClient()
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SETUSER", "notrack", "on", ">pw", "~*", "+@all", "-client|tracking").Err(); err != nil {
		t.Fatal(err)
	}
	var logs testkit.Buffer
	c, err := NewClient(Config{Primary: l.Node(0).Addr(), Username: "notrack", Password: "pw",
		Cache: &clientcache.Config{}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cached := clientcache.WithTTL(ctx, time.Minute)
	if err := admin.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the refusal in the log", func() bool {
		if v, err := c.Get(cached, "k").Result(); err != nil || v != "v1" {
			t.Fatalf("GET k: %q %v", v, err)
		}
		return strings.Contains(logs.String(), "reads are not cached")
	})
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "NOPERM") {
		t.Fatalf("the log does not say why at error level:\n%s", logs.String())
	}
	before := calls(t, l.Node(0), "get")
	for range 5 {
		if err := c.Get(cached, "k").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if got := calls(t, l.Node(0), "get") - before; got != 5 {
		t.Fatalf("%d of 5 GETs reached the server; with tracking refused every one must", got)
	}
	if err := admin.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get(cached, "k").Result(); v != "v2" {
		t.Fatalf("GET k after a write: %q, want v2", v)
	}
}

// TestCacheConfig: a heartbeat timeout that cannot outlast the heartbeat
// is refused with the field named.
func TestCacheConfig(t *testing.T) {
	_, err := NewClient(Config{Primary: "127.0.0.1:1", Cache: &clientcache.Config{Heartbeat: time.Second, HeartbeatTimeout: time.Second}})
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "Cache.HeartbeatTimeout" {
		t.Fatalf("NewClient: %v, want a ConfigError on Cache.HeartbeatTimeout", err)
	}
	c, err := NewClient(Config{Primary: "127.0.0.1:1", Cache: &clientcache.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.opts.Cache; got.MaxBytes != clientcache.DefaultMaxBytes || got.MaxTTL != clientcache.DefaultMaxTTL {
		t.Fatalf("defaults: %+v", got)
	}
	_ = c.Close()
}

// TestCacheOtherPaths: cached reads auto-pipelined from many goroutines
// are served and invalidated as single ones; a pipeline and a
// transaction made with a cached context are not cached (they reach the
// server, and read what it holds).
func TestCacheOtherPaths(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Standalone())
	n := l.Node(0)
	c, err := NewClient(Config{Primary: n.Addr(), AutoPipeline: true, Cache: &clientcache.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	other := n.NewClient()
	defer other.Close()
	cached := clientcache.WithTTL(ctx, time.Minute)
	if err := other.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "a cached read", func() bool {
		before := calls(t, n, "get")
		_ = c.Get(cached, "k").Err()
		return calls(t, n, "get") == before
	})
	// readAll reads k from 32 goroutines at once, auto-pipelined, and
	// returns the values read.
	readAll := func() map[string]int {
		var mu sync.Mutex
		seen := map[string]int{}
		var wg sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for range 20 {
					v, err := c.Get(cached, "k").Result()
					if err != nil {
						t.Error(err)
						return
					}
					mu.Lock()
					seen[v]++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		return seen
	}
	before := calls(t, n, "get")
	if seen := readAll(); seen["v1"] != 32*20 {
		t.Fatalf("auto-pipelined cached reads: %v", seen)
	}
	if got := calls(t, n, "get") - before; got != 0 {
		t.Fatalf("%d of 640 cached auto-pipelined reads reached the server", got)
	}
	if err := other.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the invalidation, auto-pipelined", func() bool {
		seen := readAll()
		return seen["v2"] == 32*20
	})

	// A pipeline and a transaction go to the server whatever the context.
	if err := other.Set(ctx, "k", "v3", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before = calls(t, n, "get")
	var pget, tget *redis.StringCmd
	if _, err := c.Pipelined(cached, func(p redis.Pipeliner) error { pget = p.Get(cached, "k"); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TxPipelined(cached, func(p redis.Pipeliner) error { tget = p.Get(cached, "k"); return nil }); err != nil {
		t.Fatal(err)
	}
	if pget.Val() != "v3" || tget.Val() != "v3" {
		t.Fatalf("pipeline read %q, transaction %q; want v3", pget.Val(), tget.Val())
	}
	if got := calls(t, n, "get") - before; got != 2 {
		t.Fatalf("the pipeline and the transaction ran %d GETs on the server, want 2", got)
	}
}
