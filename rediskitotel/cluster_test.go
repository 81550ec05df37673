package rediskitotel

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
)

// A CLUSTER FAILOVER of one shard of a 3×1 lab shows as one master change
// with both addresses, a MOVED followed and the slot map read because of
// it, the write counted on the new master, and each shard's election
// with the new master's shard listing the old master as its replica.
func TestClusterFailoverMetrics(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	m, reader := newMetrics(t)
	l := lab.New(t, lab.Cluster(3, 1))
	t.Logf("server %s", l.ServerVersion())
	c, err := cluster.NewClient(cluster.Config{Addrs: l.ClusterAddrs(), Observer: m.ClusterObserver(nil),
		ReadFrom: cluster.Nearest, RefreshInterval: time.Hour}) // no periodic read finds the failover before the MOVED
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := m.RegisterCluster(c); err != nil {
		t.Fatal(err)
	}
	const key = "k"
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old, err := l.SlotOwner(ctx, cluster.Slot(key))
	if err != nil {
		t.Fatal(err)
	}
	promoted, err := l.ClusterFailover(ctx, old.Shard(), lab.FailoverGraceful)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, key, "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Reads start the prober; wait for a table of the promoted master's
	// shard in which the old master is its replica, probed.
	testkit.WaitFor(t, 20*time.Second, "the new shard's election, probed", func() bool {
		if err := c.Get(ctx, key).Err(); err != nil {
			t.Logf("get: %v", err)
		}
		rows := c.ReplicaTables()[promoted.Addr()]
		return slices.ContainsFunc(rows, func(r replica.NodeStatus) bool { return r.Addr == old.Addr() }) &&
			!slices.ContainsFunc(rows, func(r replica.NodeStatus) bool { return r.RTT <= 0 })
	})

	got := collect(t, reader)
	st := c.Stats()
	t.Logf("stats: refreshes %v moved %d ask %d master changes %d", st.RefreshesByCause, st.Moved, st.Ask, st.MasterChanges)
	if n := sum(got["rediskit.cluster.master.changes"], AttrOldMaster.String(old.Addr()), AttrNewMaster.String(promoted.Addr())); n != 1 {
		t.Errorf("master changes old=%s new=%s: %v (all: %v)", old.Addr(), promoted.Addr(), n, got["rediskit.cluster.master.changes"])
	}
	if n := sum(got["rediskit.cluster.master.changes"]); n != 1 {
		t.Errorf("master changes: %v, want 1 (all: %v)", n, got["rediskit.cluster.master.changes"])
	}
	for _, tc := range []struct {
		name  string
		attrs []attribute.KeyValue
		want  uint64
	}{
		{"rediskit.cluster.redirects", []attribute.KeyValue{AttrRedirect.String("moved")}, st.Moved},
		{"rediskit.cluster.redirects", []attribute.KeyValue{AttrRedirect.String("ask")}, st.Ask},
		{"rediskit.cluster.refreshes", []attribute.KeyValue{AttrReason.String("moved")}, st.RefreshesByCause[cluster.RefreshMoved]},
		{"rediskit.cluster.refreshes", []attribute.KeyValue{AttrReason.String("start")}, st.RefreshesByCause[cluster.RefreshStart]},
		{"rediskit.cluster.refreshes", []attribute.KeyValue{AttrReason.String("periodic")}, 0},
		{"rediskit.cluster.refreshes.failed", nil, st.RefreshFailures},
	} {
		if v := sum(got[tc.name], tc.attrs...); v != float64(tc.want) {
			t.Errorf("%s%v = %v, want %d as in Stats (points %v)", tc.name, tc.attrs, v, tc.want, got[tc.name])
		}
	}
	if st.Moved < 1 || st.RefreshesByCause[cluster.RefreshMoved] < 1 {
		t.Errorf("the write after the failover followed %d MOVED and caused %d map reads, want at least 1 each", st.Moved, st.RefreshesByCause[cluster.RefreshMoved])
	}
	if n := sum(got["rediskit.cluster.node.writes"], addrAttrs(promoted.Addr())...); n < 1 {
		t.Errorf("writes on the new master %s: %v", promoted.Addr(), n)
	}
	if pts := got["rediskit.cluster.master.failing"]; len(pts) != 3 || sum(pts) != 0 {
		t.Errorf("master.failing: %v, want 0 for each of 3 masters", pts)
	}
	shard := AttrShard.String(promoted.Addr())
	if n := len(filter(got["rediskit.replica.rtt"], shard)); n != 2 {
		t.Errorf("RTT series of the new master's shard: %d, want its master and replica (all: %v)", n, got["rediskit.replica.rtt"])
	}
	oldAsReplica := append(addrAttrs(old.Addr()), shard, AttrRole.String("replica"))
	if len(filter(got["rediskit.replica.elected"], oldAsReplica...)) != 1 {
		t.Errorf("no election series for the old master as the new one's replica: %v", got["rediskit.replica.elected"])
	}
	// Every shard's election as ReplicaTables has it, read while the
	// tables hold still (the prober may move an election between reads).
	testkit.WaitFor(t, 10*time.Second, "the elected series to match ReplicaTables", func() bool {
		before := electedOf(c.ReplicaTables())
		points := collect(t, reader)["rediskit.replica.elected"]
		after := electedOf(c.ReplicaTables())
		if !maps.Equal(before, after) {
			return false
		}
		seen := map[string]bool{}
		for _, p := range points {
			shard, _ := p.attrs.Value(AttrShard)
			host, _ := p.attrs.Value(AttrServerAddr)
			port, _ := p.attrs.Value(AttrServerPort)
			k := shard.AsString() + " " + net.JoinHostPort(host.AsString(), strconv.FormatInt(port.AsInt64(), 10))
			seen[k] = true
			if want, ok := after[k]; !ok || (p.value == 1) != want {
				t.Logf("series %s = %v, table %v (present %v)", k, p.value, want, ok)
				return false
			}
		}
		return len(seen) == len(after) && len(after) == 3
	})
}

// electedOf is each shard's replicas' Elected, by "shard-master replica".
func electedOf(tables map[string][]replica.NodeStatus) map[string]bool {
	out := map[string]bool{}
	for master, rows := range tables {
		for _, r := range rows {
			if r.Role == replica.RoleReplica {
				out[master+" "+r.Addr] = r.Elected
			}
		}
	}
	return out
}

// filter returns the points whose attributes include every given one.
func filter(points []point, want ...attribute.KeyValue) []point {
	var out []point
	for _, p := range points {
		if p.has(want...) {
			out = append(out, p)
		}
	}
	return out
}

// TestClusterObserverMapping feeds every cluster event kind to the
// observer (the failover test above drives a real one; refusals and
// retries need faults the cluster package's own tests make).
func TestClusterObserverMapping(t *testing.T) {
	m, reader := newMetrics(t)
	var forwarded int
	obs := m.ClusterObserver(func(cluster.Event) { forwarded++ })
	const a, b = "127.0.0.1:7001", "127.0.0.1:7002"
	events := []cluster.Event{
		{Kind: cluster.EventMasterChanged, OldMaster: a, Master: b, Slots: 5461},
		{Kind: cluster.EventSlotsMoved, OldMaster: a, Master: b, Slots: 3},
		{Kind: cluster.EventSlotsMoved, OldMaster: a, Master: b, Slots: 2},
		{Kind: cluster.EventMasterFailing, Master: a},
		{Kind: cluster.EventMasterRecovered, Master: a, Duration: 1500 * time.Millisecond},
		{Kind: cluster.EventRefreshFailed},
		{Kind: cluster.EventReadRetried, Master: a, Slot: 1},
		{Kind: cluster.EventWriteRerun, Master: a, Slot: 1},
		{Kind: cluster.EventWriteRerun, Master: a, Slot: 2},
		{Kind: cluster.EventWriteRefused, OldMaster: a, Master: b, Slot: 1, Err: &cluster.MasterChangedError{MayHaveExecuted: true}},
		{Kind: cluster.EventWriteRefused, OldMaster: a, Master: b, Slot: 1, Err: &cluster.MasterChangedError{}},
		{Kind: cluster.EventWriteNotDurable, Master: b, Slot: 1, Err: &cluster.NotDurableError{NotSent: true}},
	}
	for _, ev := range events {
		obs(ev)
	}
	if forwarded != len(events) {
		t.Errorf("next called %d times, want %d", forwarded, len(events))
	}
	got := collect(t, reader)
	rds := AttrDBSystem.String("redis")
	moved := []attribute.KeyValue{rds, AttrOldMaster.String(a), AttrNewMaster.String(b)}
	onA := append(addrAttrs(a), rds)
	checkSums(t, got, []sumWant{
		{"rediskit.cluster.master.changes", moved, 1},
		{"rediskit.cluster.slots.moved", moved, 5},
		{"rediskit.cluster.master.failures", onA, 1},
		{"rediskit.cluster.master.failed", onA, 1}, // a histogram: its count
		{"rediskit.cluster.reads.retried", onA, 1},
		{"rediskit.cluster.writes.rerun", onA, 2},
		{"rediskit.cluster.writes.refused", append(moved, AttrMayHaveRun.Bool(true)), 1},
		{"rediskit.cluster.writes.refused", append(moved, AttrMayHaveRun.Bool(false)), 1},
		{"rediskit.cluster.writes.not_durable", append(addrAttrs(b), rds, AttrMayHaveRun.Bool(false)), 1},
	})
	if p := got["rediskit.cluster.master.failed"]; len(p) != 1 || p[0].value != 1.5 {
		t.Errorf("master.failed: %v, want one recovery after 1.5 s", p)
	}
}
