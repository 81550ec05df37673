package rediskit

import (
	"time"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/sentinel"
)

// Event is an event of the typed client (a master changed, a failover
// started, a database switched, ...), delivered to Config.Observer as the
// typed package delivers its own: in order, from a goroutine the client
// owns, never blocking the client (see internal/eventq: a slow Observer
// misses events, counted in Stats.EventsDropped).
type Event struct {
	// Topology is the kind of the client that reported it (a multidb
	// client's Sentinel or cluster databases report theirs).
	Topology Kind
	// Time is when it happened.
	Time time.Time
	// Kind names the event as the typed package does ("master changed",
	// "failover started", "switched", ...).
	Kind string
	// Err is the error the event carries, if any.
	Err error
	// Typed is the typed package's event: a sentinel.Event, a
	// cluster.Event or a multidb.Event, with every detail.
	Typed any
}

// String is the typed event's String: what happened, without secrets.
func (e Event) String() string {
	if s, ok := e.Typed.(interface{ String() string }); ok {
		return s.String()
	}
	return e.Topology.String() + ": " + e.Kind
}

// The adapters from a typed package's Observer to Config.Observer; nil
// without an Observer.

func sentinelObserver(obs func(Event), kind Kind) func(sentinel.Event) {
	if obs == nil {
		return nil
	}
	return func(e sentinel.Event) {
		obs(Event{Topology: kind, Time: e.Time, Kind: e.Kind.String(), Err: e.Err, Typed: e})
	}
}

func clusterObserver(obs func(Event)) func(cluster.Event) {
	if obs == nil {
		return nil
	}
	return func(e cluster.Event) {
		obs(Event{Topology: KindCluster, Time: e.Time, Kind: e.Kind.String(), Err: e.Err, Typed: e})
	}
}

func multidbObserver(obs func(Event)) func(multidb.Event) {
	if obs == nil {
		return nil
	}
	return func(e multidb.Event) {
		obs(Event{Topology: KindMultiDB, Time: e.Time, Kind: e.Kind.String(), Err: e.Err, Typed: e})
	}
}
