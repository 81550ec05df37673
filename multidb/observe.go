package multidb

import (
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/eventq"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=EventKind -linecomment

// EventKind names what an Event reports.
type EventKind int

// The events a Client reports to Config.Observer.
const (
	// EventActiveChanged: traffic now goes to New, a switch (Old was
	// active, "" after no database was healthy); Reason says why, Err is
	// the failure that caused an automatic switch. Start-up is not a
	// switch: it is EventActivated.
	EventActiveChanged EventKind = iota + 1 // active changed
	// EventBreakerChanged: Database's breaker went From → To; Detail says
	// why, Err is the failure that opened it.
	EventBreakerChanged // breaker changed
	// EventAllUnhealthy: no database's breaker is closed; calls fail with
	// ErrTemporarilyUnavailable. Old was active.
	EventAllUnhealthy // all unhealthy
	// EventNoHealthyDatabase: the failover attempts are used up; calls
	// fail with ErrNoHealthyDatabase until a database recovers.
	EventNoHealthyDatabase // no healthy database
	// EventReadRetried: read-only work failed on Old (Err) and was run
	// once more on New.
	EventReadRetried // read retried
	// EventWriteRerun: a write that provably did not execute on Old was
	// run on New.
	EventWriteRerun // write re-run
	// EventWriteRefused: a write failed on Old and may have executed; it
	// was not re-run on New (the caller got a *DatabaseChangedError, Err).
	EventWriteRefused // write refused
	// EventWeightChanged: Database's weight is now Weight.
	EventWeightChanged // weight changed
	// EventDatabaseAdded and EventDatabaseRemoved: Database joined or left.
	EventDatabaseAdded   // database added
	EventDatabaseRemoved // database removed
	// EventActivated: NewClient made New the first active database (the
	// highest-weight one; every breaker starts closed). It is the first
	// event of every client, once, and not a switch: Stats.Switches does
	// not count it, and neither does an Observer that counts
	// EventActiveChanged. Use it to learn where traffic starts.
	EventActivated // activated
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=Reason -linecomment

// Reason says why the active database changed.
type Reason int

const (
	// ReasonAutomatic: the active database failed (its breaker opened),
	// or service resumed after no database was healthy.
	ReasonAutomatic Reason = iota + 1 // automatic
	// ReasonManual: SetActive, UpdateWeight or RemoveDatabase.
	ReasonManual // manual
	// ReasonFailback: a database of higher weight passed its health checks
	// for FailbackDwell.
	ReasonFailback // failback
)

// Event is something the client decided or observed.
type Event struct {
	Kind EventKind
	Time time.Time
	// Old and New are database names (EventActiveChanged, the retry and
	// refusal events; New alone for EventActivated).
	Old, New string
	Reason   Reason
	// Database, From and To describe a breaker change; Database also names
	// the database of a weight change, an addition or a removal.
	Database string
	From, To BreakerState
	Weight   float64
	Detail   string
	Err      error
}

func (e Event) String() string {
	s := fmt.Sprintf("%s %s", e.Time.Format("15:04:05.000"), e.Kind)
	switch e.Kind {
	case EventActiveChanged:
		s += fmt.Sprintf(" %q → %q (%s)", e.Old, e.New, e.Reason)
	case EventActivated:
		s += fmt.Sprintf(" %q", e.New)
	case EventBreakerChanged:
		s += fmt.Sprintf(" %s: %s → %s", e.Database, e.From, e.To)
	case EventReadRetried, EventWriteRerun, EventWriteRefused:
		s += fmt.Sprintf(" %q → %q", e.Old, e.New)
	case EventAllUnhealthy:
		s += fmt.Sprintf(" (was %q)", e.Old)
	case EventWeightChanged:
		s += " " + e.Database + " weight " + strconv.FormatFloat(e.Weight, 'g', -1, 64)
	case EventDatabaseAdded, EventDatabaseRemoved:
		s += " " + e.Database
	}
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	if e.Err != nil {
		s += " err=" + e.Err.Error()
	}
	return s
}

// dispatcher delivers events to the Observer under the one contract of
// internal/eventq: in order, from its own goroutine, so the client never
// waits for the Observer and the Observer may call the client.
type dispatcher struct {
	q *eventq.Queue[Event]
}

func newDispatcher(observe func(Event), log *slog.Logger) *dispatcher {
	return &dispatcher{q: eventq.New(eventq.Config[Event]{Deliver: observe, Logger: log, Name: "multidb"})}
}

func (d *dispatcher) emit(ev Event) {
	if d.q == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	d.q.Push(ev)
}

// close delivers the events already queued (within
// eventq.DefaultDrainTimeout) and stops.
func (d *dispatcher) close() { d.q.Close() }

// DatabaseStats describe one database.
type DatabaseStats struct {
	Name   string
	Weight float64
	Active bool
	State  BreakerState
	// Checked is false until the first health check completed.
	Checked bool
	// Healthy is the last health check's verdict.
	Healthy bool
	// HealthySince is when the current run of passing health checks began
	// (zero if the last check failed); failback measures FailbackDwell
	// from it.
	HealthySince time.Time
	LastCheck    time.Time
	// LastProbeLatency is how long the last probe of the last check took.
	LastProbeLatency time.Duration
	// LastError is the last failure seen (a health check's or traffic's).
	LastError string
	// ConsecutiveFailures and WindowFailures/WindowCalls are the traffic
	// counts the trip rules look at, by failure event: the calls in flight
	// together when one of them failed count as one failure (see the
	// package documentation). Failures counts every failed call (connection
	// failure or timeout) since the client started; CoalescedFailures, the
	// part of them that joined an event already counted.
	ConsecutiveFailures       int64
	WindowFailures            int64
	WindowCalls               int64
	Failures                  uint64
	CoalescedFailures         uint64
	Trips                     uint64 // times the breaker opened
	ChecksPassed              uint64
	ChecksFailed              uint64
	OpenedAt, GracePeriodEnds time.Time

	// BurstChecks counts the health checks run at once because calls
	// failed together (see the package documentation); BurstChecksPassed
	// and BurstChecksFailed, their verdicts so far (one still running is
	// in neither). One applied as a health check (it passed while the
	// breaker was closed, or it tripped the breaker) also counts in
	// ChecksPassed or ChecksFailed.
	BurstChecks       uint64
	BurstChecksPassed uint64
	BurstChecksFailed uint64

	// Batched commands were auto-pipelined to the database by this client
	// (Config.AutoPipeline, or an auto-pipeliner's) in Batches round trips:
	// Batched / Batches is the mean batch. Zero for a database on a
	// rediskit client, which batches them itself (see its own Stats).
	Batches, Batched uint64
}

// Stats are the client's databases and counters since it was created.
type Stats struct {
	// Active is the active database's name, "" when none is healthy.
	Active string
	// Pinned is true while SetActive's choice holds (no failback).
	Pinned bool
	// Databases are in failover order: highest weight first.
	Databases []DatabaseStats
	// UnavailableSince is when the last healthy database was lost (zero
	// while one is active); Exhausted says the failover attempts are used
	// up.
	UnavailableSince time.Time
	Exhausted        bool

	Switches      uint64 // active-database changes; start-up's first choice is not one
	ReadsRetried  uint64
	WritesRerun   uint64
	WritesRefused uint64
	EventsDropped uint64 // events a slow Observer missed
	// Cache are the client-side cache's counters (Config.Cache).
	Cache clientcache.Stats
}

type counters struct {
	switches                                 atomic.Uint64
	readsRetried, writesRerun, writesRefused atomic.Uint64
}

// Stats returns the client's databases and counters.
func (c *Client) Stats() Stats {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.route.Load()
	now := time.Now()
	st := Stats{
		Active:           nameOf(r.active),
		Pinned:           r.pinned,
		UnavailableSince: c.downSince,
		Exhausted:        c.exhausted,
		Switches:         c.stats.switches.Load(),
		ReadsRetried:     c.stats.readsRetried.Load(),
		WritesRerun:      c.stats.writesRerun.Load(),
		WritesRefused:    c.stats.writesRefused.Load(),
		EventsDropped:    c.events.q.Dropped(),
		Cache:            c.cache.Stats(),
	}
	for _, db := range c.dbs {
		failed, calls := db.det.window.sum(now)
		ds := DatabaseStats{
			Name:                db.name,
			Weight:              db.weight,
			Active:              db == r.active,
			State:               db.brk.get(),
			Checked:             db.checked,
			Healthy:             db.healthy,
			HealthySince:        db.healthySince,
			LastCheck:           db.lastCheck,
			LastProbeLatency:    db.lastLatency,
			LastError:           db.lastErr,
			ConsecutiveFailures: db.det.consecutive.Load(),
			WindowFailures:      failed,
			WindowCalls:         calls,
			Failures:            db.det.total.Load(),
			CoalescedFailures:   db.det.coalesced.Load(),
			Trips:               db.trips,
			ChecksPassed:        db.checksPassed,
			ChecksFailed:        db.checksFailed,
			BurstChecks:         db.burstChecks,
			BurstChecksPassed:   db.burstPassed,
			BurstChecksFailed:   db.burstFailed,
		}
		if db.batch != nil {
			bs := db.batch.Stats()
			ds.Batches, ds.Batched = bs.Batches, bs.Commands
		}
		if ds.State != Closed {
			ds.OpenedAt = db.brk.openedAt
			ds.GracePeriodEnds = db.brk.graceEnd()
		}
		st.Databases = append(st.Databases, ds)
	}
	return st
}

func nameOf(db *database) string {
	if db == nil {
		return ""
	}
	return db.name
}
