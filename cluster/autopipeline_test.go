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
