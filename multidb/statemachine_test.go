package multidb

import (
	"testing"
	"time"
)

// The vocabulary TestBreakerTransitions drives the breaker with, as the
// events the client sends it.

// open is traffic tripping the breaker (afterFailure).
func (b *breaker) open(now time.Time) bool {
	_, act := b.fire(evTripped, now)
	return act != actNone
}

// halfOpen is the health loop's tick before a check.
func (b *breaker) halfOpen(now time.Time) bool {
	_, act := b.fire(evGraceTick, now)
	return act != actNone
}

// checked is a health check's verdict (applyCheckLocked).
func (b *breaker) checked(healthy bool, now time.Time) (from BreakerState, changed bool) {
	ev := evCheckFailed
	if healthy {
		ev = evCheckPassed
	}
	from, act := b.fire(ev, now)
	return from, act != actNone
}

// TestTransition is the state machine's table, every state against every
// event, within the grace period and after it.
func TestTransition(t *testing.T) {
	const grace = 10 * time.Second
	opened := time.Unix(1000, 0)
	within, after := opened.Add(grace-time.Nanosecond), opened.Add(grace)
	tests := []struct {
		from BreakerState
		ev   breakerEvent
		now  time.Time
		to   BreakerState
		act  breakerAction
	}{
		{Closed, evTripped, within, Open, actOpened},
		{Closed, evCheckFailed, within, Open, actOpened},
		{Closed, evCheckPassed, after, Closed, actNone},
		{Closed, evGraceTick, after, Closed, actNone},
		{Closed, evForcedClose, within, Closed, actNone},

		{Open, evTripped, after, Open, actNone},
		{Open, evCheckFailed, after, Open, actNone},
		{Open, evCheckPassed, within, Open, actNone},
		{Open, evCheckPassed, after, Open, actNone}, // only a tick makes it half-open
		{Open, evGraceTick, within, Open, actNone},
		{Open, evGraceTick, after, HalfOpen, actHalfOpened},
		{Open, evForcedClose, within, Closed, actClosed},

		{HalfOpen, evTripped, after, HalfOpen, actNone}, // no traffic goes to it; the check decides
		{HalfOpen, evCheckFailed, after, Open, actOpened},
		{HalfOpen, evCheckPassed, after, Closed, actResumed},
		{HalfOpen, evGraceTick, after, HalfOpen, actNone},
		{HalfOpen, evForcedClose, after, Closed, actClosed},
	}
	seen := map[[2]int]bool{}
	for _, tt := range tests {
		seen[[2]int{int(tt.from), int(tt.ev)}] = true
		p := breakerPhase{state: tt.from, openedAt: opened}
		got, act := transition(p, tt.ev, tt.now, grace)
		if got.state != tt.to || act != tt.act {
			t.Errorf("%s + %s at opened%+v: %s, %s; want %s, %s", tt.from, tt.ev, tt.now.Sub(opened), got.state, act, tt.to, tt.act)
		}
		wantOpenedAt := opened
		if act == actOpened {
			wantOpenedAt = tt.now
		}
		if !got.openedAt.Equal(wantOpenedAt) {
			t.Errorf("%s + %s: opened at %v, want %v", tt.from, tt.ev, got.openedAt, wantOpenedAt)
		}
	}
	for s := Closed; s <= HalfOpen; s++ {
		for ev := range numBreakerEvents {
			if !seen[[2]int{int(s), int(ev)}] {
				t.Errorf("the table misses %s + %s", s, ev)
			}
		}
	}
}

// FuzzBreaker drives a breaker with any sequence of events, at times that
// never go back, and checks every step against the machine's invariants:
//
//   - the state is one of the three, and the breaker reports what
//     transition decided;
//   - an action is taken exactly when the phase changed, and it matches
//     the move: opened → Open stamped now; half-opened only from Open, by
//     a tick at or after the grace period's end; resumed only from
//     HalfOpen by a passed check; closed only by an operator's choice;
//   - an Open breaker always has its opening time, never in the future,
//     and keeps it until it leaves Open;
//   - Closed is left only by traffic or a failed check, and an Open
//     breaker never closes on a passed check without going half-open.
//
// Each input byte is one step: its low 3 bits the event, the rest how
// far the clock moves first, in units of a quarter of the grace period.
func FuzzBreaker(f *testing.F) {
	f.Add([]byte{0, 4 << 3, 3, 2})                    // trip, wait out the grace period, tick, pass
	f.Add([]byte{1, 3, 1<<3 | 3, 4<<3 | 3, 1, 4})     // failed check, early ticks, half-open, fail, force
	f.Add([]byte{0, 0, 0, 2, 2, 4, 4, 3, 3, 0xff, 7}) // repeats, the largest step, an unknown event
	const grace = 4 * time.Second
	f.Fuzz(func(t *testing.T, steps []byte) {
		now := time.Unix(1000, 0)
		var b breaker
		b.grace = grace
		for i, s := range steps {
			ev := breakerEvent(s&7) % numBreakerEvents
			now = now.Add(time.Duration(s>>3) * grace / 4)
			before := breakerPhase{state: b.get(), openedAt: b.openedAt}
			from, act := b.fire(ev, now)
			after := breakerPhase{state: b.get(), openedAt: b.openedAt}
			fail := func(why string) {
				t.Fatalf("step %d: %s + %s at %v (opened at %v) → %s (opened at %v), %s: %s",
					i, before.state, ev, now, before.openedAt, after.state, after.openedAt, act, why)
			}
			if from != before.state {
				fail("fire reported another state before")
			}
			if want, wantAct := transition(before, ev, now, grace); want != after || wantAct != act {
				fail("the breaker is not what transition decided")
			}
			if after.state < Closed || after.state > HalfOpen {
				fail("not a state")
			}
			if (act == actNone) != (before == after) {
				fail("an action without a change, or a change without one")
			}
			if after.state == Open && (after.openedAt.IsZero() || after.openedAt.After(now)) {
				fail("open without its opening time")
			}
			if before.state == Open && after.state == Open && !after.openedAt.Equal(before.openedAt) {
				fail("an open breaker's opening time moved")
			}
			if before.state == Closed && after.state != Closed && ev != evTripped && ev != evCheckFailed {
				fail("closed left by something other than traffic or a failed check")
			}
			if before.state == Open && after.state == Closed && ev != evForcedClose {
				fail("open closed without going half-open")
			}
			switch act {
			case actOpened:
				if before.state == Open || after.state != Open || !after.openedAt.Equal(now) {
					fail("opened, but not a move into Open stamped now")
				}
			case actHalfOpened:
				if before.state != Open || after.state != HalfOpen || ev != evGraceTick || now.Before(before.openedAt.Add(grace)) {
					fail("half-open other than by a tick after the grace period")
				}
			case actResumed:
				if before.state != HalfOpen || after.state != Closed || ev != evCheckPassed {
					fail("resumed other than by a passed check in half-open")
				}
			case actClosed:
				if before.state == Closed || after.state != Closed || ev != evForcedClose {
					fail("closed other than by an operator's choice")
				}
			}
			if after.state == HalfOpen && before.state != HalfOpen && act != actHalfOpened {
				fail("half-open entered without its action")
			}
		}
		// Whatever happened, an operator's choice closes it, and so does a
		// passed check once the grace period is over.
		var c breaker
		c.grace = grace
		c.state.Store(b.state.Load())
		c.openedAt = b.openedAt
		c.fire(evForcedClose, now)
		if c.get() != Closed {
			t.Fatalf("forced close from %s left %s", b.get(), c.get())
		}
		b.fire(evCheckFailed, now)
		later := now.Add(grace)
		b.fire(evGraceTick, later)
		b.fire(evCheckPassed, later)
		if b.get() != Closed {
			t.Fatalf("fail, wait out the grace period, tick, pass: %s", b.get())
		}
	})
}
