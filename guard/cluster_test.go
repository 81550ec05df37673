package guard_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestLimiterAndGateOnCluster runs a Limiter and a Gate through a cluster
// client, for an id whose key lives on each master: every limit and
// admission holds on its own shard, the limiter's script reaches every
// master (SCRIPT LOAD goes to one node of the client's choosing), and
// each counter and admission key is on the node that owns its slot.
func TestLimiterAndGateOnCluster(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	o := l.ClusterOptions()
	cc, err := cluster.NewClient(cluster.Config{Addrs: o.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	g, err := guard.New(cc, guard.Config{KeyPrefix: "test", CallLimit: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	lim := newLimiter(t, g, 3, time.Minute)
	gate := newGate(t, g, 30*time.Second)

	for _, n := range l.Nodes() {
		id := localID(t, n, lim.Key)
		for i := int64(1); i <= 3; i++ {
			if a, err := lim.Allow(ctx, id); err != nil || a.Count != i {
				t.Fatalf("%s: attempt %d: %+v, %v", n.Addr(), i, a, err)
			}
		}
		if _, err := lim.Allow(ctx, id); !errors.Is(err, guard.ErrTooManyRequests) {
			t.Fatalf("%s: 4th attempt: %v, want ErrTooManyRequests", n.Addr(), err)
		}
		if v, err := n.Do(ctx, "GET", lim.Key(id)).Int(); err != nil || v != 4 {
			t.Fatalf("%s: counter %d, %v; want 4 on the slot's master", n.Addr(), v, err)
		}
		if ok, err := n.Do(ctx, "SCRIPT", "EXISTS", guard.LimitScriptSHA).BoolSlice(); err != nil || !ok[0] {
			t.Fatalf("%s: SCRIPT EXISTS %v, %v; want the limiter's script cached", n.Addr(), ok, err)
		}
		id = localID(t, n, gate.Key)
		if err := gate.Admit(ctx, id); err != nil {
			t.Fatalf("%s: first admission: %v", n.Addr(), err)
		}
		if err := gate.Admit(ctx, id); !errors.Is(err, guard.ErrBusy) {
			t.Fatalf("%s: second admission: %v, want ErrBusy", n.Addr(), err)
		}
		if ttl, err := n.Do(ctx, "PTTL", gate.Key(id)).Int64(); err != nil || ttl <= 0 {
			t.Fatalf("%s: admission key PTTL %d, %v; want it set with a TTL on the slot's master", n.Addr(), ttl, err)
		}
	}
	if s := lim.Stats(); s != (guard.LimiterStats{Allowed: 9, Rejected: 3}) {
		t.Errorf("limiter stats %+v", s)
	}
	if s := gate.Stats(); s != (guard.GateStats{Admitted: 3, Busy: 3}) {
		t.Errorf("gate stats %+v", s)
	}
}

// localID returns an id whose key lives on n: n answers a GET of it
// instead of redirecting it.
func localID(t *testing.T, n *lab.Node, key func(string) string) string {
	t.Helper()
	ctx := testkit.Context(t, 10*time.Second)
	for i := range 1000 {
		id := fmt.Sprintf("user-%d", i)
		if err := n.Do(ctx, "GET", key(id)).Err(); err == nil || errors.Is(err, redis.Nil) {
			return id
		}
	}
	t.Fatalf("no id of 1000 has its key on %s", n.Addr())
	return ""
}
