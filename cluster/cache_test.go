package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// getCalls is how many GETs n served.
func getCalls(t *testing.T, ctx context.Context, n *lab.Node) int {
	t.Helper()
	v, err := n.Calls(ctx, "get")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// labShardOf is the lab shard whose nodes include n.
func labShardOf(t *testing.T, l *lab.Lab, n *lab.Node) int {
	t.Helper()
	for _, s := range l.ShardIDs() {
		if slices.Contains(l.ShardNodes(s), n) {
			return s
		}
	}
	t.Fatalf("%s is in no shard", n.Name())
	return -1
}

// TestCache reads through the client-side cache on a lab cluster: a
// repeated read is served without reaching the slot's master, another
// client's write ends it, and after the key's slot migrates and after its
// shard fails over, the client reads what the new owner holds, at once.
// With ReadFrom Replica the replica's entries are invalidated too.
func TestCache(t *testing.T) {
	ctx := testkit.Context(t, 120*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	// A short refresh: a graceful failover raises no error for the client
	// to notice it by, and the test waits for it to.
	// MaxStale: the last step black-holes the key's master.
	const maxStale = 5 * time.Second
	c := newTestClient(t, l, func(o *Config) {
		o.Cache = &clientcache.Config{MaxStale: maxStale}
		o.RefreshInterval = 300 * time.Millisecond
	})
	other := redis.NewClusterClient(l.ClusterOptions())
	defer other.Close()
	cached := clientcache.WithTTL(ctx, time.Minute)
	const key = "cached"
	slot := Slot(key)
	read := func() string {
		t.Helper()
		v, err := c.Get(cached, key).Result()
		if err != nil {
			t.Fatalf("GET %s: %v", key, err)
		}
		return v
	}

	if err := other.Set(ctx, key, "v1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	owner, err := l.SlotOwner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "a cached read", func() bool {
		before := getCalls(t, ctx, owner)
		if v := read(); v != "v1" {
			t.Fatalf("read %q, want v1", v)
		}
		return getCalls(t, ctx, owner) == before
	})
	if err := other.Set(ctx, key, "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the invalidation", func() bool { return read() == "v2" })
	// Read your writes: the client's own write ends its entry at once,
	// single, pipelined (by slot) or in a transaction.
	for i := range 60 {
		want := fmt.Sprint("own-", i)
		var err error
		switch i % 3 {
		case 0:
			err = c.Set(ctx, key, want, 0).Err()
		case 1:
			_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, "other", 1, 0); p.Set(ctx, key, want, 0); return nil })
		case 2:
			_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Set(ctx, key, want, 0); return nil })
		}
		if err != nil {
			t.Fatal(err)
		}
		if v := read(); v != want {
			t.Fatalf("GET %s after the client's own write of %q: %q", key, want, v)
		}
		_ = read()
	}
	if err := other.Set(ctx, key, "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the invalidation", func() bool { return read() == "v2" })

	// The slot migrates to another shard; another client writes there.
	from := labShardOf(t, l, owner)
	to := l.ShardIDs()[0]
	if to == from {
		to = l.ShardIDs()[1]
	}
	if err := l.MigrateSlots(ctx, to, slot); err != nil {
		t.Fatal(err)
	}
	if err := other.Set(ctx, key, "migrated", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := read(); v != "migrated" {
		t.Fatalf("after the migration: %q, want migrated", v)
	}
	testkit.WaitFor(t, 10*time.Second, "a cached read on the new owner", func() bool {
		n, err := l.SlotOwner(ctx, slot)
		if err != nil {
			t.Fatal(err)
		}
		before := getCalls(t, ctx, n)
		_ = read()
		return getCalls(t, ctx, n) == before
	})

	// The shard fails over; once the client routes the slot to the new
	// master, another client writes there: the demoted master's entry
	// (its tracking still alive, its copy catching up as a replica) must
	// not be served.
	nm, err := l.ClusterFailover(ctx, to, lab.FailoverGraceful)
	if err != nil {
		t.Fatal(err)
	}
	took := testkit.WaitFor(t, 10*time.Second, "the client routing to the new master", func() bool {
		sh := c.topo.snap.Load().slots[slot]
		return sh != nil && sh.master.addr == nm.Addr()
	})
	t.Logf("the client routed to the new master %v after the failover", took)
	if err := other.Set(ctx, key, "failed-over", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := read(); v != "failed-over" {
		t.Fatalf("after the failover: %q, want failed-over", v)
	}

	// Reads from the replica, invalidated by the replica when the write
	// replicates.
	rc := newTestClient(t, l, func(o *Config) { o.Cache = &clientcache.Config{}; o.ReadFrom = Replica })
	testkit.WaitFor(t, 10*time.Second, "a replica read of the last write", func() bool {
		v, err := rc.Get(cached, key).Result()
		return err == nil && v == "failed-over"
	})
	if err := other.Set(ctx, key, "replicated", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the replica's invalidation", func() bool {
		v, err := rc.Get(cached, key).Result()
		return err == nil && v == "replicated"
	})

	// Fail-open: the key's master black-holed, a read that cannot reach
	// it before its deadline is answered from the entry, typed stale.
	testkit.WaitFor(t, 10*time.Second, "a cached read of the last write", func() bool {
		before := getCalls(t, ctx, nm)
		v := read()
		return v == "replicated" && getCalls(t, ctx, nm) == before
	})
	nm.BlackHole()
	defer nm.Restore()
	testkit.WaitFor(t, 10*time.Second, "a stale answer", func() bool {
		rctx, cancel := context.WithTimeout(cached, 300*time.Millisecond)
		defer cancel()
		v, err := c.Get(rctx, key).Result()
		var se *clientcache.StaleError
		var ne *NodeError
		switch {
		case err == nil && v == "replicated":
			return false // a hit: the tracking not yet known silent
		case !errors.As(err, &se) || v != "replicated" || se.Addr != nm.Addr() || se.Age > maxStale || !errors.As(err, &ne):
			t.Fatalf("GET %s, its master black-holed: %q, %v; want the last value, stale from %s, the *NodeError inside", key, v, err, nm.Addr())
		}
		return true
	})
	if st := c.Stats().Cache; st.StaleServed != 1 {
		t.Fatalf("Stats().Cache.StaleServed = %d, want 1", st.StaleServed)
	}
}

// TestLostSlots: the nodes whose cached entries stop being served when
// the slot map changes.
func TestLostSlots(t *testing.T) {
	a, b, c, d := &node{addr: "a"}, &node{addr: "b"}, &node{addr: "c"}, &node{addr: "d"}
	snap := func(owners map[int]*shard) *snapshot {
		s := &snapshot{}
		for slot, sh := range owners {
			s.slots[slot] = sh
		}
		return s
	}
	ab := &shard{master: a, replicas: []*node{b}}
	ba := &shard{master: b, replicas: []*node{a}}
	bOnly := &shard{master: b}
	cd := &shard{master: c, replicas: []*node{d}}
	acd := &shard{master: a, replicas: []*node{c, d}}
	for _, tc := range []struct {
		name       string
		prev, next map[int]*shard
		want       []*node
	}{
		{"no change", map[int]*shard{0: ab}, map[int]*shard{0: ab}, nil},
		{"the slot migrates", map[int]*shard{0: ab, 1: cd}, map[int]*shard{0: cd, 1: cd}, []*node{a, b}},
		{"the shard fails over: the old master is demoted, the promoted replica keeps its entries", map[int]*shard{0: ab}, map[int]*shard{0: ba}, []*node{a}},
		{"the replica leaves", map[int]*shard{0: ab}, map[int]*shard{0: {master: a}}, []*node{b}},
		{"the master is gone", map[int]*shard{0: ab}, map[int]*shard{0: bOnly}, []*node{a}},
		{"the slot is unserved", map[int]*shard{0: ab}, map[int]*shard{}, []*node{a, b}},
		{"a replica is added", map[int]*shard{0: {master: a, replicas: []*node{c}}}, map[int]*shard{0: acd}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := lostSlots(snap(tc.prev), snap(tc.next))
			if len(got) != len(tc.want) {
				t.Fatalf("lost %d nodes, want %d", len(got), len(tc.want))
			}
			for _, n := range tc.want {
				if !got[n] {
					t.Fatalf("%s not lost", n.addr)
				}
			}
		})
	}
}
