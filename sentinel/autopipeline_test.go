package sentinel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// autoCmdable is what the auto-pipelining tests drive: the client itself
// with Config.AutoPipeline, or one of its auto-pipeliners.
type autoCmdable interface {
	redis.Cmdable
}

// TestAutoPipelineRoutesEachCommand runs concurrent writes and reads
// through the client with Config.AutoPipeline and through AutoPipeline(),
// reads preferring the replica: each command goes where it would alone
// (writes to the master, reads to the replica), every reply is the
// command's own, and the commands share round trips.
func TestAutoPipelineRoutesEachCommand(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	// Each node 2 ms away, and 32 goroutines (16 on each node) for pools
	// of 4 connections: a far node gets as many batches on the wire as its
	// pool has connections, and the commands beyond that queue behind
	// them, so the commands share round trips because of the concurrency,
	// however busy the machine is. (On bare loopback a round trip takes
	// tens of microseconds, and how many commands meet in a batch depends
	// on the scheduler: under load a replica's reads went out nearly one
	// by one.)
	cfg := lab.Sentinel(1)
	cfg.Nodes = []lab.NodeConfig{{Latency: 2 * time.Millisecond}, {Latency: 2 * time.Millisecond}}
	l := lab.New(t, cfg)
	// The round-robin selector reads the replica from the start (the
	// latency-aware one reads the master until its first probe round).
	auto, _ := newTestClient(t, l, func(o *Config) {
		o.ReadFrom, o.ReplicaSelector, o.AutoPipeline, o.PoolSize = ReplicaPreferred, NewRoundRobinSelector(), true, 4
	})
	plain, _ := newTestClient(t, l, func(o *Config) {
		o.ReadFrom, o.ReplicaSelector, o.PoolSize = ReplicaPreferred, NewRoundRobinSelector(), 4
	})
	for _, c := range []*Client{auto, plain} {
		testkit.WaitFor(t, 5*time.Second, "a healthy replica", func() bool { return len(c.Stats().Replicas) == 1 })
	}
	ap, err := plain.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	if err := plain.Set(ctx, "seed", "s", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the seed on the replica", func() bool {
		v, _ := l.Node(1).Do(ctx, "GET", "seed").Text()
		return v == "s"
	})
	for _, tc := range []struct {
		name   string
		client *Client
		via    autoCmdable
	}{
		{"Config.AutoPipeline", auto, auto},
		{"AutoPipeline()", plain, ap},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := nodeStats(tc.client)
			const goroutines, each = 32, 50
			var wg sync.WaitGroup
			errs := make(chan error, goroutines)
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range each {
						key := fmt.Sprintf("%s:%d:%d", tc.name, g, i)
						if err := tc.via.Set(ctx, key, i, 0).Err(); err != nil {
							errs <- fmt.Errorf("SET %s: %w", key, err)
							return
						}
						if v, err := tc.via.Get(ctx, "seed").Result(); err != nil || v != "s" {
							errs <- fmt.Errorf("GET seed: %q, %v", v, err)
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			after := nodeStats(tc.client)
			master, replica := l.Node(0).Addr(), l.Node(1).Addr()
			writes := after[master].Writes - before[master].Writes
			reads := after[replica].Reads - before[replica].Reads
			if writes != goroutines*each || reads != goroutines*each {
				t.Errorf("writes on the master %d, reads on the replica %d; want %d each", writes, reads, goroutines*each)
			}
			if r := after[master].Reads - before[master].Reads; r != 0 {
				t.Errorf("%d reads on the master, want 0 (the replica is healthy)", r)
			}
			// go-redis's auto-pipeliner sends a batch of one as a lone
			// command (not through the batch path): one round trip each.
			for _, addr := range []string{master, replica} {
				batches := after[addr].Batches - before[addr].Batches
				batched := after[addr].Batched - before[addr].Batched
				trips := batches + goroutines*each - batched
				t.Logf("%s: %d commands in %d round trips (%d auto-pipelined in %d)", addr, goroutines*each, trips, batched, batches)
				if batched > goroutines*each || trips*2 > goroutines*each {
					t.Errorf("%s: %d commands in %d round trips; want at most half as many", addr, goroutines*each, trips)
				}
			}
		})
	}
}

func nodeStats(c *Client) map[string]NodeStats {
	m := map[string]NodeStats{}
	for _, n := range c.Stats().Nodes {
		m[n.Addr] = n
	}
	return m
}

// TestAutoPipelineKeepsPipelinesWhole: a pipeline and a transaction made
// through the auto-pipeliner or with Config.AutoPipeline run whole on the
// master (a read after a write in one pipeline sees it), not split per
// command.
func TestAutoPipelineKeepsPipelinesWhole(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	c, _ := newTestClient(t, l, func(o *Config) { o.ReadFrom = ReplicaPreferred; o.AutoPipeline = true })
	testkit.WaitFor(t, 5*time.Second, "a healthy replica", func() bool { return len(c.Stats().Replicas) == 1 })
	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	for name, via := range map[string]redis.Cmdable{"client": c, "AutoPipeline()": ap} {
		for i := range 20 {
			key := name + ":p" + strconv.Itoa(i)
			var get *redis.StringCmd
			if _, err := via.Pipelined(ctx, func(p redis.Pipeliner) error {
				p.Set(ctx, key, i, 0)
				get = p.Get(ctx, key)
				return nil
			}); err != nil || get.Val() != strconv.Itoa(i) {
				t.Fatalf("%s: pipeline SET then GET %s: %q, %v (split across nodes?)", name, key, get.Val(), err)
			}
			var incr *redis.IntCmd
			if _, err := via.TxPipelined(ctx, func(p redis.Pipeliner) error {
				incr = p.Incr(ctx, key+":n")
				return nil
			}); err != nil || incr.Val() != 1 {
				t.Fatalf("%s: transaction INCR: %d, %v", name, incr.Val(), err)
			}
		}
	}
}

// TestAutoPipelineDurableOneWaitPerBatch: durable writes auto-pipelined
// together are confirmed by one WAIT per round trip, not one per write,
// and each is acknowledged only when the replicas have it.
func TestAutoPipelineDurableOneWaitPerBatch(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(2))
	counter := &testkit.CommandCounter{}
	c, _ := newTestClient(t, l, func(o *Config) { o.Durable, o.AutoPipeline = true, true })
	c.OnNewNode(func(rdb *redis.Client) { rdb.AddHook(counter) })
	testkit.WaitFor(t, 5*time.Second, "two healthy replicas", func() bool { return len(c.Stats().Replicas) == 2 })
	const goroutines, each = 32, 20
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				if err := c.RPush(ctx, "list", fmt.Sprintf("%d:%d", g, i)).Err(); err != nil {
					t.Errorf("durable RPUSH: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	counts := counter.Counts()
	t.Logf("%d RPUSHes confirmed by %d WAITs", counts["rpush"], counts["wait"])
	if counts["rpush"] != goroutines*each {
		t.Fatalf("%d RPUSHes sent, want %d", counts["rpush"], goroutines*each)
	}
	if counts["wait"]*2 > counts["rpush"] {
		t.Errorf("%d WAITs for %d durable writes from %d goroutines: want one per batch", counts["wait"], counts["rpush"], goroutines)
	}
	for _, n := range l.Nodes() {
		if got, err := n.Do(ctx, "LLEN", "list").Int(); err != nil || got != goroutines*each {
			t.Errorf("%s has %d elements, %v; want %d", n.Name(), got, err, goroutines*each)
		}
	}
	// A replica that stops confirming fails the durable writes of the
	// batches it is in, each with its own NotDurableError.
	if err := l.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Node(2).Resume() }()
	var notDurable, other int
	var mu sync.Mutex
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.RPush(ctx, "list2", "x").Err()
			var nde *NotDurableError
			mu.Lock()
			defer mu.Unlock()
			if errors.As(err, &nde) && !nde.NotSent && nde.Acked == 1 && nde.Required == 2 {
				notDurable++
			} else {
				other++
				t.Errorf("durable RPUSH with a replica paused: %v", err)
			}
		}()
	}
	wg.Wait()
	if notDurable != 8 {
		t.Errorf("%d of 8 writes reported not durable", notDurable)
	}
}

// TestAsyncAutoPipelineKeepsSubmitOrder submits many commands from one
// goroutine through AsyncAutoPipeline without waiting for them, writes to
// the master interleaved with reads preferring the replica: the writes
// run in submit order (the list reads back in order), each INCR's reply
// is the count of those before it, and every read is the replica's.
func TestAsyncAutoPipelineKeepsSubmitOrder(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	c, _ := newTestClient(t, l, func(o *Config) { o.ReadFrom, o.ReplicaSelector = ReplicaPreferred, NewRoundRobinSelector() })
	testkit.WaitFor(t, 5*time.Second, "a healthy replica", func() bool { return len(c.Stats().Replicas) == 1 })
	if err := c.Set(ctx, "seed", "s", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the seed on the replica", func() bool {
		v, _ := l.Node(1).Do(ctx, "GET", "seed").Text()
		return v == "s"
	})
	ap, err := c.AsyncAutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	const n = 3000
	pushes := make([]*redis.IntCmd, n)
	incrs := make([]*redis.IntCmd, n)
	gets := make([]*redis.StringCmd, n)
	for i := range n {
		pushes[i] = ap.RPush(ctx, "order", i)
		incrs[i] = ap.Incr(ctx, "count")
		gets[i] = ap.Get(ctx, "seed")
	}
	// A SCAN among them: its path reads its reply's cursor.
	scan := ap.Scan(ctx, 0, "seed", 1000)
	for i := range n {
		if v, err := incrs[i].Result(); err != nil || v != int64(i+1) {
			t.Fatalf("INCR %d: %d, %v; want %d (run out of submit order)", i, v, err, i+1)
		}
		if v, err := pushes[i].Result(); err != nil || v != int64(i+1) {
			t.Fatalf("RPUSH %d: %d, %v; want length %d", i, v, err, i+1)
		}
		if v, err := gets[i].Result(); err != nil || v != "s" {
			t.Fatalf("GET %d: %q, %v", i, v, err)
		}
	}
	if _, _, err := scan.Result(); err != nil {
		t.Errorf("SCAN: %v", err)
	}
	st := nodeStats(c)
	if r := st[l.Node(1).Addr()].Reads; r != n+1 {
		t.Errorf("%d reads on the replica, want %d (the GETs and the SCAN)", r, n+1)
	}
	got, err := l.Node(0).Do(ctx, "LRANGE", "order", 0, -1).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		t.Fatalf("%d elements, want %d", len(got), n)
	}
	for i, v := range got {
		if v != strconv.Itoa(i) {
			t.Fatalf("order[%d] = %s, want %d", i, v, i)
		}
	}
	t.Logf("master: %d commands in %d batches; replica: %d in %d", st[l.Node(0).Addr()].Batched, st[l.Node(0).Addr()].Batches,
		st[l.Node(1).Addr()].Batched, st[l.Node(1).Addr()].Batches)
}

// TestAutoPipelinePacedCallers: 8 callers writing 1,000 times a second in
// all to a master 6 ms away (a request handler's load, not a flood) get
// the same from a client with Config.AutoPipeline as from one without:
// as many writes acknowledged, the same p50 and p90. Waiting for another
// caller's batch would cost a whole round trip: with a far node the
// Batcher sends each write at once, on a connection of its own.
//
// Three clients run at the same time on the same lab: two without
// auto-pipelining, one with. The allowance is 5 % of the plain client's
// figure plus the difference between the two plain clients (what the
// machine's load alone makes of the same work in the same run).
func TestAutoPipelinePacedCallers(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	cfg := lab.Sentinel(1)
	cfg.Nodes = []lab.NodeConfig{{Latency: 6 * time.Millisecond}, {Latency: 6 * time.Millisecond}}
	l := lab.New(t, cfg)
	plain, _ := newTestClient(t, l, nil)
	twin, _ := newTestClient(t, l, nil)
	auto, _ := newTestClient(t, l, func(o *Config) { o.AutoPipeline = true })
	set := func(c *Client, name string) func(ctx context.Context, g, i int) error {
		for range 3 { // the Batcher measures the round trip on these
			if err := c.Set(ctx, "warm", 1, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		return func(ctx context.Context, g, i int) error {
			return c.Set(ctx, fmt.Sprintf("paced:%s:%d:%d", name, g, i), i, 0).Err()
		}
	}
	// 8 callers, 1,000 writes/s in all, each client.
	testkit.PacedAlike(ctx, t, 8, 8*time.Millisecond, 3*time.Second,
		set(plain, "plain"), set(twin, "twin"), set(auto, "auto"))
}
