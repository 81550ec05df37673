package cluster

import (
	"fmt"
	"strconv"
	"time"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=EventKind,RefreshCause -linecomment -output=enum_string.go

// EventKind names what an Event reports.
type EventKind int

// The events a Client reports to Config.Observer.
const (
	// EventMasterChanged: Slots slots moved from OldMaster, which no
	// longer masters any, to Master: a failover (planned or not).
	EventMasterChanged EventKind = iota + 1 // master changed
	// EventSlotsMoved: Slots slots moved from OldMaster to Master, both
	// still masters: a slot migration (resharding).
	EventSlotsMoved // slots moved
	// EventMasterFailing: Master did not answer (Err); the writes of its
	// slots are held until the cluster names another master or it
	// answers again.
	EventMasterFailing // master failing
	// EventMasterRecovered: a failing Master answered again and still
	// serves its slots; its writes resume there. Duration is how long it
	// was failing.
	EventMasterRecovered // master recovered
	// EventRefreshFailed: no node answered a slot-map read (Err); the
	// client routes on the map it has.
	EventRefreshFailed // refresh failed
	// EventReadRetried: a read of Slot failed on Master with Err, without
	// an answer, and was run again once.
	EventReadRetried // read retried
	// EventWriteRerun: a write of Slot that provably did not run on
	// Master (Err: TRYAGAIN, CLUSTERDOWN, LOADING, a dial failure, ...)
	// is sent again. Reported once per call, not per retry.
	EventWriteRerun // write re-run
	// EventWriteRefused: a write of Slot sent to OldMaster got no answer
	// and the cluster has since named Master: it failed with a
	// *MasterChangedError (Err) rather than run twice.
	EventWriteRefused // write refused
	// EventWriteNotDurable: a durable write of Slot (-1: a pipeline's
	// part) on Master failed with a *NotDurableError (Err): refused
	// unsent, or run and not confirmed.
	EventWriteNotDurable // write not durable
	// EventMasterIsolated: Master is cut off, or suspected cut off, from
	// its replicas and the majority of the masters while it still
	// answers (Reason says what the split-brain poll saw): its shard's
	// writes are held until the cluster replaces it or the signs clear
	// (see "Split brain" in the package documentation).
	EventMasterIsolated // master isolated
	// EventIsolationEnded: the hold of EventMasterIsolated ended
	// (Reason); Duration is how long it lasted.
	EventIsolationEnded // isolation ended
)

// RefreshCause says why the client read the slot map: at start, on the
// RefreshInterval timer, after a MOVED, after a node did not answer, on
// the FailoverPollInterval timer while a master is failing, after a
// refusal (TRYAGAIN, CLUSTERDOWN, ...), for a subscription (a node pushed
// sunsubscribe: it lost a slot; or no master to subscribe on).
type RefreshCause int

// The causes of a slot-map read.
const (
	RefreshStart        RefreshCause = iota // start
	RefreshPeriodic                         // periodic
	RefreshMoved                            // moved
	RefreshNodeFailed                       // node failed
	RefreshFailoverPoll                     // failover poll
	RefreshRefused                          // refused
	RefreshPubSub                           // pubsub
	numRefreshCauses
)

// Event is something the client decided or noticed.
type Event struct {
	Kind      EventKind
	Time      time.Time
	Master    string // the master (or node) concerned
	OldMaster string
	// Slot is the slot of the call an event is about (EventReadRetried,
	// EventWriteRerun, EventWriteRefused, EventWriteNotDurable); -1 for a
	// command without a key.
	Slot int
	// Slots counts the slots that moved (EventMasterChanged,
	// EventSlotsMoved).
	Slots int
	// Duration is how long the reported state lasted (EventMasterRecovered,
	// EventIsolationEnded).
	Duration time.Duration
	// Reason says why (EventMasterIsolated, EventIsolationEnded).
	Reason string
	Err    error
}

func (e Event) String() string {
	s := fmt.Sprintf("%s %s", e.Time.Format("15:04:05.000"), e.Kind)
	if e.Master != "" {
		s += " master=" + e.Master
	}
	if e.OldMaster != "" {
		s += " old=" + e.OldMaster
	}
	switch e.Kind {
	case EventMasterChanged, EventSlotsMoved:
		s += fmt.Sprintf(" slots=%d", e.Slots)
	case EventReadRetried, EventWriteRerun, EventWriteRefused, EventWriteNotDurable:
		s += fmt.Sprintf(" slot=%d", e.Slot)
	}
	if e.Reason != "" {
		s += " reason=" + strconv.Quote(e.Reason)
	}
	if e.Duration != 0 {
		s += " took=" + e.Duration.String()
	}
	if e.Err != nil {
		s += " err=" + e.Err.Error()
	}
	return s
}

// emit queues ev for the Observer (see Config.Observer) and returns at
// once: neither the topology goroutine nor a call waits for it.
func (t *topology) emit(ev Event) {
	if t.events == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	t.events.Push(ev)
}

// mapChanges reports how a refresh moved the slots between masters: one
// EventMasterChanged or EventSlotsMoved per old and new master, counting
// the slots. prev are the owners of the previous refresh's map (nil
// before the first: nothing to report). A pure function.
func mapChanges(prev, next *[Slots]*node, nextMasters map[*node]bool) []Event {
	if prev == nil {
		return nil
	}
	type pair struct{ from, to *node }
	counts := map[pair]int{}
	var order []pair
	for s := range Slots {
		from, to := prev[s], next[s]
		if from == to || from == nil || to == nil {
			continue
		}
		p := pair{from, to}
		if counts[p] == 0 {
			order = append(order, p)
		}
		counts[p]++
	}
	out := make([]Event, 0, len(order))
	for _, p := range order {
		kind := EventMasterChanged
		if nextMasters[p.from] {
			kind = EventSlotsMoved
		}
		out = append(out, Event{Kind: kind, Master: p.to.addr, OldMaster: p.from.addr, Slot: -1, Slots: counts[p]})
	}
	return out
}
