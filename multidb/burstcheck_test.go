package multidb

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// armedProbe is PING, or a panic once armed.
func armedProbe(armed *atomic.Bool) Probe {
	return func(ctx context.Context, db redis.UniversalClient) error {
		if armed.Load() {
			panic("probe bug")
		}
		return db.Ping(ctx).Err()
	}
}

// TestBurstCheck makes one burst (16 calls in flight on the active
// database, its connections reset at once) and no call after it, so the
// health check the burst asks for decides alone (the next scheduled check
// is an hour away): a database that answers passes it, and nothing
// switches; a database cut off from the client (black-holed as its
// connections reset) fails it when its probe times out, and traffic moves
// at once, a ProbeTimeout after the burst; a probe that panics fails it
// too. The calls of the burst get their errors as they are, before any
// verdict: the check runs beside them.
func TestBurstCheck(t *testing.T) {
	// Shorter than the database clients' 2 s timeouts: the check's probe
	// times out first.
	const probeTimeout = 500 * time.Millisecond
	tests := []struct {
		name     string
		fault    func(n *lab.Node, armed *atomic.Bool) // before the reset
		switches bool
		lastErr  string // in db0's LastError after a failed check
	}{
		{"the database answers: passes, no switch", func(*lab.Node, *atomic.Bool) {}, false, ""},
		{"the database is cut off: the probe times out, traffic moves", func(n *lab.Node, _ *atomic.Bool) { n.BlackHole() }, true, "timeout"},
		{"the probe panics: the check fails, traffic moves", func(_ *lab.Node, armed *atomic.Bool) { armed.Store(true) }, true, "panicked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var armed atomic.Bool
			nodes, c, log := burstClientWith(t, Config{ProbeTimeout: probeTimeout, Probe: armedProbe(&armed)})
			ctx := testkit.Context(t, 30*time.Second)
			const inFlight = 16
			before := stateOf(c, "db0")

			// Reads and writes; only writes where traffic moves, as a read
			// caught by the switch would block on db1 for its 20 s.
			errs := inFlightTogether(t, ctx, c, nodes[0], inFlight, !tt.switches)
			tt.fault(nodes[0], &armed)
			resetAt := time.Now()
			nodes[0].ResetConnections()
			for i, err := range collect(t, ctx, errs, inFlight) {
				// A write the switch caught in flight is refused as such (the
				// panicking probe fails the check while the reset is still
				// reaching the calls); any other call gets its error as it is.
				if !connFailure(err) && !(tt.switches && errors.Is(err, ErrDatabaseChanged)) {
					t.Errorf("call %d: %v, want the connection error", i, err)
				}
			}
			delivered := time.Since(resetAt) // the burst's calls all returned
			testkit.WaitFor(t, 10*time.Second, "the burst check's verdict", func() bool {
				st := stateOf(c, "db0")
				return st.BurstChecksPassed+st.BurstChecksFailed > 0
			})
			st := stateOf(c, "db0")
			if st.BurstChecks != 1 {
				t.Fatalf("%d burst checks for one burst of %d failures, want 1", st.BurstChecks, inFlight)
			}
			if !tt.switches {
				if st.BurstChecksPassed != 1 || st.ChecksPassed != before.ChecksPassed+1 || st.State != Closed || c.Active() != "db0" {
					t.Fatalf("db0: burst check passed %d, checks passed %d → %d, %s, active %q; want a passed check, closed, db0 active",
						st.BurstChecksPassed, before.ChecksPassed, st.ChecksPassed, st.State, c.Active())
				}
				if v, err := c.Get(ctx, "who").Result(); err != nil || v != "db0" {
					t.Fatalf("the next call: %q, %v; want it served by db0", v, err)
				}
				log.flush(t, c)
				if sw := log.switches(); len(sw) != 0 {
					t.Fatalf("switches %v", sw)
				}
				return
			}
			sw := log.awaitSwitches(t, 1)
			if len(sw) != 1 || sw[0].New != "db1" || sw[0].Reason != ReasonAutomatic || !strings.Contains(sw[0].Err.Error(), "health check run at once failed too") {
				t.Fatalf("switches %v, want one automatic switch to db1 by the burst check", sw)
			}
			if st.BurstChecksFailed != 1 || st.ChecksFailed != before.ChecksFailed+1 || st.Trips != 1 || st.State != Open || !strings.Contains(st.LastError, tt.lastErr) {
				t.Fatalf("db0: burst check failed %d, checks failed %d → %d, %d trips, %s, last error %q; want a failed check (%s) that opened the breaker",
					st.BurstChecksFailed, before.ChecksFailed, st.ChecksFailed, st.Trips, st.State, st.LastError, tt.lastErr)
			}
			// The check is the burst's, and decided alone: it started after
			// the reset, ran one probe (HealthyAll stops at the first
			// failure), and the switch followed its verdict.
			took := sw[0].Time.Sub(resetAt)
			started := st.LastCheck.Sub(resetAt)
			t.Logf("reset → switch %v: the burst's calls returned within %v, the check started %v after the reset, its probe took %v",
				took.Round(100*time.Microsecond), delivered.Round(100*time.Microsecond), started.Round(100*time.Microsecond), st.LastProbeLatency.Round(100*time.Microsecond))
			if started < 0 || sw[0].Time.Before(st.LastCheck.Add(st.LastProbeLatency)) || !strings.Contains(sw[0].Err.Error(), "0 of 1 probes passed") {
				t.Fatalf("the check started %v after the reset and took %v, the switch came %v after the reset (%v): not this burst's check deciding",
					started, st.LastProbeLatency, took, sw[0].Err)
			}
			if tt.lastErr == "timeout" {
				// It started at once: before a timeout of anything could
				// have passed (the next scheduled check is an hour away).
				// And traffic moved on its probe's timeout, not before it
				// (timers do not fire early), and before a second timeout
				// could have passed. These bounds tell one timeout from
				// two, which is what matters here; the time a loaded
				// machine adds is a few milliseconds (logged), far inside.
				if started >= probeTimeout || took < probeTimeout || took >= 2*probeTimeout {
					t.Fatalf("the check started %v after the reset and traffic moved %v after it; want the check within one probe timeout (%v) and the switch between one and two",
						started, took, probeTimeout)
				}
			}
			nodes[0].Restore()
		})
	}
}

// TestLoneFailureAsksNoCheck fails one call on the active database (its
// connection reset, nothing else in flight): one failure event, no burst,
// so no health check runs out of schedule (the failing call would have
// counted it before returning), and nothing switches.
func TestLoneFailureAsksNoCheck(t *testing.T) {
	nodes, c, log := burstClient(t)
	ctx := testkit.Context(t, 30*time.Second)
	errs := inFlightTogether(t, ctx, c, nodes[0], 1, false)
	nodes[0].ResetConnections()
	if err := collect(t, ctx, errs, 1)[0]; !connFailure(err) {
		t.Fatalf("the call: %v, want the connection error", err)
	}
	if st := stateOf(c, "db0"); st.BurstChecks != 0 || st.ConsecutiveFailures != 1 || st.State != Closed || c.Active() != "db0" {
		t.Fatalf("db0: %d burst checks, %d failures in a row, %s, active %q; want none, 1, closed, db0",
			st.BurstChecks, st.ConsecutiveFailures, st.State, c.Active())
	}
	log.flush(t, c)
	if sw := log.switches(); len(sw) != 0 {
		t.Fatalf("switches %v", sw)
	}
}

// TestBurstCheckStops stops a burst check whose probe waits on a
// black-holed database, by Close and by RemoveDatabase: each returns once
// the probe in flight ends (go-redis does not watch a context while it
// reads: its ProbeTimeout bounds it), not once the check would have
// decided (HealthyAny: every one of the 3 probes must fail), and no
// verdict is applied after it. goleak (TestMain) finds the goroutine if it
// outlived them.
func TestBurstCheckStops(t *testing.T) {
	const probeTimeout = 500 * time.Millisecond
	for _, stop := range []string{"Close", "RemoveDatabase"} {
		t.Run(stop, func(t *testing.T) {
			nodes, c, log := burstClientWith(t, Config{ProbeTimeout: probeTimeout, HealthPolicy: HealthyAny})
			ctx := testkit.Context(t, 30*time.Second)
			errs := inFlightTogether(t, ctx, c, nodes[0], 4, false)
			nodes[0].BlackHole()
			resetAt := time.Now()
			nodes[0].ResetConnections()
			collect(t, ctx, errs, 4)
			testkit.WaitFor(t, 5*time.Second, "the burst check", func() bool { return stateOf(c, "db0").BurstChecks == 1 })
			// Nothing else dials db0 now: a connection through its proxy is
			// the check's, its probe waiting on the black hole (an earlier
			// probe may have failed at once, caught by the reset).
			testkit.WaitFor(t, 5*time.Second, "the check's probe on the black hole", func() bool { return nodes[0].Proxy().Connections() > 0 })
			stopAt := time.Now()
			var err error
			switch stop {
			case "Close":
				err = c.Close()
			case "RemoveDatabase":
				err = c.RemoveDatabase("db0")
			}
			stopped := time.Since(resetAt)
			if err != nil {
				t.Fatal(err)
			}
			// The check's second probe would end no earlier than two probe
			// timeouts after the reset: stopping before that is stopping
			// within the first.
			t.Logf("%s returned %v after the reset, %v after it was called", stop, stopped.Round(100*time.Microsecond), time.Since(stopAt).Round(100*time.Microsecond))
			if stopped >= 2*probeTimeout {
				t.Fatalf("%s returned %v after the reset, not within the probe in flight (%v)", stop, stopped, probeTimeout)
			}
			for _, ev := range log.of(EventBreakerChanged) {
				if ev.Database == "db0" {
					t.Fatalf("a verdict was applied: %v", ev)
				}
			}
			if stop == "Close" {
				if st := stateOf(c, "db0"); st.BurstChecksPassed+st.BurstChecksFailed != 0 || st.Trips != 0 {
					t.Fatalf("db0 after Close: %+v; want no verdict", st)
				}
			}
			nodes[0].Restore()
		})
	}
}
