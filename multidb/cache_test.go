package multidb

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestCache reads through the client-side cache of two databases: each
// database's entries are its own, so a switch never serves the other's
// value; another client's write on a database ends its entry there; and
// switching back serves the entries of a database whose tracking held.
func TestCache(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	nodes := standalone(t, 2, lab.Standalone())
	c, _ := newClient(t, fast(Config{Cache: &clientcache.Config{}}), nodes, 2, 1)
	cached := clientcache.WithTTL(ctx, time.Minute)
	for i, n := range nodes {
		if err := n.Do(ctx, "SET", "k", "db"+string(rune('0'+i))).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// hit waits until key reads want from the cache: the active database
	// sees no GET.
	hit := func(active *lab.Node, want string) {
		t.Helper()
		testkit.WaitFor(t, 10*time.Second, "a cached "+want, func() bool {
			before, err := active.Calls(ctx, "get")
			if err != nil {
				t.Fatal(err)
			}
			if v, err := c.Get(cached, "k").Result(); err != nil || v != want {
				return false
			}
			after, _ := active.Calls(ctx, "get")
			return after == before
		})
	}
	hit(nodes[0], "db0")
	if err := c.SetActive(ctx, "db1"); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(cached, "k").Result(); err != nil || v != "db1" {
		t.Fatalf("after the switch: %q %v, want db1's value", v, err)
	}
	hit(nodes[1], "db1")
	if err := nodes[1].Do(ctx, "SET", "k", "db1-new").Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the invalidation on db1", func() bool {
		return c.Get(cached, "k").Val() == "db1-new"
	})
	// Read your writes: the client's own write ends its entry at once,
	// and so does one asked in a cached read's context (it is not cached).
	for _, writeCtx := range []context.Context{ctx, cached} {
		for i := range 40 {
			want := fmt.Sprint("own-", i)
			if err := c.Set(writeCtx, "k", want, 0).Err(); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Get(cached, "k").Result(); err != nil || v != want {
				t.Fatalf("GET k after the client's own write of %q (cached context: %v): %q, %v", want, writeCtx == cached, v, err)
			}
			_ = c.Get(cached, "k").Err()
		}
	}
	if err := c.SetActive(ctx, "db0"); err != nil {
		t.Fatal(err)
	}
	hit(nodes[0], "db0")
	// A hit is not an outcome of the database's: it leaves the breaker's
	// window as it was (as successes, hits would dilute the failure rate
	// with calls the database never saw). The window may only grow by the
	// reads that missed, and it may shrink as it slides.
	window := func() (calls int64) {
		for _, d := range c.Stats().Databases {
			if d.Active {
				calls = d.WindowCalls
			}
		}
		return calls
	}
	before, st0 := window(), c.Stats().Cache
	for range 100 {
		if err := c.Get(cached, "k").Err(); err != nil {
			t.Fatal(err)
		}
	}
	after, st1 := window(), c.Stats().Cache
	if hits, misses := st1.Hits-st0.Hits, st1.Misses-st0.Misses; hits < 50 || uint64(max(after-before, 0)) > misses {
		t.Fatalf("100 cached reads (%d hits, %d misses) took the breaker's window from %d calls to %d", hits, misses, before, after)
	}
	if st := c.Stats().Cache; st.Hits == 0 || st.Invalidations == 0 {
		t.Fatalf("cache stats: %+v", st)
	}
}

// TestCacheStaleness runs the staleness checker (testkit.StalenessRun)
// through a multidb client's cache over two databases kept equal by the
// writer (it writes each version to both, and a version counts as
// acknowledged when both have it): no fault; a switch to the other
// database and back (SetActive), whose entries are its own; the active
// database's tracking connection killed. No read may be stale by more
// than HeartbeatTimeout.
func TestCacheStaleness(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	nodes := standalone(t, 2, lab.Standalone())
	c, _ := newClient(t, fast(Config{Cache: &clientcache.Config{}}), nodes, 2, 1)
	direct := make([]*redis.Client, len(nodes))
	for i, n := range nodes {
		direct[i] = n.NewClient()
		defer direct[i].Close()
	}
	write := func(ctx context.Context, key string, v int64) error {
		for _, d := range direct {
			if err := d.Set(ctx, key, v, 0).Err(); err != nil {
				return err
			}
		}
		return nil
	}
	read := func(ctx context.Context, key string) (string, error) {
		return c.Get(clientcache.WithTTL(ctx, time.Minute), key).Result()
	}
	for _, sc := range []struct {
		name  string
		fault func()
	}{
		{"no fault", nil},
		{"switched and back", func() {
			for _, db := range []string{"db1", "db0"} {
				if err := c.SetActive(ctx, db); err != nil {
					t.Error(err)
				}
				time.Sleep(300 * time.Millisecond)
			}
		}},
		{"tracking connection killed", func() {
			if err := nodes[0].Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
				t.Error(err)
			}
		}},
	} {
		rep, err := testkit.StalenessRun{Keys: testkit.StalenessKeys("stale:", 16), Duration: 1500 * time.Millisecond,
			Readers: 4, ReadPause: 50 * time.Microsecond, Write: write, Read: read, Fault: sc.fault}.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		rep.Check(t, sc.name, clientcache.DefaultHeartbeatTimeout)
	}
}
