package sentinel

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// heapAlloc is the live heap after a collection.
func heapAlloc() int64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}

// writeKeys sets n keys prefix0..prefix(n-1) to value, pipelined, and
// returns how long it took.
func writeKeys(ctx context.Context, t *testing.T, rc *redis.Client, prefix string, n int, value func(i int) string) time.Duration {
	t.Helper()
	start := time.Now()
	for lo := 0; lo < n; lo += 1000 {
		if _, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := lo; i < min(lo+1000, n); i++ {
				p.Set(ctx, fmt.Sprint(prefix, i), value(i), 0)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return time.Since(start)
}

// TestCacheMemoryBound reads a key space ten times larger than the cache's
// bound through it: the cache holds at most MaxBytes by its estimate, the
// heap it takes (measured) stays within a quarter of the bound of it, and
// the entries kept are the most recently read.
func TestCacheMemoryBound(t *testing.T) {
	ctx := testkit.Context(t, 120*time.Second)
	l := lab.New(t, lab.Standalone())
	n := l.Node(0)
	rc := n.NewClient()
	defer rc.Close()
	for _, tt := range []struct {
		name                string
		maxBytes, valueSize int
	}{
		{"1000-byte values", 4 << 20, 1000},
		{"16-byte values", 2 << 20, 16}, // the overhead an entry dominates
	} {
		t.Run(tt.name, func(t *testing.T) {
			// Ten times the entries that fit (by the estimate, with
			// keys of about 10 bytes).
			keys := 10 * tt.maxBytes / (tt.valueSize + 10 + 280)
			prefix := fmt.Sprintf("mem%d:", tt.valueSize)
			value := strings.Repeat("v", tt.valueSize)
			writeKeys(ctx, t, rc, prefix, keys, func(int) string { return value })
			c, err := NewClient(Config{Primary: n.Addr(), PoolSize: 16, Cache: &clientcache.Config{MaxBytes: int64(tt.maxBytes)}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			cached := clientcache.WithTTL(ctx, time.Minute)
			testkit.WaitFor(t, 10*time.Second, "the tracking", func() bool {
				_ = c.Get(cached, prefix+"0").Err()
				return c.Stats().Cache.Hits > 0
			})
			// Open the pool's connections first: the heap measured is
			// the cache's.
			var wg sync.WaitGroup
			for range 16 {
				wg.Go(func() {
					for range 20 {
						_ = c.Get(ctx, prefix+"0").Err()
					}
				})
			}
			wg.Wait()
			base := heapAlloc()
			for g := range 16 {
				wg.Go(func() {
					for i := g; i < keys; i += 16 {
						if v, err := c.Get(cached, fmt.Sprint(prefix, i)).Result(); err != nil || len(v) != tt.valueSize {
							t.Errorf("GET %s%d: %d bytes, %v", prefix, i, len(v), err)
							return
						}
					}
				})
			}
			wg.Wait()
			held := heapAlloc() - base
			st := c.Stats().Cache
			t.Logf("%d keys of %d bytes read through a %d-byte cache: %d entries, %d bytes estimated, %d evictions, heap %+d bytes",
				keys, tt.valueSize, tt.maxBytes, st.Entries, st.Bytes, st.Evictions, held)
			if st.Bytes > int64(tt.maxBytes) || st.Entries*tt.valueSize > tt.maxBytes || st.Evictions < uint64(keys*8/10) {
				t.Fatalf("Stats().Cache %+v: want at most %d bytes, and the rest evicted", st, tt.maxBytes)
			}
			// The estimate counts keys, values and a fixed overhead an
			// entry; the heap holds the same and the Go structures
			// around them: a quarter more at most.
			if limit := int64(tt.maxBytes * 5 / 4); held > limit {
				t.Fatalf("the cache holds %d bytes of heap, more than %d for a %d-byte bound", held, limit, tt.maxBytes)
			}
			// The most recently read are kept: 16 keys read once are
			// served from the cache when read again.
			for i := range 16 {
				_ = c.Get(cached, fmt.Sprint(prefix, i*997)).Err()
			}
			before := c.Stats().Cache.Hits
			for i := range 16 {
				_ = c.Get(cached, fmt.Sprint(prefix, i*997)).Err()
			}
			if got := c.Stats().Cache.Hits - before; got != 16 {
				t.Fatalf("%d of the 16 keys just read were served from the cache again, want all", got)
			}
			if err := rc.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCacheInvalidationStorm: another client writes 100,000 tracked keys
// as fast as it can, 1,000 of them cached. The tracker reads every
// invalidation without holding them (the heap grows by no more than the
// entries dropped could free), catches up within a bound of the storm's
// own duration, and every cached key then reads its new value.
func TestCacheInvalidationStorm(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Standalone())
	n := l.Node(0)
	const storm, cachedKeys = 100_000, 1000
	rc := n.NewClient()
	defer rc.Close()
	writeKeys(ctx, t, rc, "storm:", storm, func(int) string { return "old" })
	c, err := NewClient(Config{Primary: n.Addr(), PoolSize: 16, Cache: &clientcache.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cached := clientcache.WithTTL(ctx, time.Minute)
	// Cache 1,000 keys spread over the storm, and the key written last.
	stride := storm / cachedKeys
	testkit.WaitFor(t, 10*time.Second, "the tracking", func() bool {
		_ = c.Get(cached, "storm:0").Err()
		return c.Stats().Cache.Hits > 0
	})
	for i := 0; i < storm; i += stride {
		if err := c.Get(cached, fmt.Sprint("storm:", i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	last := fmt.Sprint("storm:", storm-1)
	_ = c.Get(cached, last).Err()
	hits := c.Stats().Cache.Hits
	if err := c.Get(cached, last).Err(); err != nil || c.Stats().Cache.Hits != hits+1 {
		t.Fatalf("the last key is not served from the cache: %v", err)
	}

	base := heapAlloc()
	var peak int64
	stop := make(chan struct{})
	var sampler sync.WaitGroup
	sampler.Go(func() {
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, int64(m.HeapAlloc))
		}
	})
	took := writeKeys(ctx, t, rc, "storm:", storm, func(int) string { return "new" })
	acked := time.Now()
	// One connection keeps order: when the last key's entry ends, every
	// invalidation before it has been read.
	var caughtUp time.Duration
	for {
		if v, err := c.Get(cached, last).Result(); err == nil && v == "new" {
			caughtUp = time.Since(acked)
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the storm's invalidations were never all read")
		}
		time.Sleep(time.Millisecond)
	}
	close(stop)
	sampler.Wait()
	st := c.Stats().Cache
	t.Logf("%d writes in %v; the tracker caught up %v after the last; heap peak %+d bytes; Stats().Cache %+v",
		storm, took, caughtUp, peak-base, st)
	if limit := max(took, time.Second); caughtUp > limit {
		t.Errorf("the tracker caught up %v after the storm's last write, more than %v (the storm took %v)", caughtUp, limit, took)
	}
	if limit := int64(16 << 20); peak-base > limit {
		t.Errorf("the heap grew by %d bytes during the storm, more than %d", peak-base, limit)
	}
	for i := 0; i < storm; i += stride {
		if v, err := c.Get(cached, fmt.Sprint("storm:", i)).Result(); err != nil || v != "new" {
			t.Fatalf("storm:%d after the storm: %q, %v; want new", i, v, err)
		}
	}
}
