package rediskitotel

import (
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/rediskit/rediskit"
	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/sentinel"
)

// TestClientObserverMapping: rediskit.Config.Observer's events land on the
// typed packages' instruments, whichever topology sent them, and next
// sees every one.
func TestClientObserverMapping(t *testing.T) {
	m, reader := newMetrics(t)
	var forwarded int
	obs := m.Observer(func(rediskit.Event) { forwarded++ })
	const a, b = "127.0.0.1:7001", "127.0.0.1:7002"
	events := []rediskit.Event{
		{Topology: rediskit.KindSentinel, Typed: sentinel.Event{Kind: sentinel.EventMasterChanged, MasterName: "m", OldMaster: a, Master: b}},
		{Topology: rediskit.KindStandalone, Typed: sentinel.Event{Kind: sentinel.EventWriteRerun}},
		{Topology: rediskit.KindCluster, Typed: cluster.Event{Kind: cluster.EventMasterChanged, OldMaster: a, Master: b, Slots: 5461}},
		{Topology: rediskit.KindMultiDB, Typed: multidb.Event{Kind: multidb.EventAllUnhealthy}},
		{Topology: rediskit.KindMultiDB, Kind: "not a typed event"},
	}
	for _, ev := range events {
		obs(ev)
	}
	if forwarded != len(events) {
		t.Errorf("next called %d times, want %d", forwarded, len(events))
	}
	got := collect(t, reader)
	rds := AttrDBSystem.String("redis")
	checkSums(t, got, []sumWant{
		{"rediskit.sentinel.master.changes", []attribute.KeyValue{rds, AttrMasterName.String("m"), AttrOldMaster.String(a), AttrNewMaster.String(b)}, 1},
		{"rediskit.sentinel.writes.rerun", []attribute.KeyValue{rds}, 1},
		{"rediskit.cluster.master.changes", []attribute.KeyValue{rds, AttrOldMaster.String(a), AttrNewMaster.String(b)}, 1},
		{"rediskit.multidb.unavailable", []attribute.KeyValue{rds}, 1},
	})
}

// TestRegisterClient: Register reports the per-node counters of the client
// rediskit.NewClient made from a plain redis:// URL (a standalone client,
// counted as a Sentinel client's nodes), on a real server.
func TestRegisterClient(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Config{})
	m, reader := newMetrics(t)
	c, err := rediskit.NewClientFromURL("redis://"+l.Node(0).Addr(), rediskit.Config{Kind: rediskit.KindStandalone, Observer: m.Observer(nil)})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Close() }()
	reg, err := m.Register(c)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Unregister() }()
	const writes = 5
	for i := range writes {
		if err := c.Set(ctx, fmt.Sprint("otel-", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Get(ctx, "otel-0").Err(); err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	onMaster := append(addrAttrs(l.Node(0).Addr()), AttrDBSystem.String("redis"))
	if n := sum(got["rediskit.sentinel.node.writes"], onMaster...); n != writes {
		t.Errorf("rediskit.sentinel.node.writes on the primary = %v, want %d (points %v)", n, writes, got["rediskit.sentinel.node.writes"])
	}
	if n := sum(got["rediskit.sentinel.node.reads"], onMaster...); n != 1 {
		t.Errorf("rediskit.sentinel.node.reads on the primary = %v, want 1", n)
	}
}
