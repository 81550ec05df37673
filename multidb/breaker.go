package multidb

import (
	"fmt"
	"sync/atomic"
	"time"
)

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

// A burst (an event that failed more than one call) is one count for the
// trip rules, however many calls it failed, and that is right for a blip;
// but a real outage fails every call in flight as well, and counting its
// burst once means waiting for more rounds of failures (for a stall, a read
// timeout each) before the breaker trips. So a burst asks at once for a
// second, independent sign, and takes the first that can tell, from either
// of two sources of the same kind: a health check of the database run out
// of schedule (the burst check: burst.go), and the calls started
// after the burst began. Both are new requests, made after the burst; both
// settle it the same way:
//
//   - the database answers (a call's reply, a passed check): it was a
//     blip; nothing trips, and no later failure is taken as this burst's
//     second sign;
//   - a timeout, or a failure to connect (or a probe's own failure: a
//     READONLY reply to a write probe, a lagging replica), with no answer
//     since the burst began: two signs of one outage; the breaker trips;
//   - a lost connection (a reset, EOF) settles nothing: it may be the burst
//     itself, reaching connections the check or a later call had just
//     taken (a proxy resetting its connections one by one does that). A
//     dead database then refuses the next connections at once, which is a
//     second sign, and the trip rules count such rounds in milliseconds.
//
// The calls and the check race to settle it, and which wins is a matter of
// scheduling; that is why both count. A call that times out trips the
// breaker on its own goroutine, so it and every later call caught by the
// same outage move on (a read re-run on the next database), where waiting
// for the check's goroutine to be scheduled would let a worker whose call
// timed out a moment earlier send one more call to the stalled database
// and wait one more timeout for it. The check settles it when no call does
// (traffic that came in one burst and stopped).
//
// A lone failure asks for nothing: its event was counted in full (no
// failure was coalesced, no evidence set aside), and failures one call at
// a time are what ConsecutiveFailures counts. A check per lone failure
// would also run one for every stale pooled connection a server or a load
// balancer closed while idle, a common and harmless failure.

// asks is the rule for asking, as a pure function: whether a failure, of
// the event that began at event (counted: it began it), asks for a burst
// check, given asked, the event the last check was asked for (zero: none).
// Only a failure that joins an event already counted does (the event has
// failed a second call: it is a burst), and only the first such of its
// event; an event the last check was asked for, or one older, asks no more.
// (Two events that began within one tick of a coarse clock have one begin
// time, and share the check the first asked for, which began within that
// tick.)
func asks(counted bool, event, asked time.Time) bool {
	return !counted && asked.Before(event)
}

// confirms is the rule for a call as the second sign, as a pure function:
// whether a failure of a call that started at start, decisive (a timeout or
// a failure to connect, not a lost connection), settles the burst that
// began at burst (zero: none yet) as an outage, given answered, when the
// database was last seen answering after a failure (a reply that ended a
// run of failures, a passed health check; zero: never). The call must
// have started at or after the burst began (the judge's convention: it
// was not in flight when the burst hit), and nothing answered since; an
// answer at the instant the burst began counts (no trip on a tie).
func confirms(decisive bool, start, burst, answered time.Time) bool {
	return decisive && !burst.IsZero() && !start.Before(burst) && answered.Before(burst)
}

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=burstOutcome -linecomment

// burstOutcome is what a burst check's verdict does.
type burstOutcome int

const (
	// burstPassed: the check passed; the burst was a blip. It counts as a
	// passed health check, and nothing trips.
	burstPassed burstOutcome = iota // passed
	// burstTripped: the check failed decisively, and nothing answered since
	// the burst began: two signs of one outage. The breaker opens, as for
	// any failed health check.
	burstTripped // tripped
	// burstAnswered: the check failed, but the database answered after the
	// burst began: the failures did not stop it answering, which is no
	// outage. Nothing trips.
	burstAnswered // answered
	// burstInconclusive: the check failed only by lost connections, which
	// may be the burst itself (see above). Nothing trips; the trip rules
	// and the scheduled checks carry on.
	burstInconclusive // inconclusive
	// burstMoot: the breaker is no longer closed (the trip rules or a
	// health check opened it meanwhile): the verdict is not needed.
	burstMoot // moot
)

// burstVerdict is the rule for a burst check's verdict, as a pure
// function: healthy is the check's verdict and decisive whether one of its
// failed probes failed otherwise than by a lost connection; state is the
// breaker's when the verdict arrives, burst when the burst began, answered
// as for confirms.
func burstVerdict(healthy, decisive bool, state BreakerState, burst, answered time.Time) burstOutcome {
	switch {
	case state != Closed:
		return burstMoot
	case healthy:
		return burstPassed
	case !answered.Before(burst):
		return burstAnswered
	case !decisive:
		return burstInconclusive
	}
	return burstTripped
}

// detector counts one database's traffic failures for the two trip rules,
// by event (see judge): ConsecutiveFailures events in a row (the fast
// path), or a rate of events over a sliding window (the rate path); and it
// finds bursts and their second signs (see asks and confirms). It is
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
	since atomic.Int64
	// asked is the event (a since value) the last burst check was asked
	// for; 0: none. It only moves forward, by compare-and-swap, so that of
	// the concurrent failures of one burst exactly one asks.
	asked atomic.Int64
	// answered is when the database was last seen answering after a
	// failure (a stamp; 0: never): a success that ended a run of failures,
	// a passed health check, the breaker closing. Only those write it, so a
	// success costs what it did when nothing failed.
	answered  atomic.Int64
	total     atomic.Uint64 // failed calls since the client started
	coalesced atomic.Uint64 // of those, the ones an earlier event had counted
	window    window
}

// tally is what the detector makes of one failure: the counts the trip
// rules look at, as they are once it is counted (counted: it began an
// event) or coalesced into the current event (the counts are the current
// ones); event, the since value of the event it belongs to; burst, whether
// this failure asks for a burst check of that event (see asks); confirms,
// whether it settles the last burst as an outage (see confirms).
type tally struct {
	inARow, failed, calls    int64
	counted, burst, confirms bool
	event                    int64
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
		advance(&d.answered, d.stamp(now))
	}
	d.window.add(now, false)
}

// advance moves v forward to at least to.
func advance(v *atomic.Int64, to int64) {
	for {
		old := v.Load()
		if old >= to || v.CompareAndSwap(old, to) {
			return
		}
	}
}

// failure records a connection failure or a timeout of a call that started
// at start, seen at now; decisive says it was a timeout or a failure to
// connect, not a lost connection (see tally).
func (d *detector) failure(start, now time.Time, decisive bool) tally {
	d.total.Add(1)
	// Against the last burst asked for before this failure: if this one
	// asks for its own event, that burst is settled by calls started
	// after the event began, not by those in flight in it.
	confirmed := confirms(decisive, start, d.at(d.asked.Load()), d.at(d.answered.Load()))
	var since int64
	for {
		since = d.since.Load()
		isNew, next := judge(start, now, d.at(since))
		if !isNew {
			d.coalesced.Add(1)
			t := tally{inARow: d.consecutive.Load(), event: since, confirms: confirmed}
			t.failed, t.calls = d.window.sum(now)
			t.burst = d.ask(since)
			return t
		}
		v := d.stamp(next)
		if d.since.CompareAndSwap(since, v) {
			since = v
			break
		}
		// Another failure began an event meanwhile: judge again against it.
	}
	t := tally{inARow: d.consecutive.Add(1), counted: true, event: since, confirms: confirmed}
	d.window.add(now, true)
	t.failed, t.calls = d.window.sum(now)
	return t
}

// answer records that the database answered at t otherwise than by a
// call's reply (a passed health check's last probe); a zero t records
// nothing.
func (d *detector) answer(t time.Time) {
	if !t.IsZero() {
		advance(&d.answered, d.stamp(t))
	}
}

// ask reports whether a failure coalesced into event (a since value) is
// the one that asks for its burst check (see asks): of concurrent ones,
// exactly one is.
func (d *detector) ask(event int64) bool {
	for {
		asked := d.asked.Load()
		if !asks(false, d.at(event), d.at(asked)) {
			return false
		}
		if d.asked.CompareAndSwap(asked, event) {
			return true
		}
	}
}

// reset forgets the failures (a breaker that closes at now starts afresh).
// Calls that started before now were in flight while the database was
// failing: their failures belong to what opened the breaker, and are not
// counted against it again, nor taken for a burst (that event counts as
// asked for), nor for the second sign of one (the database answered the
// check that closed the breaker).
func (d *detector) reset(now time.Time) {
	d.consecutive.Store(0)
	d.window.reset()
	v := d.stamp(now)
	advance(&d.since, v)
	advance(&d.asked, v)
	advance(&d.answered, v)
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
