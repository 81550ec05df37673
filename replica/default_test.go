package replica_test

import (
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// The sentinel client's default selector is the latency-aware one.
func TestSentinelDefaultIsLatencyAware(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := latencyLab(t, lab.Config{}, 6*ms, 42*ms, 6*ms)
	c := newClient(t, l, nil, nil)
	ready(t, ctx, c, nil, 0)
	testkit.WaitFor(t, 5*time.Second, "reads on the near replica", func() bool {
		gets := countGets(t, l.Nodes())
		read(t, ctx, c, 1, 5)
		d, _ := gets.deltas()
		return d[2] == 5
	})
	gets := countGets(t, l.Nodes())
	read(t, ctx, c, 8, 1000)
	d, total := gets.deltas()
	if d[2] < total*99/100 {
		t.Fatalf("reads per node %v, want ≥ 99%% on the near replica (node 2)", d)
	}
}
