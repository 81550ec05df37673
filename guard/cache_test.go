package guard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// prices is a counted stand-in for a database read.
type prices struct {
	calls    atomic.Int64
	mu       sync.Mutex
	calledAt []time.Time
	hold     chan struct{} // when set, loads wait until it is closed
}

func (p *prices) load(ctx context.Context, sku string) (string, error) {
	p.calls.Add(1)
	p.mu.Lock()
	p.calledAt = append(p.calledAt, time.Now())
	hold := p.hold
	p.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return "price-of-" + sku, nil
}

func (p *prices) lastCall() time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calledAt[len(p.calledAt)-1]
}

func newCache(t *testing.T, g *guard.Guard, p *prices, mod func(*guard.CacheConfig[string])) *guard.Cache[string] {
	t.Helper()
	cfg := guard.CacheConfig[string]{Name: "price", Load: p.load}
	if mod != nil {
		mod(&cfg)
	}
	c, err := guard.NewCache(g, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCacheTwoRequestsOneLoad(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	p := &prices{}
	c := newCache(t, g, p, nil)

	r1, err := c.Lookup(ctx, "sku-1")
	if err != nil || r1.Value != "price-of-sku-1" || r1.Source != guard.SourceLoader {
		t.Fatalf("first lookup: %+v, %v", r1, err)
	}
	r2, err := c.Lookup(ctx, "sku-1")
	if err != nil || r2.Value != "price-of-sku-1" || r2.Source != guard.SourceCache {
		t.Fatalf("second lookup: %+v, %v", r2, err)
	}
	if n := p.calls.Load(); n != 1 {
		t.Fatalf("two consecutive lookups made %d loader calls, want 1", n)
	}
	// The value sits under the prefixed key, with a jittered TTL in
	// [TTL, TTL + TTL/10).
	ttl, err := l.Node(0).Do(ctx, "PTTL", "test:price:sku-1").Int64()
	if err != nil {
		t.Fatal(err)
	}
	if ttl < 59_000 || ttl >= 66_000 {
		t.Errorf("PTTL of the cached value = %d ms, want within [60000, 66000)", ttl)
	}
	want := guard.CacheStats{Hits: 1, Misses: 1, Loaded: 1, Loads: 1}
	if s := c.Stats(); s != want {
		t.Errorf("stats %+v, want %+v", s, want)
	}
}

func TestCacheTTLJitterSpreadsExpiries(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	c := newCache(t, g, &prices{}, func(c *guard.CacheConfig[string]) {
		c.TTL, c.TTLJitter = 100*time.Second, 50*time.Second
	})
	seen := map[int64]bool{}
	for i := range 20 {
		sku := fmt.Sprint("sku-", i)
		if _, err := c.Get(ctx, sku); err != nil {
			t.Fatal(err)
		}
		ttl, err := l.Node(0).Do(ctx, "PTTL", c.Key(sku)).Int64()
		if err != nil {
			t.Fatal(err)
		}
		if ttl < 99_000 || ttl >= 150_000 {
			t.Fatalf("PTTL %d ms, want within [100000, 150000)", ttl)
		}
		seen[ttl/1000] = true
	}
	// 20 draws from 50 one-second buckets: all in one or two buckets would
	// mean no jitter (the odds of that by chance are below 1e-25).
	if len(seen) < 3 {
		t.Fatalf("20 TTLs fell in %d distinct seconds: no jitter", len(seen))
	}
}

// A paused Redis (SIGSTOP): the next lookup goes to the loader within the
// call limit (+50 ms), serves the value, and does not write it back.
func TestCachePausedRedisFallsBackWithinTheLimit(t *testing.T) {
	for _, tc := range []struct {
		name        string
		readTimeout time.Duration
	}{
		// The default settings: the socket timeout (100 ms) ends the read.
		{"default timeouts", 0},
		// A socket timeout longer than the limit: the limit ends the read.
		{"limit shorter than the socket timeout", 2 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t, 30*time.Second)
			l := lab.New(t, lab.Standalone())
			n := l.Node(0)
			resumeOnCleanup(t, n)
			s := settings(n)
			s.ReadTimeout = tc.readTimeout
			g := open(t, s)
			p := &prices{}
			c := newCache(t, g, p, nil)
			if _, err := c.Get(ctx, "sku-1"); err != nil { // cached now
				t.Fatal(err)
			}

			if err := n.Pause(); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			r, err := c.Lookup(ctx, "sku-1")
			took := time.Since(start)
			if err != nil || r.Value != "price-of-sku-1" || !r.RedisFailed || r.Source != guard.SourceLoader {
				t.Fatalf("lookup with Redis paused: %+v, %v", r, err)
			}
			if n := p.calls.Load(); n != 2 {
				t.Fatalf("loader calls = %d, want 2 (the first miss and the fallback)", n)
			}
			bound := g.CallLimit() + 50*time.Millisecond
			toLoader := p.lastCall().Sub(start)
			t.Logf("Redis paused: loader called after %v, lookup done after %v (bound %v)", toLoader, took, bound)
			if toLoader > bound {
				t.Errorf("the loader was called %v after the lookup started, want at most %v", toLoader, bound)
			}
			// The loader returns at once, and nothing is written back: the
			// whole lookup fits the same bound.
			if took > bound {
				t.Errorf("the lookup took %v, want at most %v", took, bound)
			}
			st := c.Stats()
			if st.RedisFailures != 1 || st.Fallbacks != 1 {
				t.Errorf("stats %+v, want 1 Redis failure and 1 fallback", st)
			}

			// After Resume, the cache answers again.
			if err := n.Resume(); err != nil {
				t.Fatal(err)
			}
			r, err = c.Lookup(ctx, "sku-1")
			if err != nil || r.Source != guard.SourceCache {
				t.Fatalf("lookup after resume: %+v, %v", r, err)
			}
		})
	}
}

// When Redis failed, the loaded value is not written back.
func TestCacheNoWriteBackWhenRedisFailed(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Proxy: true})
	n := l.Node(0)
	g := open(t, relaxed(n))
	c := newCache(t, g, &prices{}, nil)
	n.Proxy().Suspend() // refused connections; the server keeps running
	r, err := c.Lookup(ctx, "sku-9")
	if err != nil || !r.RedisFailed {
		t.Fatalf("lookup with Redis down: %+v, %v", r, err)
	}
	if err := n.Proxy().Resume(); err != nil {
		t.Fatal(err)
	}
	if exists, err := n.Do(ctx, "EXISTS", c.Key("sku-9")).Int(); err != nil || exists != 0 {
		t.Fatalf("EXISTS %s = %d, %v: a value was written while Redis was failing", c.Key("sku-9"), exists, err)
	}
}

// Every load slot taken: an extra lookup is refused at once, and the
// loader is not called for it.
func TestCacheFullLoaderRefusesAtOnce(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	p := &prices{hold: make(chan struct{})}
	const slots = 2
	c := newCache(t, g, p, func(c *guard.CacheConfig[string]) {
		c.LoadSlots = slots
		c.LoadTimeout = 10 * time.Second
	})

	var wg sync.WaitGroup
	for i := range slots {
		wg.Go(func() {
			if _, err := c.Get(ctx, fmt.Sprint("held-", i)); err != nil {
				t.Errorf("held lookup: %v", err)
			}
		})
	}
	waitFor(t, ctx, func() bool { return p.calls.Load() == slots })

	start := time.Now()
	_, err := c.Get(ctx, "extra")
	took := time.Since(start)
	var ue *guard.UnavailableError
	if !errors.As(err, &ue) || ue.Reason != guard.ReasonBusy || !errors.Is(err, guard.ErrUnavailable) {
		t.Fatalf("lookup with every slot taken: %v, want UnavailableError busy", err)
	}
	// At once: the Redis miss is one round trip, then no wait for a slot.
	if took > 50*time.Millisecond {
		t.Errorf("refused after %v, want at once", took)
	}
	if n := p.calls.Load(); n != slots {
		t.Errorf("loader calls = %d, want %d: the refused lookup called the loader", n, slots)
	}
	if s := c.Stats(); s.Refusals != 1 {
		t.Errorf("refusals = %d, want 1", s.Refusals)
	}
	close(p.hold)
	wg.Wait()
}

// With a SlotWait, a lookup waits that long for a slot, then is refused.
func TestCacheSlotWaitIsBounded(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	p := &prices{hold: make(chan struct{})}
	const wait = 100 * time.Millisecond
	c := newCache(t, g, p, func(c *guard.CacheConfig[string]) {
		c.LoadSlots, c.SlotWait, c.LoadTimeout = 1, wait, 10*time.Second
	})
	done := make(chan error, 1)
	go func() { _, err := c.Get(ctx, "held"); done <- err }()
	waitFor(t, ctx, func() bool { return p.calls.Load() == 1 })

	start := time.Now()
	_, err := c.Get(ctx, "extra")
	took := time.Since(start)
	if !errors.Is(err, guard.ErrUnavailable) {
		t.Fatalf("lookup: %v, want ErrUnavailable", err)
	}
	if took < wait || took > wait+200*time.Millisecond {
		t.Errorf("refused after %v, want after the %v SlotWait", took, wait)
	}

	// A slot that frees within SlotWait is taken.
	go func() { time.Sleep(20 * time.Millisecond); close(p.hold) }()
	if v, err := c.Get(ctx, "extra"); err != nil || v != "price-of-extra" {
		t.Fatalf("lookup while the slot frees: %q, %v", v, err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func TestCacheLoadTimeoutIsUnavailable(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	p := &prices{hold: make(chan struct{})} // never released
	c := newCache(t, g, p, func(c *guard.CacheConfig[string]) { c.LoadTimeout = 50 * time.Millisecond })
	_, err := c.Get(ctx, "slow")
	var ue *guard.UnavailableError
	if !errors.As(err, &ue) || ue.Reason != guard.ReasonLoadTimeout {
		t.Fatalf("slow load: %v, want UnavailableError load timed out", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a load timeout matches context.DeadlineExceeded: %v", err)
	}
}

func TestCacheLoaderErrorIsReturned(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	errNotFound := errors.New("no such product")
	c, err := guard.NewCache(g, guard.CacheConfig[int]{Name: "stock",
		Load: func(context.Context, string) (int, error) { return 0, errNotFound }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Get(ctx, "x"); !errors.Is(err, errNotFound) || errors.Is(err, guard.ErrUnavailable) {
		t.Fatalf("loader error: %v, want it wrapped, not ErrUnavailable", err)
	}
}

// The leader's caller leaves: the others do not inherit its cancellation.
func TestCacheLeaderCancellationDoesNotFailOthers(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	p := &prices{hold: make(chan struct{})}
	c := newCache(t, g, p, nil)

	leaderCtx, cancelLeader := context.WithCancel(ctx)
	leaderErr := make(chan error, 1)
	go func() { _, err := c.Get(leaderCtx, "sku-1"); leaderErr <- err }()
	waitFor(t, ctx, func() bool { return p.calls.Load() == 1 })

	follower := make(chan error, 1)
	go func() {
		v, err := c.Get(ctx, "sku-1")
		if err == nil && v != "price-of-sku-1" {
			err = fmt.Errorf("value %q", v)
		}
		follower <- err
	}()
	waitFor(t, ctx, func() bool { return c.Stats().Misses == 2 })
	cancelLeader()
	if err := <-leaderErr; !errors.Is(err, context.Canceled) {
		t.Fatalf("leader: %v, want context.Canceled", err)
	}
	// The follower loads for itself.
	waitFor(t, ctx, func() bool { return p.calls.Load() == 2 })
	close(p.hold)
	if err := <-follower; err != nil {
		t.Fatalf("follower: %v", err)
	}
}

func TestCacheUndecodableValueIsReloaded(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	c, err := guard.NewCache(g, guard.CacheConfig[int]{Name: "stock",
		Load: func(context.Context, string) (int, error) { return 42, nil }})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Node(0).Do(ctx, "SET", c.Key("x"), "not json").Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "x"); err != nil || v != 42 {
		t.Fatalf("Get = %d, %v", v, err)
	}
	if raw, _ := l.Node(0).Do(ctx, "GET", c.Key("x")).Text(); raw != "42" {
		t.Fatalf("stored %q after reload, want 42", raw)
	}
}

func TestCacheConfigErrors(t *testing.T) {
	g, err := guard.Open(guard.ClientConfig{Addr: "127.0.0.1:1", KeyPrefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	load := func(context.Context, string) (string, error) { return "", nil }
	for _, tc := range []struct {
		cfg   guard.CacheConfig[string]
		field string
	}{
		{guard.CacheConfig[string]{Load: load}, "Name"},
		{guard.CacheConfig[string]{Name: "x"}, "Load"},
		{guard.CacheConfig[string]{Name: "x", Load: load, TTL: -1}, "TTL"},
		{guard.CacheConfig[string]{Name: "x", Load: load, LoadSlots: -1}, "LoadSlots"},
		{guard.CacheConfig[string]{Name: "x", Load: load, SlotWait: -1}, "SlotWait"},
		{guard.CacheConfig[string]{Name: "x", Load: load, LoadTimeout: -1}, "LoadTimeout"},
	} {
		var ce *guard.ConfigError
		if _, err := guard.NewCache(g, tc.cfg); !errors.As(err, &ce) || ce.Struct != "CacheConfig" || ce.Field != tc.field ||
			!strings.HasPrefix(err.Error(), "guard: CacheConfig."+tc.field+" ") {
			t.Errorf("NewCache(%+v) = %v, want a ConfigError on CacheConfig.%s", tc.cfg, err, tc.field)
		}
	}
}

// Every way a lookup can end, once each: CacheStats counts each lookup
// once by its read (hit, miss, read failure, cancelled) and each lookup
// that did not hit once by how it was served (loaded, shared, refused,
// loader failed, cancelled).
func TestCacheStatsPartitionLookups(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Proxy: true})
	n := l.Node(0)
	g := open(t, relaxed(n))
	errNotFound := errors.New("no such product")
	hold := make(chan struct{})
	started := make(chan string, 8)
	c, err := guard.NewCache(g, guard.CacheConfig[string]{Name: "price", LoadTimeout: 200 * time.Millisecond,
		Load: func(ctx context.Context, id string) (string, error) {
			switch id {
			case "fail":
				return "", errNotFound
			case "slow", "cancel": // until the load's or the caller's context ends
				started <- id
				<-ctx.Done()
				return "", ctx.Err()
			case "shared":
				started <- id
				select {
				case <-hold:
				case <-ctx.Done():
					return "", ctx.Err()
				}
			}
			return "price-of-" + id, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	lookup := func(ctx context.Context, id string) error { _, err := c.Lookup(ctx, id); return err }

	// Miss, loaded; then a hit.
	if err := lookup(ctx, "sku-1"); err != nil {
		t.Fatal(err)
	}
	if err := lookup(ctx, "sku-1"); err != nil {
		t.Fatal(err)
	}
	// Two lookups of one missing key: one loads, the other shares it.
	leader := make(chan error, 1)
	go func() { leader <- lookup(ctx, "shared") }()
	<-started
	follower := make(chan error, 1)
	go func() { follower <- lookup(ctx, "shared") }()
	waitFor(t, ctx, func() bool { return guard.Waiting(c, "shared") == 1 })
	close(hold)
	if err := errors.Join(<-leader, <-follower); err != nil {
		t.Fatal(err)
	}
	// The loader fails; the load times out (refused).
	if err := lookup(ctx, "fail"); !errors.Is(err, errNotFound) {
		t.Fatalf("failing loader: %v", err)
	}
	if err := lookup(ctx, "slow"); !errors.Is(err, guard.ErrUnavailable) {
		t.Fatalf("load past LoadTimeout: %v", err)
	}
	<-started
	// The caller leaves during the load, and before the read.
	cctx, cancel := context.WithCancel(ctx)
	go func() { <-started; cancel() }()
	if err := lookup(cctx, "cancel"); !errors.Is(err, context.Canceled) {
		t.Fatalf("caller cancelled during the load: %v", err)
	}
	if err := lookup(cctx, "sku-2"); !errors.Is(err, context.Canceled) {
		t.Fatalf("caller cancelled before the read: %v", err)
	}
	// The read fails: a fallback, loaded.
	n.Proxy().Suspend()
	err = lookup(ctx, "sku-3")
	if rerr := n.Proxy().Resume(); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatalf("lookup with Redis down: %v", err)
	}

	const lookups = 9
	want := guard.CacheStats{
		Hits: 1, Misses: 6, ReadFailures: 1, ReadsCanceled: 1,
		Loaded: 3, Shared: 1, Refusals: 1, LoadFailures: 1, LoadsCanceled: 1,
		RedisFailures: 1, Loads: 6, Fallbacks: 1,
	}
	st := c.Stats()
	if st != want {
		t.Errorf("stats %+v, want %+v", st, want)
	}
	if reads := st.Hits + st.Misses + st.ReadFailures + st.ReadsCanceled; reads != lookups {
		t.Errorf("reads add up to %d, want the %d lookups", reads, lookups)
	}
	if served := st.Loaded + st.Shared + st.Refusals + st.LoadFailures + st.LoadsCanceled; served != st.Misses+st.ReadFailures {
		t.Errorf("lookups served after the read add up to %d, want misses + read failures = %d", served, st.Misses+st.ReadFailures)
	}
}
