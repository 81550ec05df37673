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
	return burstClientWith(t, Config{})
}

// burstClientWith is burstClient with cfg's settings (its Databases and
// Observer are burstClient's).
func burstClientWith(t *testing.T, cfg Config) ([]*lab.Node, *Client, *eventLog) {
	t.Helper()
	nodes := standalone(t, 2, lab.Config{Proxy: true})
	nameNodes(t, nodes)
	log := &eventLog{}
	if cfg.HealthCheckInterval == 0 {
		cfg.HealthCheckInterval = time.Hour
	}
	if cfg.ProbeTimeout == 0 {
		cfg.ProbeTimeout = 2 * time.Second
	}
	cfg.Observer = log.observe
	cfg = fast(cfg)
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
// The burst asks for one health check at once, which passes. Nothing
// switches: the breaker stays closed and the next call is served by the
// same database.
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
	// The burst asked for one health check at once, and it passed.
	testkit.WaitFor(t, 10*time.Second, "the burst check's verdict", func() bool {
		st := stateOf(c, "db0")
		return st.BurstChecksPassed+st.BurstChecksFailed > 0
	})
	if st := stateOf(c, "db0"); st.BurstChecks != 1 || st.BurstChecksPassed != 1 || st.State != Closed || st.Trips != 0 {
		t.Fatalf("db0: %d burst checks, %d passed, %s with %d trips; want one, passed, closed, none", st.BurstChecks, st.BurstChecksPassed, st.State, st.Trips)
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
// reset switches, nor any health check the bursts start at once. Every
// failed call got its connection error as it is.
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
	// A failure coalesced into an event made it a burst, which asked for a
	// health check at once; none of their verdicts tripped the breaker.
	if st.CoalescedFailures > 0 && st.BurstChecks == 0 {
		t.Fatalf("%d failures coalesced into bursts, and no burst check ran", st.CoalescedFailures)
	}
	testkit.WaitFor(t, 10*time.Second, "the burst checks' verdicts", func() bool {
		st := stateOf(c, "db0")
		return st.BurstChecksPassed+st.BurstChecksFailed == st.BurstChecks
	})
	st = stateOf(c, "db0")
	t.Logf("%d ops, %d failed; db0: %d failed calls, %d coalesced, %d burst checks (%d passed, %d failed without showing an outage), %d trips",
		len(ops), failed, st.Failures, st.CoalescedFailures, st.BurstChecks, st.BurstChecksPassed, st.BurstChecksFailed, st.Trips)
	if st.Trips != 0 || st.State != Closed || c.Active() != "db0" {
		t.Fatalf("after the burst checks' verdicts: db0 %s with %d trips, active %q; want no switch", st.State, st.Trips, c.Active())
	}
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

func TestAsks(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name         string
		counted      bool
		event, asked time.Time
		want         bool
	}{
		{"the failure that begins an event: not a burst (yet)", true, ms(10), time.Time{}, false},
		{"a lone failure's event, counted, never asks, whatever was asked before", true, ms(10), ms(5), false},
		{"the second failure of an event, none asked yet: a burst, asks", false, ms(10), time.Time{}, true},
		{"the second failure of a later event than the last asked: asks", false, ms(10), ms(5), true},
		{"a further failure of an event already asked for: no more", false, ms(10), ms(10), false},
		{"a failure of an older event than the last asked: no more", false, ms(5), ms(10), false},
	}
	for _, tt := range tests {
		if got := asks(tt.counted, tt.event, tt.asked); got != tt.want {
			t.Errorf("%s: asks = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestConfirms(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name                   string
		decisive               bool
		start, burst, answered time.Time
		want                   bool
	}{
		{"no burst yet", true, ms(20), time.Time{}, time.Time{}, false},
		{"a timeout of a call started after the burst began, nothing answered: confirmed", true, ms(20), ms(10), time.Time{}, true},
		{"started when the burst began: after it (the judge's convention)", true, ms(10), ms(10), time.Time{}, true},
		{"the last answer before the burst: confirmed", true, ms(20), ms(10), ms(9), true},
		{"in flight when the burst began: part of it", true, ms(9), ms(10), time.Time{}, false},
		{"answered after the burst began: a blip", true, ms(20), ms(10), ms(15), false},
		{"answered at the instant the burst began: no trip on a tie", true, ms(20), ms(10), ms(10), false},
		{"a lost connection: may be the burst itself", false, ms(20), ms(10), time.Time{}, false},
	}
	for _, tt := range tests {
		if got := confirms(tt.decisive, tt.start, tt.burst, tt.answered); got != tt.want {
			t.Errorf("%s: confirms = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestBurstVerdict(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }
	tests := []struct {
		name              string
		healthy, decisive bool
		state             BreakerState
		burst, answered   time.Time
		want              burstOutcome
	}{
		{"passed: a blip", true, false, Closed, ms(10), time.Time{}, burstPassed},
		{"passed, answered meanwhile too", true, false, Closed, ms(10), ms(20), burstPassed},
		{"failed by a timeout, nothing answered ever: trips", false, true, Closed, ms(10), time.Time{}, burstTripped},
		{"failed by a timeout, the last answer before the burst: trips", false, true, Closed, ms(10), ms(9), burstTripped},
		{"failed, but the database answered after the burst began: no outage", false, true, Closed, ms(10), ms(11), burstAnswered},
		{"failed, answered at the instant the burst began: no trip on a tie", false, true, Closed, ms(10), ms(10), burstAnswered},
		{"failed only by lost connections: may be the burst itself", false, false, Closed, ms(10), time.Time{}, burstInconclusive},
		{"failed, the breaker opened meanwhile: moot", false, true, Open, ms(10), time.Time{}, burstMoot},
		{"passed, the breaker opened meanwhile: moot (it does not close it)", true, false, Open, ms(10), time.Time{}, burstMoot},
		{"passed, half-open meanwhile: moot (the scheduled check decides)", true, false, HalfOpen, ms(10), time.Time{}, burstMoot},
	}
	for _, tt := range tests {
		if got := burstVerdict(tt.healthy, tt.decisive, tt.state, tt.burst, tt.answered); got != tt.want {
			t.Errorf("%s: burstVerdict = %s, want %s", tt.name, got, tt.want)
		}
	}
}

// FuzzBurstVerdict checks the verdict's promises for any inputs: it trips
// only on a decisive failure, a closed breaker and no answer since the
// burst began, and then always; it never acts on an open or half-open
// breaker; a passed check never trips; and a failure confirms the burst on
// a check exactly when it would on a call started after the burst.
func FuzzBurstVerdict(f *testing.F) {
	f.Add(false, true, int32(0), int64(10), int64(0))
	f.Add(false, true, int32(0), int64(10), int64(10))
	f.Add(false, false, int32(0), int64(10), int64(0))
	f.Add(true, false, int32(2), int64(10), int64(11))
	f.Fuzz(func(t *testing.T, healthy, decisive bool, state int32, burst, answered int64) {
		b, an := time.Unix(0, burst), time.Unix(0, answered)
		st := BreakerState(state)
		o := burstVerdict(healthy, decisive, st, b, an)
		tripWanted := !healthy && st == Closed && confirms(decisive, b, b, an)
		switch {
		case (o == burstTripped) != tripWanted:
			t.Fatalf("healthy %v, decisive %v, %s, answered %v after the burst: %s; trip wanted %v", healthy, decisive, st, an.Sub(b), o, tripWanted)
		case st != Closed && o != burstMoot:
			t.Fatalf("%s: %s, want moot", st, o)
		case st == Closed && healthy && o != burstPassed:
			t.Fatalf("a passed check on a closed breaker: %s", o)
		}
	})
}

// call is one call for the detector: it started at start and its outcome
// was seen at end (milliseconds from the detector's creation); a failure
// is a timeout unless lost (a lost connection, see failure.ConnectionLost).
type call struct {
	start, end int
	ok, lost   bool
}

// replay feeds calls to a new detector in the order their outcomes are
// seen (by end; ties in the order given), as the client does, and returns
// it, the outcome index (in that order) at which rule first trips (-1:
// never), and the calls in that order with what the detector made of each
// failure (the zero tally for a success).
func replay(calls []call, rule tripRule) (d *detector, trippedAt int, seen []call, tallies []tally) {
	d = &detector{window: newWindow(time.Hour)}
	at := func(ms int) time.Time { return d.window.base.Add(time.Duration(ms) * time.Millisecond) }
	seen = append([]call(nil), calls...)
	slices.SortStableFunc(seen, func(a, b call) int { return cmp.Compare(a.end, b.end) })
	trippedAt = -1
	for i, c := range seen {
		if c.ok {
			d.success(at(c.end))
			tallies = append(tallies, tally{})
			continue
		}
		f := d.failure(at(c.start), at(c.end), !c.lost)
		tallies = append(tallies, f)
		if _, trip := rule.trips(f.inARow, f.failed, f.calls); trip && trippedAt < 0 {
			trippedAt = i
		}
	}
	return d, trippedAt, seen, tallies
}

// together is n calls started 1 ms apart from start, timing out 1 ms
// apart from end (with end >= start + n, all were in flight when the first
// failed).
func together(n, start, end int) []call {
	out := make([]call, n)
	for i := range out {
		out[i] = call{start: start + i, end: end + i}
	}
	return out
}

// reset is calls whose failures are lost connections (a reset), not
// timeouts.
func reset(calls []call) []call {
	for i := range calls {
		calls[i].lost = !calls[i].ok
	}
	return calls
}

// TestDetectorCoalesces replays schedules of calls through the detector
// and the default trip rules, and finds the failure that settles a burst
// as an outage (confirms).
func TestDetectorCoalesces(t *testing.T) {
	rule := tripRule{consecutive: DefaultConsecutiveFailures, minFailures: DefaultMinFailures, rate: DefaultFailureRateThreshold}
	tests := []struct {
		name        string
		calls       []call
		inARow      int64 // at the end
		events      int64 // failures counted
		trippedAt   int   // outcome index (by end) of the trip rules' trip, -1: none
		confirmedAt int   // outcome index of the first failure that confirms a burst, -1: none
	}{
		{"16 calls in flight fail together: one event", reset(together(16, 0, 100)), 1, 1, -1, -1},
		{"16 together, then successes of calls started after: the run ends",
			reset(append(together(16, 0, 100), call{start: 120, end: 121, ok: true}, call{start: 121, end: 122, ok: true})), 0, 1, -1, -1},
		{"a success of a call in flight when the event began ends the run too",
			reset(append(together(16, 0, 100), call{start: 50, end: 105, ok: true})), 0, 1, -1, -1},
		{"three resets spaced apart, successes between: never three in a row",
			reset(slices.Concat(together(16, 0, 100), []call{{start: 150, end: 151, ok: true}}, together(16, 200, 300), []call{{start: 350, end: 351, ok: true}}, together(16, 400, 500))),
			1, 3, -1, -1},
		{"three resets, each hitting calls started after the last: three events, the third trips; lost connections confirm nothing",
			reset(slices.Concat(together(16, 0, 100), together(16, 116, 200), together(16, 216, 300))), 3, 3, 32, -1},
		{"a dead database: a reset, then rounds of refused calls: the first refusal confirms",
			slices.Concat(reset(together(8, 0, 10)), together(8, 18, 30), together(8, 38, 50)), 3, 3, 16, 8},
		{"a stall: rounds of timeouts (500 ms); the first of the second round confirms",
			slices.Concat(together(8, 0, 500), together(8, 508, 1008), together(8, 1016, 1516)), 3, 3, 16, 8},
		{"one call at a time: every failure is an event, none a burst", []call{{start: 0, end: 1}, {start: 2, end: 3}, {start: 4, end: 5}}, 3, 3, 2, -1},
		{"a call started before a later event's first failure joins that event",
			[]call{{start: 0, end: 10}, {start: 11, end: 20}, {start: 15, end: 25}}, 2, 2, -1, -1},
		{"a reset burst, then a call started after it times out, nothing answered: confirmed",
			append(reset(together(16, 0, 100)), call{start: 120, end: 620}), 2, 2, -1, 16},
		{"a reset burst, an answer, then a timeout: the burst was a blip",
			append(reset(together(16, 0, 100)), call{start: 110, end: 111, ok: true}, call{start: 120, end: 620}), 1, 2, -1, -1},
		{"a stall burst, and a call in flight when it began times out later: no second sign",
			append(together(8, 0, 500), call{start: 8, end: 900}), 1, 1, -1, -1},
		{"a lone failure, then a timeout: no burst to confirm", []call{{start: 0, end: 10}, {start: 11, end: 511}}, 2, 2, -1, -1},
		{"a burst, then a call started after it loses its connection: no second sign",
			append(together(8, 0, 500), call{start: 520, end: 521, lost: true}), 2, 2, -1, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, tripped, _, tallies := replay(tt.calls, rule)
			var failures uint64
			for _, c := range tt.calls {
				if !c.ok {
					failures++
				}
			}
			confirmed := slices.IndexFunc(tallies, func(f tally) bool { return f.confirms })
			events := failures - d.coalesced.Load()
			if got := d.consecutive.Load(); got != tt.inARow || int64(events) != tt.events || tripped != tt.trippedAt || d.total.Load() != failures || confirmed != tt.confirmedAt {
				t.Fatalf("in a row %d, events %d, tripped at %d, failures %d, confirmed at %d; want %d, %d, %d, %d, %d",
					got, events, tripped, d.total.Load(), confirmed, tt.inARow, tt.events, tt.trippedAt, failures, tt.confirmedAt)
			}
			if f, _ := d.window.sum(d.window.base.Add(2 * time.Second)); f != tt.events {
				t.Fatalf("window failures %d, want the %d events", f, tt.events)
			}
		})
	}
}

// TestDetectorConcurrentBurst fails 16 calls in flight together from 16
// goroutines at once: whatever the interleaving, exactly one counts, and
// exactly one asks for a burst check.
func TestDetectorConcurrentBurst(t *testing.T) {
	for range 200 {
		d := &detector{window: newWindow(2 * time.Second)}
		start := time.Now()
		var ready, wg sync.WaitGroup
		gate := make(chan struct{})
		var counted, asked atomic.Int64
		for range 16 {
			ready.Add(1)
			wg.Go(func() {
				ready.Done()
				<-gate
				f := d.failure(start, time.Now(), false)
				if f.counted {
					counted.Add(1)
				}
				if f.burst {
					asked.Add(1)
				}
			})
		}
		ready.Wait()
		close(gate)
		wg.Wait()
		if counted.Load() != 1 || asked.Load() != 1 || d.consecutive.Load() != 1 || d.coalesced.Load() != 15 || d.total.Load() != 16 {
			t.Fatalf("counted %d, asked for a burst check %d, in a row %d, coalesced %d, total %d; want 1, 1, 1, 15, 16",
				counted.Load(), asked.Load(), d.consecutive.Load(), d.coalesced.Load(), d.total.Load())
		}
	}
}

// seenAt is when the first of the failures counted for the event that
// began at since was seen (ms), -1 if none.
func seenAt(seen []call, tallies []tally, since int64) int {
	for i, t := range tallies {
		if t.counted && t.event == since {
			return seen[i].end
		}
	}
	return -1
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
//   - the start of the current event never moves back;
//   - a burst check is asked for exactly by the second failure of each
//     event that failed more than one call (the first one coalesced into
//     it), never by a lone failure, and the event began when its first
//     failure was seen;
//   - answered is when the last success that ended a run was seen;
//   - a failure confirms a burst exactly when it is a timeout (not a lost
//     connection) of a call started at or after the latest burst seen
//     before it began, and no success ended a run since that burst began.
func FuzzDetector(f *testing.F) {
	f.Add([]byte{0, 100, 0, 1, 100, 0, 1, 100, 0, 200, 1, 1})
	f.Add([]byte{0, 10, 0, 11, 1, 0, 10, 1, 0, 0, 0, 0, 5, 5, 1})
	f.Add(bytes.Repeat([]byte{1, 200, 0}, 16))
	f.Fuzz(func(t *testing.T, data []byte) {
		var calls []call
		for at := 0; len(data) >= 3 && len(calls) < 200; data = data[3:] {
			at += int(data[0])
			calls = append(calls, call{start: at, end: at + int(data[1]), ok: data[2]&1 == 1, lost: data[2]&2 == 2})
		}
		d, _, seen, tallies := replay(calls, tripRule{})
		var events, successes, run int64
		var lastEvent int64
		answered := -1            // end of the last success that ended a run, -1: none
		burst := -1               // when the latest burst seen began (its first failure), -1: none
		asked := map[int64]bool{} // the begin times (since values) a failure asked for
		for i, c := range seen {
			if c.ok {
				successes++
				if run > 0 {
					answered = c.end
				}
				run = 0
				continue
			}
			ti := tallies[i]
			want := !c.lost && burst >= 0 && c.start >= burst && answered < burst
			if ti.confirms != want {
				t.Fatalf("failure %v (latest burst began at %d, last answer at %d): confirms %v, want %v", c, burst, answered, ti.confirms, want)
			}
			if ti.counted {
				events++
				run++
			}
			if ti.event < lastEvent {
				t.Fatalf("failure %v: the event start moved back", c)
			}
			lastEvent = ti.event
			// The first failure coalesced into an event (its second) asks,
			// once per begin time.
			if want := !ti.counted && !asked[ti.event]; ti.burst != want {
				t.Fatalf("failure %v (counted %v, its event's begin time asked for before %v): asks %v, want %v",
					c, ti.counted, asked[ti.event], ti.burst, want)
			}
			if ti.burst {
				asked[ti.event] = true
				burst = int(d.at(ti.event).Sub(d.window.base) / time.Millisecond)
				if began := seenAt(seen[:i], tallies[:i], ti.event); burst != began {
					t.Fatalf("failure %v: its event began at %d ms, its first failure was seen at %d", c, burst, began)
				}
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
					if tallies[j].counted {
						inFlightAtEvent = true
					}
				}
				if ti.counted && tallies[j].counted && c.start < p.end {
					t.Fatalf("failures %v and %v were in flight together and both counted", p, c)
				}
			}
			if !ti.counted && !inFlightAtEvent {
				t.Fatalf("failure %v coalesced, but no counted failure was seen while it was in flight", c)
			}
			if after && !ti.counted {
				t.Fatalf("failure %v started after every earlier failure was seen, yet was coalesced", c)
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
		want := time.Time{}
		if answered >= 0 {
			want = d.window.base.Add(time.Duration(answered) * time.Millisecond)
		}
		if got := d.at(d.answered.Load()); !got.Equal(want) {
			t.Fatalf("answered %v, want %v", got.Sub(d.window.base), want.Sub(d.window.base))
		}
	})
}
