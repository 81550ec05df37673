package multidb

import (
	"sync/atomic"
	"time"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=BreakerState -linecomment

// BreakerState is the state of a database's circuit breaker.
type BreakerState int32

const (
	// Closed: the database may be active.
	Closed BreakerState = iota // closed
	// Open: the database failed; it gets no traffic until its grace period
	// has passed and a health check closes the breaker again.
	Open // open
	// HalfOpen: the grace period has passed; the next health check decides
	// (Closed if it passes, Open for another grace period if not).
	HalfOpen // half-open
)

// The breaker's state machine, all of it: the events that drive it, the
// pure transition function, and what each transition makes the client do.
// Traffic, health checks and manual control each send it one event; none
// sets a state directly. (See the package documentation for why it is not
// gobreaker: health checks and operators must move it with no request
// involved.)
//
//	state      event           condition                   → state     action
//	---------  --------------  --------------------------  ----------  -----------
//	Closed     tripped                                     → Open      actOpened
//	Closed     checkFailed                                 → Open      actOpened
//	Open       graceTick       now ≥ OpenedAt + grace      → HalfOpen  actHalfOpened
//	Open       forcedClose                                 → Closed    actClosed
//	HalfOpen   checkPassed                                 → Closed    actResumed
//	HalfOpen   checkFailed                                 → Open      actOpened
//	HalfOpen   forcedClose                                 → Closed    actClosed
//	any other pair                                         → unchanged actNone
//
// Entering Open stamps OpenedAt with now; an Open breaker keeps its stamp
// whatever else it is told (traffic and checks within the grace period do
// not extend it). Leaving Open keeps the stamp, so that a health check that
// began before the last trip can tell (applyCheckLocked). Traffic trips only
// a Closed breaker: a HalfOpen one gets no traffic, and its next health
// check decides.

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=breakerEvent -linecomment

// breakerEvent is what happened to a database that may move its breaker.
type breakerEvent int

const (
	// evTripped: traffic failures met a trip rule (afterFailure).
	evTripped breakerEvent = iota // tripped
	// evCheckFailed: a health check (scheduled, or a burst check that
	// tripped) failed.
	evCheckFailed // check failed
	// evCheckPassed: a health check passed.
	evCheckPassed // check passed
	// evGraceTick: the health loop is about to check the database; an
	// Open breaker whose grace period is over goes half-open, so that
	// this check decides.
	evGraceTick // grace tick
	// evForcedClose: an operator's choice (SetActive, UpdateWeight) after
	// a health check made for it passed: the breaker closes whatever its
	// state, grace period or not.
	evForcedClose // forced close
)

// numBreakerEvents is not an event: it is how many there are. It has a
// declaration of its own because stringer names every constant of the
// block typed breakerEvent, and a count has no name (breakerEvent(5)).
const numBreakerEvents = evForcedClose + 1

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=breakerAction -linecomment

// breakerAction is what a transition asks of the client (Client.fireLocked
// does it).
type breakerAction int

const (
	// actNone: nothing changed.
	actNone breakerAction = iota // none
	// actOpened: the breaker opened: count a trip, log and report it, wake
	// the health loop (the grace period's end is its next wake-up), and
	// move traffic away if the database was active.
	actOpened // opened
	// actHalfOpened: the grace period is over: log and report it.
	actHalfOpened // half-opened
	// actClosed: the breaker closed by an operator's choice: the failure
	// counts start afresh; log and report it. The operator routes traffic.
	actClosed // closed
	// actResumed: actClosed by a health check, and service resumes on the
	// database if none was active.
	actResumed // resumed
)

// breakerPhase is a breaker's state as the transition function sees it.
type breakerPhase struct {
	state    BreakerState
	openedAt time.Time // when it last opened (zero: never)
}

// transition is the breaker's state machine as a pure function (the table
// above): the phase after ev at now, for a breaker with grace period grace,
// and what the client must do about it. It touches nothing else.
func transition(p breakerPhase, ev breakerEvent, now time.Time, grace time.Duration) (breakerPhase, breakerAction) {
	opened := breakerPhase{state: Open, openedAt: now}
	switch p.state {
	case Closed:
		if ev == evTripped || ev == evCheckFailed {
			return opened, actOpened
		}
	case Open:
		switch {
		case ev == evGraceTick && !now.Before(p.openedAt.Add(grace)):
			return breakerPhase{state: HalfOpen, openedAt: p.openedAt}, actHalfOpened
		case ev == evForcedClose:
			return breakerPhase{state: Closed, openedAt: p.openedAt}, actClosed
		}
	case HalfOpen:
		switch ev {
		case evCheckPassed:
			return breakerPhase{state: Closed, openedAt: p.openedAt}, actResumed
		case evCheckFailed:
			return opened, actOpened
		case evForcedClose:
			return breakerPhase{state: Closed, openedAt: p.openedAt}, actClosed
		}
	}
	return p, actNone
}

// breaker is one database's circuit breaker: its phase, changed only by
// fire, with the Client's mutex held. state is also readable without the
// lock.
type breaker struct {
	state    atomic.Int32 // a BreakerState
	openedAt time.Time
	grace    time.Duration
}

func (b *breaker) get() BreakerState { return BreakerState(b.state.Load()) }

// graceEnd is when an Open breaker may go half-open.
func (b *breaker) graceEnd() time.Time { return b.openedAt.Add(b.grace) }

// fire applies ev at now by transition, and returns the state before and
// what the client must do (Client.fireLocked does it).
func (b *breaker) fire(ev breakerEvent, now time.Time) (from BreakerState, act breakerAction) {
	from = b.get()
	next, act := transition(breakerPhase{state: from, openedAt: b.openedAt}, ev, now, b.grace)
	b.openedAt = next.openedAt
	b.state.Store(int32(next.state))
	return from, act
}
