package multidb

import (
	"testing"
	"time"

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
	if err := c.SetActive(ctx, "db0"); err != nil {
		t.Fatal(err)
	}
	hit(nodes[0], "db0")
	if st := c.Stats().Cache; st.Hits == 0 || st.Invalidations == 0 {
		t.Fatalf("cache stats: %+v", st)
	}
}
