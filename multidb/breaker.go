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

// detector counts one database's traffic failures (connection errors and
// timeouts) for the two trip rules: ConsecutiveFailures in a row (the fast
// path), or a failure rate over a sliding window (the rate path). It is
// lock-free: every call records its outcome here.
type detector struct {
	consecutive atomic.Int64
	total       atomic.Uint64 // failures counted since the client started
	window      window
}

// success records a call that reached the database.
func (d *detector) success(now time.Time) {
	if d.consecutive.Load() != 0 {
		d.consecutive.Store(0)
	}
	d.window.add(now, false)
}

// failure records a connection failure or a timeout and returns the
// failures in a row and the window's failures and calls.
func (d *detector) failure(now time.Time) (inARow int64, failed, calls int64) {
	d.total.Add(1)
	inARow = d.consecutive.Add(1)
	d.window.add(now, true)
	failed, calls = d.window.sum(now)
	return inARow, failed, calls
}

// reset forgets the failures (a breaker that closes starts afresh).
func (d *detector) reset() {
	d.consecutive.Store(0)
	d.window.reset()
}

// windowBuckets is how many buckets the sliding window has: it slides by a
// tenth of its length.
const windowBuckets = 10

// window counts calls and failures over the last FailureWindow in
// windowBuckets buckets, each stamped with the period it counts. Counts
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

// tripRule decides from a failure's counts whether the breaker trips, and
// says why.
type tripRule struct {
	consecutive int     // <= 0: the fast path is off
	minFailures int     // <= 0: the rate path is off
	rate        float64 // failures / calls
}

func (r tripRule) trips(inARow, failed, calls int64) (string, bool) {
	if r.consecutive > 0 && inARow >= int64(r.consecutive) {
		return fmt.Sprintf("%d connection failures or timeouts in a row", inARow), true
	}
	if r.minFailures > 0 && failed >= int64(r.minFailures) && calls > 0 &&
		float64(failed) >= r.rate*float64(calls) {
		return fmt.Sprintf("%d of %d calls failed in the failure window (%.0f%%)", failed, calls, 100*float64(failed)/float64(calls)), true
	}
	return "", false
}
