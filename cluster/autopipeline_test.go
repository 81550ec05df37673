package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestAutoPipelinePacedCallers: 8 callers writing 1,000 times a second in
// all to a cluster whose 3 masters are 6 ms away get the same from a
// client with Config.AutoPipeline as from one without: as many writes
// acknowledged, the same p50 and p90 (within 5 %, plus the difference two
// plain clients show in the same run). Waiting for another caller's batch
// would cost a whole round trip: a far node's Batcher sends each write at
// once, on a connection of its own.
func TestAutoPipelinePacedCallers(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	for _, n := range l.Nodes() {
		n.SetLatency(6 * time.Millisecond)
	}
	set := func(c *Client, name string) func(ctx context.Context, g, i int) error {
		for i := range 9 { // every master: the Batchers measure the round trip
			if err := c.Set(ctx, fmt.Sprint("warm", i), 1, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
		return func(ctx context.Context, g, i int) error {
			return c.Set(ctx, fmt.Sprintf("paced:%s:%d:%d", name, g, i), i, 0).Err()
		}
	}
	// 8 callers, 1,000 writes/s in all, each client.
	testkit.PacedAlike(ctx, t, 8, 8*time.Millisecond, 3*time.Second,
		set(newTestClient(t, l, nil), "plain"), set(newTestClient(t, l, nil), "twin"), set(newTestClient(t, l, func(o *Config) { o.AutoPipeline = true }), "auto"))
}

// TestAutoPipelineBlockingCommands: with Config.AutoPipeline, blocking
// commands are never batched: two BLPOPs blocked on one master and one on
// another neither hold the first master's other callers (their GETs are
// answered at once, not after the BLPOPs) nor time out at the client's
// ReadTimeout (a blocking command alone gets its block time on top), and
// each pops what is pushed later.
func TestAutoPipelineBlockingCommands(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, func(o *Config) { o.AutoPipeline = true })
	owner := func(key string) *lab.Node {
		n, err := l.SlotOwner(ctx, Slot(key))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	a := owner("{bq}")
	other := ""
	for i := 0; other == ""; i++ {
		if k := fmt.Sprintf("{bq%d}q", i); owner(k) != a {
			other = k
		}
	}
	queues := []string{"{bq}q1", "{bq}q2", other}
	popped := make(chan error, len(queues))
	for _, q := range queues {
		go func() { popped <- c.BLPop(ctx, 20*time.Second, q).Err() }()
	}
	testkit.WaitFor(t, 10*time.Second, "three clients blocked", func() bool {
		blocked := 0
		for _, n := range l.Nodes() {
			info, err := n.Info(ctx, "clients")
			if err != nil {
				return false
			}
			var b int
			_, _ = fmt.Sscan(info["blocked_clients"], &b)
			blocked += b
		}
		return blocked == len(queues)
	})
	testkit.AllAnswer(ctx, t, 8, 5*time.Second, "GET beside the BLPOPs", func(ctx context.Context) error { return c.Get(ctx, "{bq}k").Err() })
	time.Sleep(1500 * time.Millisecond) // past the client's 1 s ReadTimeout: the BLPOPs must still wait
	for _, q := range queues {
		if err := c.LPush(ctx, q, "x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range queues {
		if err := <-popped; err != nil {
			t.Errorf("BLPOP: %v", err)
		}
	}
}
