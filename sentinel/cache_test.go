package sentinel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/failure"
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

// TestCacheFailOpen: with MaxStale, a cached read whose server cannot be
// reached (killed: refused; black-holed: no answer before the caller's
// deadline) is answered from its entry with a *StaleError carrying the
// failure, while the entry was known current at most MaxStale ago, and
// only when the read asked for the cache; a missing key's entry answers
// redis.Nil, stale. Without MaxStale the same read fails.
func TestCacheFailOpen(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Config{Proxy: true})
	n := l.Node(0)
	const maxStale = 2 * time.Second
	open := func(maxStale time.Duration) *Client {
		c, err := NewClient(Config{Primary: n.Addr(), DialTimeout: 500 * time.Millisecond, Cache: &clientcache.Config{MaxStale: maxStale}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	c, strict := open(maxStale), open(0)
	cached := clientcache.WithTTL(ctx, time.Minute)
	if err := c.Set(ctx, "k", "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// fill caches k and the missing key m on both clients (served from
	// the cache: the server sees no GET).
	fill := func() {
		t.Helper()
		for _, cc := range []*Client{c, strict} {
			testkit.WaitFor(t, 10*time.Second, "cached reads", func() bool {
				before := calls(t, n, "get")
				_ = cc.Get(cached, "k").Err()
				_ = cc.Get(cached, "m").Err()
				return calls(t, n, "get") == before
			})
		}
	}
	// within is a read's context with a deadline: a read that fails
	// waits for the topology to be resolved again, up to the caller's
	// deadline.
	within := func(ctx context.Context) context.Context {
		rctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		t.Cleanup(cancel)
		return rctx
	}
	// serveStale reads k and m through the cache until neither is served
	// stale, and returns how many answers were. Each stale answer is
	// checked, and so is the first failure: the entry was known current
	// at (a stale answer's start) - Age or later, so a read that fails
	// must end more than MaxStale after that, and no stale answer may
	// start more than MaxStale (plus the reads' own durations: slack)
	// after the earliest such time, or the entries were confirmed again
	// during the fault. Each read returns by its deadline (plus slack).
	// Checked at each answer, not by the loop's own clock, which a read
	// slowed by a busy machine would move past the bound with no stale
	// answer served past it (CI, Valkey pass, once).
	const deadline, slack = 300 * time.Millisecond, time.Second
	serveStale := func(why string, cause func(error) bool) int {
		t.Helper()
		served := 0
		var knownLo time.Time // the earliest the entries can have been known current
		giveUp := time.Now().Add(maxStale + 10*time.Second)
		for {
			if time.Now().After(giveUp) {
				t.Fatalf("%s: %d reads served stale, and no read failed within %v", why, served, maxStale+10*time.Second)
			}
			key, want := "k", "v1"
			if served%2 == 1 {
				key, want = "m", ""
			}
			rctx, cancel := context.WithTimeout(cached, deadline)
			start := time.Now()
			v, err := c.Get(rctx, key).Result()
			end := time.Now()
			cancel()
			if took := end.Sub(start); took > deadline+slack {
				t.Fatalf("%s: GET %s took %v, past its %v deadline (%v, %v)", why, key, took, deadline, v, err)
			}
			var se *clientcache.StaleError
			if err == nil && served == 0 && v == want && ctx.Err() == nil {
				continue // a hit: the node's tracking is not yet known silent
			}
			if !errors.As(err, &se) {
				if err == nil || served == 0 || end.Sub(knownLo) <= maxStale {
					t.Fatalf("%s: GET %s = %q, %v after %d stale answers, %v after the entry was last known current; want stale answers for %v, then the failure",
						why, key, v, err, served, end.Sub(knownLo), maxStale)
				}
				return served
			}
			if v != want || se.Addr != n.Addr() || se.Age > maxStale || se.Nil != (key == "m") || errors.Is(err, redis.Nil) != (key == "m") || !cause(err) {
				t.Fatalf("%s: GET %s = %q, %v (%+v); want %q from %s at most %v old, the cause inside", why, key, v, err, se, want, n.Addr(), maxStale)
			}
			if lo := start.Add(-se.Age); knownLo.IsZero() || lo.Before(knownLo) {
				knownLo = lo
			}
			if since := start.Sub(knownLo); since > maxStale+slack {
				t.Fatalf("%s: GET %s served stale (age %v) %v after the entries were first known current: confirmed again during the fault?",
					why, key, se.Age, since)
			}
			served++
			time.Sleep(20 * time.Millisecond)
		}
	}
	nodeError := func(err error) bool { var ne *NodeError; return errors.As(err, &ne) }

	fill()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not asked for the cache, no entry, or no MaxStale: the failure.
	for name, err := range map[string]error{
		"without WithTTL": c.Get(within(ctx), "k").Err(),
		"never cached":    c.Get(within(cached), "other").Err(),
		"MaxStale 0":      strict.Get(within(cached), "k").Err(),
	} {
		var se *clientcache.StaleError
		if errors.As(err, &se) || !nodeError(err) {
			t.Fatalf("killed, %s: %v; want the *NodeError, not stale", name, err)
		}
	}
	served := serveStale("killed", nodeError)
	st := c.Stats().Cache
	if st.StaleServed != uint64(served) || st.FlushesByCause.Lost == 0 {
		t.Fatalf("Stats().Cache %+v: want %d stale reads, a tracking loss", st, served)
	}

	// Back, then black-holed: the caller's deadline ends each read, and
	// the entries' age counts from the last heartbeat answered.
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "k written again (the restarted server is empty)", func() bool {
		return c.Set(ctx, "k", "v1", 0).Err() == nil
	})
	fill()
	n.BlackHole()
	defer n.Restore()
	serveStale("black-holed", func(err error) bool { return nodeError(err) && failure.Timeout(err) })
}

// TestCacheReadYourWrites: a cached read that follows the client's own
// write of its key, in the same goroutine, reads the write, at once:
// single commands, auto-pipelined, MSET's every key, a pipeline and a
// transaction. The server's invalidation, on another connection, may not
// have arrived yet; the client ends its own entries itself.
func TestCacheReadYourWrites(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Standalone())
	n := l.Node(0)
	for _, auto := range []bool{false, true} {
		c, err := NewClient(Config{Primary: n.Addr(), AutoPipeline: auto, Cache: &clientcache.Config{}})
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		cached := clientcache.WithTTL(ctx, time.Minute)
		testkit.WaitFor(t, 10*time.Second, "the tracking", func() bool {
			_ = c.Get(cached, "a").Err()
			return c.Stats().Cache.Hits > 0
		})
		writes := []struct {
			name  string
			write func(v string) error
		}{
			{"SET", func(v string) error { return c.Set(ctx, "a", v, 0).Err() }},
			{"MSET", func(v string) error { return c.MSet(ctx, "b", "x", "a", v).Err() }},
			{"pipeline", func(v string) error {
				_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, "a", v, 0); return nil })
				return err
			}},
			{"transaction", func(v string) error {
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, "a", v, 0); return nil })
				return err
			}},
		}
		for i := range 400 {
			w := writes[i%len(writes)]
			want := fmt.Sprint(w.name, i)
			if err := w.write(want); err != nil {
				t.Fatal(err)
			}
			if got, err := c.Get(cached, "a").Result(); err != nil || got != want {
				t.Fatalf("auto-pipelined %v: GET a after the client's own %s of %q: %q, %v", auto, w.name, want, got, err)
			}
			_ = c.Get(cached, "a").Err() // cached again (unless the server's invalidation came in between)
		}
		if st := c.Stats().Cache; st.Hits == 0 || st.Fills == 0 {
			t.Fatalf("auto-pipelined %v: Stats().Cache %+v: the reads were not cached", auto, st)
		}
	}
}
