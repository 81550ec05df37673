package multidb

import (
	"fmt"
	"sync/atomic"
	"time"
)

// BreakerState is the state of a database's circuit breaker.
type BreakerState int32

const (
	// Closed: the database may be active.
	Closed BreakerState = iota
	// Open: the database failed; it gets no traffic until its grace period
	// has passed and a health check closes the breaker again.
	Open
	// HalfOpen: the grace period has passed; the next health check decides
	// (Closed if it passes, Open for another grace period if not).
	HalfOpen
)

var breakerNames = [...]string{"closed", "open", "half-open"}

func (s BreakerState) String() string {
	if s >= 0 && int(s) < len(breakerNames) {
		return breakerNames[s]
	}
	return fmt.Sprintf("BreakerState(%d)", int(s))
}

// breaker is one database's circuit breaker. Health checks, traffic and
// manual control drive it (see the package documentation for why it is
// not gobreaker); its methods are called with the Client's mutex held.
// state is also readable without the lock.
type breaker struct {
	state    atomic.Int32 // a BreakerState
	openedAt time.Time
	grace    time.Duration
}

func (b *breaker) get() BreakerState { return BreakerState(b.state.Load()) }

func (b *breaker) set(s BreakerState) { b.state.Store(int32(s)) }

// open moves the breaker to Open at now, from any state; it reports
// whether the state changed. An Open breaker keeps its opening time.
func (b *breaker) open(now time.Time) bool {
	if b.get() == Open {
		return false
	}
	b.set(Open)
	b.openedAt = now
	return true
}

// graceEnd is when an Open breaker may go half-open.
func (b *breaker) graceEnd() time.Time { return b.openedAt.Add(b.grace) }

// halfOpen moves an Open breaker whose grace period has passed to
// HalfOpen, and reports whether it did.
func (b *breaker) halfOpen(now time.Time) bool {
	if b.get() != Open || now.Before(b.graceEnd()) {
		return false
	}
	b.set(HalfOpen)
	return true
}

// checked applies a health check's verdict: a failed check opens a Closed
// or HalfOpen breaker; a passed one closes a HalfOpen breaker. An Open
// breaker within its grace period stays Open either way. It returns the
// state before and whether the state changed.
func (b *breaker) checked(healthy bool, now time.Time) (from BreakerState, changed bool) {
	from = b.get()
	switch {
	case !healthy && from != Open:
		b.open(now)
		return from, true
	case healthy && from == HalfOpen:
		b.set(Closed)
		return from, true
	}
	return from, false
}

// The trip rules count failure events, not failed calls. One event (a
// proxy or a server resetting its connections, a network hiccup, a server
// stalled by a slow command or a fork) fails every call in flight at once,
// and N calls failing together are one piece of evidence that the database
// is down, not N. So a failure counts only if its call started at or after
// the moment the current event's first failure was seen; the failure of a
// call that was already in flight then belongs to that event and is not
// counted again (it is coalesced). A database that is really down fails the
// calls started after that too, and each such round is another event: a
// dead database still trips, after ConsecutiveFailures rounds.
//
// The rule needs no window or constant of its own: which calls belong to an
// event follows from when they started, so it holds however long the calls
// take (a reset hits calls of a microsecond and calls of a second alike),
// and however late a loaded machine delivers their errors.
//
// Successes are not coalesced: every one ends a run of failures, as it
// always did, including that of a call which was in flight when the event
// began. A reply is the database answering, and an event that does not
// stop it answering is no outage: a proxy that resets its connections one
// by one (the lab's took 15 ms to reset 16 under -race on a loaded 2-core
// machine) fails, meanwhile, some calls started after its first reset, on
// connections it has not reached yet, while the others keep succeeding.
// Ignoring those successes would count that one reset as several events in
// a row.

// judge is the rule, as a pure function: whether a failure, seen at now,
// of a call that started at start is a new failure event, given since,
// when the current event began (the moment its first failure was seen;
// zero before the first event). It returns that, and when the current
// event begins after this failure: now for a new event (never before
// since), since for a failure that belongs to it.
//
// A start equal to since counts as after it: the call started when the
// failure was seen, not while it was in flight, so a call made right after
// another failed is never coalesced with it, even on a coarse clock.
func judge(start, now, since time.Time) (isNew bool, next time.Time) {
	if start.Before(since) {
		return false, since
	}
	if now.Before(since) { // a clock never goes back; a caller's might
		return true, since
	}
	return true, now
}

// detector counts one database's traffic failures for the two trip rules,
// by event (see judge): ConsecutiveFailures events in a row (the fast
// path), or a rate of events over a sliding window (the rate path). It is
// lock-free and allocates nothing: every call records its outcome here, a
// success as before (one load, and a window count), a failure with a
// compare-and-swap; the only cost the rule adds to a call is reading the
// clock when it starts (Client.run).
type detector struct {
	consecutive atomic.Int64 // failure events in a row
	// since is when the current event began, on the window's monotonic
	// clock (see stamp); 0: no event yet. It only moves forward, by
	// compare-and-swap to a new event's time, so that of concurrent
	// failures of calls in flight together exactly one counts.
	since     atomic.Int64
	total     atomic.Uint64 // failed calls since the client started
	coalesced atomic.Uint64 // of those, the ones an earlier event had counted
	window    window
}

// at is the time of a since value.
func (d *detector) at(since int64) time.Time {
	if since == 0 {
		return time.Time{}
	}
	return d.window.base.Add(time.Duration(since - 1))
}

// stamp is the since value of t: 1 + nanoseconds from the window's base (0
// means none; nothing the client times is earlier than the base, which is
// when the database was added).
func (d *detector) stamp(t time.Time) int64 { return max(int64(t.Sub(d.window.base)), 0) + 1 }

// success records a call that reached the database (a reply, error
// replies included), seen at now: it ends the run of failures, whenever it
// started (see above).
func (d *detector) success(now time.Time) {
	if d.consecutive.Load() != 0 {
		d.consecutive.Store(0)
	}
	d.window.add(now, false)
}

// failure records a connection failure or a timeout of a call that started
// at start, seen at now. It returns the failure events in a row and the
// window's failure events and calls, as they are once this failure is
// counted (counted: it was a new event) or coalesced into the current
// event (not counted, and the counts are the current ones).
func (d *detector) failure(start, now time.Time) (inARow, failed, calls int64, counted bool) {
	d.total.Add(1)
	for {
		since := d.since.Load()
		isNew, next := judge(start, now, d.at(since))
		if !isNew {
			d.coalesced.Add(1)
			failed, calls = d.window.sum(now)
			return d.consecutive.Load(), failed, calls, false
		}
		if d.since.CompareAndSwap(since, d.stamp(next)) {
			break
		}
		// Another failure began an event meanwhile: judge again against it.
	}
	inARow = d.consecutive.Add(1)
	d.window.add(now, true)
	failed, calls = d.window.sum(now)
	return inARow, failed, calls, true
}

// reset forgets the failures (a breaker that closes at now starts afresh).
// Calls that started before now were in flight while the database was
// failing: their failures belong to what opened the breaker, and are not
// counted against it again.
func (d *detector) reset(now time.Time) {
	d.consecutive.Store(0)
	d.window.reset()
	for v := d.stamp(now); ; {
		old := d.since.Load()
		if old >= v || d.since.CompareAndSwap(old, v) {
			return
		}
	}
}

// windowBuckets is how many buckets the sliding window has: it slides by a
// tenth of its length.
const windowBuckets = 10

// window counts calls and failures over the last FailureWindow in
// windowBuckets buckets (the detector adds a failure event as one failed
// call, and the calls it coalesced not at all), each stamped with the period it counts. Counts
// are atomic; a bucket is reused for a new period by whoever first sees
// the old stamp, and a count added by another goroutine at that instant
// may be lost: the rate is an estimate, good to about one call per bucket
// turnover.
type window struct {
	base    time.Time // periods count from here, on the monotonic clock
	width   int64     // nanoseconds per bucket
	buckets [windowBuckets]bucket
}

type bucket struct {
	period atomic.Int64 // the period counted (see window.period), 0: unused
	calls  atomic.Int64
	failed atomic.Int64
}

func newWindow(length time.Duration) window {
	w := int64(length) / windowBuckets
	if w <= 0 {
		w = 1
	}
	return window{base: time.Now(), width: w}
}

// period numbers the bucket-wide periods from 1.
func (w *window) period(now time.Time) int64 { return int64(now.Sub(w.base))/w.width + 1 }

func (w *window) add(now time.Time, failed bool) {
	p := w.period(now)
	b := &w.buckets[p%windowBuckets]
	if old := b.period.Load(); old != p {
		if b.period.CompareAndSwap(old, p) {
			b.calls.Store(0)
			b.failed.Store(0)
		}
	}
	b.calls.Add(1)
	if failed {
		b.failed.Add(1)
	}
}

func (w *window) sum(now time.Time) (failed, calls int64) {
	p := w.period(now)
	for i := range w.buckets {
		b := &w.buckets[i]
		if bp := b.period.Load(); bp > 0 && bp > p-windowBuckets && bp <= p {
			calls += b.calls.Load()
			failed += b.failed.Load()
		}
	}
	return failed, calls
}

func (w *window) reset() {
	for i := range w.buckets {
		w.buckets[i].period.Store(0)
	}
}

// tripRule decides from a failure's counts (failure events, see judge)
// whether the breaker trips, and says why.
type tripRule struct {
	consecutive int     // <= 0: the fast path is off
	minFailures int     // <= 0: the rate path is off
	rate        float64 // failures / calls
}

func (r tripRule) trips(inARow, failed, calls int64) (string, bool) {
	if r.consecutive > 0 && inARow >= int64(r.consecutive) {
		return fmt.Sprintf("%d connection failures or timeouts in a row (calls in flight together count once)", inARow), true
	}
	if r.minFailures > 0 && failed >= int64(r.minFailures) && calls > 0 &&
		float64(failed) >= r.rate*float64(calls) {
		return fmt.Sprintf("%d of %d calls failed in the failure window (%.0f%%; calls in flight together count once)", failed, calls, 100*float64(failed)/float64(calls)), true
	}
	return "", false
}
