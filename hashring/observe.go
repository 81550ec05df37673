package hashring

import "time"

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=EventKind -linecomment

// EventKind names what a node Event reports.
type EventKind int

// The events a Node reports to Config.Observer.
const (
	// EventRangesChanged: the node's effective ranges changed (joined,
	// rebalanced, stopped, or gave its keys up when its ownership deadline
	// was observed passed). Share and Ranges describe the new ranges: 0
	// and 0 when the node stopped or gave its keys up.
	EventRangesChanged EventKind = iota + 1 // ranges changed
	// EventDeadlinePassed: the ownership deadline was observed passed; the
	// node owns no keys until a heartbeat and a read succeed. Late is how
	// long ago it passed.
	EventDeadlinePassed // ownership deadline passed
	// EventOwnershipRestored: a renewal restored ownership; ValidUntil is
	// the new deadline.
	EventOwnershipRestored // ownership restored
	// EventAttemptFailed: a step (Step) of keeping the node on the ring
	// failed with Err; it is retried.
	EventAttemptFailed // attempt failed
	// EventSubscriptionMoved: the client moved the node's subscription to
	// a new server on purpose (our Sentinel client after a failover, our
	// multi-database client after a switch; Err matches
	// sentinel.ErrSubscriptionMoved and multidb.ErrSubscriptionMoved). Not
	// a failure: the node subscribes again and renews at once. If that
	// fails, an EventAttemptFailed follows.
	EventSubscriptionMoved // subscription moved
)

// Event is something a node observed, for metrics and alerts. Events
// carry the same facts as the node's log records.
type Event struct {
	Kind EventKind
	Time time.Time
	Key  string // the ring's key
	Node string // the node's id
	// Share is the fraction of the ring the node now owns (0 to 1) and
	// Ranges the number of its ranges (EventRangesChanged).
	Share  float64
	Ranges int
	// Late is how long ago the deadline passed (EventDeadlinePassed).
	Late time.Duration
	// ValidUntil is the new ownership deadline (EventOwnershipRestored).
	ValidUntil time.Time
	// Step and Err say what failed (EventAttemptFailed); Err is also the
	// switch an EventSubscriptionMoved reports.
	Step string
	Err  error
}

// emit queues ev for the Observer and returns at once.
func (n *Node) emit(ev Event) {
	q := n.events.Load()
	if q == nil {
		return
	}
	ev.Time = time.Now()
	ev.Key, ev.Node = n.st.key, n.id
	q.Push(ev)
}

// EventsDropped is the number of events the Observer missed because it
// was too slow (see Config.Observer), since the node was created.
func (n *Node) EventsDropped() uint64 { return n.eventsDropped.Load() + n.events.Load().Dropped() }

// share is the fraction of the ring the ranges cover.
func share(ranges []Range) float64 {
	var sum uint64
	for _, r := range ranges {
		sum += r.Len()
	}
	return float64(sum) / float64(RingSize)
}
