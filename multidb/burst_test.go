package multidb

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// burstClient starts two standalone servers behind proxies, each with key
// "who" naming it, and a client with the default trip rules (3 in a row,
// or 10 failures at 10 % in 2 s) whose health checks run only at start, so
// that traffic alone can move it. Nothing here waits for a timeout, so the
// probes and the database clients get 2 s ones: on a loaded machine a
// timeout of theirs would be a failure the test did not make.
func burstClient(t *testing.T) ([]*lab.Node, *Client, *eventLog) {
	t.Helper()
	nodes := standalone(t, 2, lab.Config{Proxy: true})
	nameNodes(t, nodes)
	log := &eventLog{}
	cfg := fast(Config{HealthCheckInterval: time.Hour, ProbeTimeout: 2 * time.Second, Observer: log.observe})
	for i, n := range nodes {
		o := n.Options()
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
		cfg.Databases = append(cfg.Databases, Database{Name: "db" + strconv.Itoa(i), Weight: float64(10 - 5*i), Options: o})
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	testkit.WaitFor(t, 10*time.Second, "the first health checks", func() bool {
		return stateOf(c, "db0").Checked && stateOf(c, "db1").Checked
	})
	if a := c.Active(); a != "db0" {
		t.Fatalf("active %q after the first health checks, want db0", a)
	}
	return nodes, c, log
}

// blockedClients is the number of clients the server holds blocked (INFO
// clients, on its own port).
func blockedClients(t *testing.T, n *lab.Node) int {
	t.Helper()
	s, err := n.Do(context.Background(), "INFO", "clients").Text()
	if err != nil {
		t.Fatal(err)
	}
	v, err := strconv.Atoi(redisinfo.ParseInfo(s)["blocked_clients"])
	if err != nil {
		t.Fatalf("blocked_clients: %v", err)
	}
	return v
}

// inFlightTogether starts count calls through c that block on n's server
// (with reads: BLPOP and XREAD BLOCK alternately, a write and a read; else
// BLPOP only) on keys nothing writes, and returns once the server holds
// all of them blocked: they are in flight together, however loaded the
// machine, and stay so until their connections are reset. Their errors
// arrive on the channel. Nothing else may block on n's server.
func inFlightTogether(t *testing.T, ctx context.Context, c *Client, n *lab.Node, count int, reads bool) <-chan error {
	t.Helper()
	// The server lets go of the clients of an earlier reset once it reads
	// their connections' end, which may come after their calls returned.
	testkit.WaitFor(t, 5*time.Second, "no call blocked on "+n.Name(), func() bool { return blockedClients(t, n) == 0 })
	errs := make(chan error, count)
	for i := range count {
		go func() {
			if reads && i%2 == 1 {
				errs <- c.XRead(ctx, &redis.XReadArgs{Streams: []string{"burst:stream", "$"}, Block: 20 * time.Second}).Err()
				return
			}
			errs <- c.BLPop(ctx, 20*time.Second, "burst:list").Err()
		}()
	}
	testkit.WaitFor(t, 5*time.Second, strconv.Itoa(count)+" calls blocked on "+n.Name(), func() bool {
		if len(errs) > 0 {
			t.Fatalf("a call returned before the reset: %v", <-errs)
		}
		return blockedClients(t, n) == count
	})
	return errs
}

// collect receives count errors (each call returns once its connection is
// reset).
func collect(t *testing.T, ctx context.Context, errs <-chan error, count int) []error {
	t.Helper()
	out := make([]error, 0, count)
	for range count {
		select {
		case err := <-errs:
			out = append(out, err)
		case <-ctx.Done():
			t.Fatalf("%d of %d calls returned: %v", len(out), count, ctx.Err())
		}
	}
	return out
}

// TestOneResetIsOneFailure resets the active database's connections once
// with 16 calls in flight on them (8 writes, 8 reads; the server holds them
// all, so they are in flight together for certain): every one fails with
// the connection error, as it is, and together they count as one failure.
// Nothing switches: the breaker stays closed and the next call is served by
// the same database.
func TestOneResetIsOneFailure(t *testing.T) {
	nodes, c, log := burstClient(t)
	ctx := testkit.Context(t, 30*time.Second)
	const inFlight = 16
	switches := c.Stats().Switches

	errs := inFlightTogether(t, ctx, c, nodes[0], inFlight, true)
	nodes[0].ResetConnections()
	for i, err := range collect(t, ctx, errs, inFlight) {
		if !connFailure(err) || errors.Is(err, ErrDatabaseChanged) {
			t.Errorf("call %d: %v, want the connection error as it is", i, err)
		}
	}

	st := stateOf(c, "db0")
	if got := c.Stats().Switches; got != switches || c.Active() != "db0" || st.State != Closed || st.Trips != 0 {
		t.Fatalf("after one reset: switches %d → %d, active %q, db0 %s with %d trips; want no switch and db0 closed",
			switches, got, c.Active(), st.State, st.Trips)
	}
	if st.Failures != inFlight || st.CoalescedFailures != inFlight-1 || st.ConsecutiveFailures != 1 || st.WindowFailures != 1 {
		t.Fatalf("db0 counts %d failed calls, %d coalesced, %d in a row, %d in the window; want %d, %d, 1, 1",
			st.Failures, st.CoalescedFailures, st.ConsecutiveFailures, st.WindowFailures, inFlight, inFlight-1)
	}
	if v, err := c.Get(ctx, "who").Result(); err != nil || v != "db0" {
		t.Fatalf("the next call: %q, %v; want it served by db0", v, err)
	}
	if st := stateOf(c, "db0"); st.ConsecutiveFailures != 0 {
		t.Fatalf("a call started after the reset succeeded, yet %d failures in a row remain", st.ConsecutiveFailures)
	}
	log.flush(t, c)
	if sw := log.switches(); len(sw) != 0 {
		t.Fatalf("switches %v", sw)
	}
}

// TestSeparateResetsTrip resets the active database's connections three
// times, each time with 16 calls in flight that were started after the
// previous reset's calls had failed, and no call succeeding in between:
// three separate events, so the third trips the breaker (the default
// ConsecutiveFailures), and not before.
func TestSeparateResetsTrip(t *testing.T) {
	nodes, c, log := burstClient(t)
	ctx := testkit.Context(t, 30*time.Second)
	const inFlight = 16
	switches := c.Stats().Switches
	for round := 1; round <= DefaultConsecutiveFailures; round++ {
		errs := inFlightTogether(t, ctx, c, nodes[0], inFlight, false)
		nodes[0].ResetConnections()
		changed := 0
		for i, err := range collect(t, ctx, errs, inFlight) {
			switch {
			case errors.Is(err, ErrDatabaseChanged) && round == DefaultConsecutiveFailures:
				changed++ // the trip moved traffic while the write was in flight
			case !connFailure(err) || errors.Is(err, ErrDatabaseChanged):
				t.Errorf("round %d, call %d: %v, want the connection error", round, i, err)
			}
		}
		st := stateOf(c, "db0")
		if round < DefaultConsecutiveFailures {
			if got := c.Stats().Switches; got != switches || st.State != Closed || st.ConsecutiveFailures != int64(round) {
				t.Fatalf("round %d: switches %d → %d, db0 %s, %d failures in a row; want no switch, closed, %d",
					round, switches, got, st.State, st.ConsecutiveFailures, round)
			}
			continue
		}
		if got := c.Stats().Switches; got != switches+1 || c.Active() != "db1" || st.State != Open || st.Trips != 1 {
			t.Fatalf("round %d: switches %d → %d, active %q, db0 %s with %d trips; want one switch to db1, db0 open once",
				round, switches, got, c.Active(), st.State, st.Trips)
		}
		if changed == 0 {
			t.Fatal("no write caught by the trip failed with a *DatabaseChangedError")
		}
		if st.Failures != DefaultConsecutiveFailures*inFlight {
			t.Fatalf("db0 counts %d failed calls, want %d", st.Failures, DefaultConsecutiveFailures*inFlight)
		}
	}
	if sw := log.awaitSwitches(t, 1); len(sw) != 1 || sw[0].Old != "db0" || sw[0].New != "db1" || sw[0].Reason != ReasonAutomatic {
		t.Fatalf("switches %v, want one automatic db0 → db1", sw)
	}
	if v, err := c.Get(ctx, "who").Result(); err != nil || v != "db1" {
		t.Fatalf("after the trip: %q, %v; want db1", v, err)
	}
}

// TestResetsUnderLoadDoNotSwitch resets the active database's connections
// three times under continuous reads and writes from 16 goroutines, each
// reset once a call started after the previous one has succeeded: every
// reset fails the calls in flight on it (at least ConsecutiveFailures of
// them at once in one reset, or the test would prove nothing), and no
// reset switches. Every failed call got its connection error as it is.
func TestResetsUnderLoadDoNotSwitch(t *testing.T) {
	nodes, c, log := burstClient(t)
	ctx := testkit.Context(t, 60*time.Second)
	switches := c.Stats().Switches

	stop := make(chan struct{})
	done := make(chan []op, 1)
	go func() { done <- load(ctx, c, 8, 8, stop) }()
	testkit.WaitFor(t, 5*time.Second, "traffic on db0", func() bool { return stateOf(c, "db0").WindowCalls >= 100 })
	var most uint64 // the most calls one reset failed
	for round := range 3 {
		before := stateOf(c, "db0")
		nodes[0].ResetConnections()
		testkit.WaitFor(t, 5*time.Second, "the reset's failures", func() bool { return stateOf(c, "db0").Failures > before.Failures })
		// A call started now succeeds once the reset is over (new
		// connections are accepted): the next reset is a separate event,
		// and the calls the reset failed have failed by then.
		testkit.WaitFor(t, 5*time.Second, "a call started after the reset to succeed", func() bool {
			return c.Get(ctx, "who").Err() == nil
		})
		failed := stateOf(c, "db0").Failures - before.Failures
		most = max(most, failed)
		if st := stateOf(c, "db0"); c.Active() != "db0" || st.Trips != 0 {
			t.Fatalf("reset %d (%d calls failed) switched: active %q, db0 %s with %d trips", round+1, failed, c.Active(), st.State, st.Trips)
		}
		t.Logf("reset %d: %d calls failed", round+1, failed)
	}
	close(stop)
	ops := <-done

	st := stateOf(c, "db0")
	if got := c.Stats().Switches; got != switches || c.Active() != "db0" || st.State != Closed || st.Trips != 0 {
		t.Fatalf("after 3 resets under load: switches %d → %d, active %q, db0 %s with %d trips; want no switch",
			switches, got, c.Active(), st.State, st.Trips)
	}
	if most < DefaultConsecutiveFailures {
		t.Fatalf("no reset failed %d calls at once (at most %d): the test did not exercise a burst", DefaultConsecutiveFailures, most)
	}
	var failed int
	for _, o := range ops {
		if o.err == nil {
			if !o.write && o.val != "db0" {
				t.Fatalf("a read was served by %s", o.val)
			}
			continue
		}
		failed++
		if !connFailure(o.err) || errors.Is(o.err, ErrDatabaseChanged) {
			t.Errorf("a call failed with %v, want the connection error as it is", o.err)
		}
	}
	t.Logf("%d ops, %d failed; db0: %d failed calls, %d coalesced, %d trips", len(ops), failed, st.Failures, st.CoalescedFailures, st.Trips)
	log.flush(t, c)
	if sw := log.switches(); len(sw) != 0 {
		t.Fatalf("switches %v", sw)
	}
}

func TestJudge(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name              string
		start, now, since time.Time
		isNew             bool
		next              time.Time
	}{
		{"no event yet: the first failure is one", ms(5), ms(10), time.Time{}, true, ms(10)},
		{"in flight when the event began: the same event", ms(5), ms(12), ms(10), false, ms(10)},
		{"in flight for an hour: the same event", ms(-3600e3), ms(12), ms(10), false, ms(10)},
		{"started when the event began: a new one", ms(10), ms(12), ms(10), true, ms(12)},
		{"started after it began: a new one", ms(11), ms(40), ms(10), true, ms(40)},
		{"a new event never moves the start back", ms(10), ms(9), ms(10), true, ms(10)},
	}
	for _, tt := range tests {
		isNew, next := judge(tt.start, tt.now, tt.since)
		if isNew != tt.isNew || !next.Equal(tt.next) {
			t.Errorf("%s: judge = %v, %v; want %v, %v", tt.name, isNew, next.Sub(t0), tt.isNew, tt.next.Sub(t0))
		}
	}
}

// call is one call for the detector: it started at start and its outcome
// was seen at end (milliseconds from the detector's creation).
type call struct {
	start, end int
	ok         bool
}

// replay feeds calls to a new detector in the order their outcomes are
// seen (by end; ties in the order given), as the client does, and returns
// it, the outcome index (in that order) at which rule first trips (-1:
// never), and the calls in that order with whether each failure counted.
func replay(calls []call, rule tripRule) (d *detector, trippedAt int, seen []call, counted []bool) {
	d = &detector{window: newWindow(time.Hour)}
	at := func(ms int) time.Time { return d.window.base.Add(time.Duration(ms) * time.Millisecond) }
	seen = append([]call(nil), calls...)
	slices.SortStableFunc(seen, func(a, b call) int { return cmp.Compare(a.end, b.end) })
	trippedAt = -1
	for i, c := range seen {
		if c.ok {
			d.success(at(c.end))
			counted = append(counted, false)
			continue
		}
		inARow, failed, n, isNew := d.failure(at(c.start), at(c.end))
		counted = append(counted, isNew)
		if _, trip := rule.trips(inARow, failed, n); trip && trippedAt < 0 {
			trippedAt = i
		}
	}
	return d, trippedAt, seen, counted
}

// together is n calls started 1 ms apart from start, failing 1 ms apart
// from end (with end >= start + n, all were in flight when the first
// failed).
func together(n, start, end int) []call {
	out := make([]call, n)
	for i := range out {
		out[i] = call{start: start + i, end: end + i}
	}
	return out
}

// TestDetectorCoalesces replays schedules of calls through the detector
// and the default trip rules.
func TestDetectorCoalesces(t *testing.T) {
	rule := tripRule{consecutive: DefaultConsecutiveFailures, minFailures: DefaultMinFailures, rate: DefaultFailureRateThreshold}
	tests := []struct {
		name      string
		calls     []call
		inARow    int64 // at the end
		events    int64 // failures counted
		trippedAt int   // outcome index (by end) of the trip, -1: none
	}{
		{"16 calls in flight fail together: one event", together(16, 0, 100), 1, 1, -1},
		{"16 together, then successes of calls started after: the run ends",
			append(together(16, 0, 100), call{120, 121, true}, call{121, 122, true}), 0, 1, -1},
		{"a success of a call in flight when the event began ends the run too",
			append(together(16, 0, 100), call{50, 105, true}), 0, 1, -1},
		{"three resets spaced apart, successes between: never three in a row",
			slices.Concat(together(16, 0, 100), []call{{150, 151, true}}, together(16, 200, 300), []call{{350, 351, true}}, together(16, 400, 500)),
			1, 3, -1},
		{"three resets, each hitting calls started after the last: three events, the third trips",
			slices.Concat(together(16, 0, 100), together(16, 116, 200), together(16, 216, 300)), 3, 3, 32},
		{"a dead database: rounds of refused calls, each round started after the last failed",
			slices.Concat(together(8, 0, 10), together(8, 18, 30), together(8, 38, 50)), 3, 3, 16},
		{"a stall: rounds of timeouts (500 ms), each of calls started after the last timed out",
			slices.Concat(together(8, 0, 500), together(8, 508, 1008), together(8, 1016, 1516)), 3, 3, 16},
		{"one call at a time: every failure is an event", []call{{0, 1, false}, {2, 3, false}, {4, 5, false}}, 3, 3, 2},
		{"a call started before a later event's first failure joins that event",
			[]call{{0, 10, false}, {11, 20, false}, {15, 25, false}}, 2, 2, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, tripped, _, _ := replay(tt.calls, rule)
			var failures uint64
			for _, c := range tt.calls {
				if !c.ok {
					failures++
				}
			}
			events := failures - d.coalesced.Load()
			if got := d.consecutive.Load(); got != tt.inARow || int64(events) != tt.events || tripped != tt.trippedAt || d.total.Load() != failures {
				t.Fatalf("in a row %d, events %d, tripped at %d, failures %d; want %d, %d, %d, %d",
					got, events, tripped, d.total.Load(), tt.inARow, tt.events, tt.trippedAt, failures)
			}
			if f, _ := d.window.sum(d.window.base.Add(2 * time.Second)); f != tt.events {
				t.Fatalf("window failures %d, want the %d events", f, tt.events)
			}
		})
	}
}

// TestDetectorConcurrentBurst fails 16 calls in flight together from 16
// goroutines at once: whatever the interleaving, exactly one counts.
func TestDetectorConcurrentBurst(t *testing.T) {
	for range 200 {
		d := &detector{window: newWindow(2 * time.Second)}
		start := time.Now()
		var ready, wg sync.WaitGroup
		gate := make(chan struct{})
		var counted atomic.Int64
		for range 16 {
			ready.Add(1)
			wg.Go(func() {
				ready.Done()
				<-gate
				if _, _, _, isNew := d.failure(start, time.Now()); isNew {
					counted.Add(1)
				}
			})
		}
		ready.Wait()
		close(gate)
		wg.Wait()
		if counted.Load() != 1 || d.consecutive.Load() != 1 || d.coalesced.Load() != 15 || d.total.Load() != 16 {
			t.Fatalf("counted %d, in a row %d, coalesced %d, total %d; want 1, 1, 15, 16",
				counted.Load(), d.consecutive.Load(), d.coalesced.Load(), d.total.Load())
		}
	}
}

// FuzzDetector replays arbitrary schedules of calls (each: how long after
// the previous one it started, how long it ran, whether it failed) and
// checks what the rule promises, against the schedule itself:
//   - two failures counted as events were never in flight together (the
//     later one started at or after the earlier one was seen);
//   - a failure is coalesced only if its call was in flight when some
//     counted failure was seen;
//   - a failure whose call started after every earlier failure was seen
//     is counted;
//   - the run in a row is the events since the last success, and the
//     window holds every event and success, once;
//   - the start of the current event never moves back.
func FuzzDetector(f *testing.F) {
	f.Add([]byte{0, 100, 0, 1, 100, 0, 1, 100, 0, 200, 1, 1})
	f.Add([]byte{0, 10, 0, 11, 1, 0, 10, 1, 0, 0, 0, 0, 5, 5, 1})
	f.Add(bytes.Repeat([]byte{1, 200, 0}, 16))
	f.Fuzz(func(t *testing.T, data []byte) {
		var calls []call
		for at := 0; len(data) >= 3 && len(calls) < 200; data = data[3:] {
			at += int(data[0])
			calls = append(calls, call{start: at, end: at + int(data[1]), ok: data[2]&1 == 1})
		}
		d, _, seen, counted := replay(calls, tripRule{})
		var events, successes, run int64
		var lastSince int64
		for i, c := range seen {
			if c.ok {
				successes++
				run = 0
				continue
			}
			if counted[i] {
				events++
				run++
			}
			// Pairwise, against every failure seen before this one.
			after := true // started at or after every earlier failure was seen
			inFlightAtEvent := false
			for j := range i {
				p := seen[j]
				if p.ok {
					continue
				}
				if c.start < p.end {
					after = false
					if counted[j] {
						inFlightAtEvent = true
					}
				}
				if counted[i] && counted[j] && c.start < p.end {
					t.Fatalf("failures %v and %v were in flight together and both counted", p, c)
				}
			}
			if !counted[i] && !inFlightAtEvent {
				t.Fatalf("failure %v coalesced, but no counted failure was seen while it was in flight", c)
			}
			if after && !counted[i] {
				t.Fatalf("failure %v started after every earlier failure was seen, yet was coalesced", c)
			}
			if s := d.since.Load(); s < lastSince {
				t.Fatalf("the event start moved back")
			} else {
				lastSince = s
			}
		}
		if len(seen) == 0 {
			return
		}
		failed, n := d.window.sum(d.window.base.Add(time.Duration(seen[len(seen)-1].end+1) * time.Millisecond))
		if d.consecutive.Load() != run || failed != events || n != events+successes ||
			d.total.Load()-d.coalesced.Load() != uint64(events) {
			t.Fatalf("in a row %d (want %d), window %d/%d (want %d/%d), total %d coalesced %d",
				d.consecutive.Load(), run, failed, n, events, events+successes, d.total.Load(), d.coalesced.Load())
		}
	})
}
