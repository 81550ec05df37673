package rediskitotel

import (
	"testing"

	"go.opentelemetry.io/otel/attribute"

	"github.com/rediskit/rediskit/hashring"
	"github.com/rediskit/rediskit/multidb"
)

// TestObserverMapping feeds events straight to the observers (no Redis:
// the lab tests drive the components; this checks every event kind lands
// on its counter, with db.system.name, and that next is called).
func TestObserverMapping(t *testing.T) {
	m, reader := newMetrics(t)
	var forwarded int
	dbObs := m.MultiDBObserver(func(multidb.Event) { forwarded++ })
	ringObs := m.RingObserver(func(hashring.Event) { forwarded++ })
	dbEvents := []multidb.Event{
		{Kind: multidb.EventReadRetried, Old: "a", New: "b"},
		{Kind: multidb.EventWriteRefused, Old: "a", New: "b"},
		{Kind: multidb.EventWriteRerun, Old: "a", New: "b"},
		{Kind: multidb.EventWriteRerun, Old: "a", New: "b"},
		{Kind: multidb.EventAllUnhealthy},
	}
	for _, ev := range dbEvents {
		dbObs(ev)
	}
	ringEvents := []hashring.Event{
		{Kind: hashring.EventDeadlinePassed, Key: "ring", Node: "n1"},
		{Kind: hashring.EventOwnershipRestored, Key: "ring", Node: "n1"},
		{Kind: hashring.EventAttemptFailed, Key: "ring", Node: "n1"},
		{Kind: hashring.EventAttemptFailed, Key: "ring", Node: "n1"},
	}
	for _, ev := range ringEvents {
		ringObs(ev)
	}
	if want := len(dbEvents) + len(ringEvents); forwarded != want {
		t.Errorf("next called %d times, want %d", forwarded, want)
	}
	got := collect(t, reader)
	redis := AttrDBSystem.String("redis")
	node := []attribute.KeyValue{redis, AttrRingKey.String("ring"), AttrRingNode.String("n1")}
	checkSums(t, got, []sumWant{
		{"rediskit.multidb.reads.retried", []attribute.KeyValue{redis}, 1},
		{"rediskit.multidb.writes.refused", []attribute.KeyValue{redis}, 1},
		{"rediskit.multidb.writes.rerun", []attribute.KeyValue{redis}, 2},
		{"rediskit.multidb.unavailable", []attribute.KeyValue{redis}, 1},
		{"rediskit.hashring.ownership.expiries", node, 1},
		{"rediskit.hashring.ownership.restores", node, 1},
		{"rediskit.hashring.attempts.failed", node, 2},
	})
}
