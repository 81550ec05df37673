package replica_test

import (
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
)

// The sentinel client's default selector is the latency-aware one: under
// Nearest, while its election names the near replica (node 2; the master
// is as near, so a loaded machine's scheduling delays hand Nearest to the
// master for a round now and then, which nearestRule checks), at least
// 99% of the reads go to it.
func TestSentinelDefaultIsLatencyAware(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := latencyLab(t, lab.Config{}, 6*ms, 42*ms, 6*ms)
	c := newClient(t, l, nil, nil)
	sel, ok := c.Selector().(*replica.Selector)
	if !ok {
		t.Fatalf("the default selector is a %T", c.Selector())
	}
	ready(t, ctx, c, sel, 0)
	_ = c.Get(ctx, "k") // starts the prober
	nearest := func(table []replica.NodeStatus) bool {
		nearestRule(t, table, replica.DefaultLatencyWindow)
		st, ok := findRow(table, l.Node(2).Addr())
		return ok && st.Elected && st.Nearest
	}
	d, total, _ := readStable(t, ctx, c, sel, l.Nodes(), 8, 1000, 20, "naming node 2 the nearest", nearest)
	if d[2] < total*99/100 {
		t.Fatalf("reads per node %v while the election named node 2 the nearest, want ≥ 99%% on it", d)
	}
}
