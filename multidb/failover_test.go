package multidb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// op is one call of the load: a write (INCR of a key named by a unique op
// id) or a read (GET of a key whose value names the database).
type op struct {
	write      bool
	key        string
	start, end time.Time
	val        string // a read's value: the database that served it
	err        error
}

// ended reports whether stop is closed or ctx done: a test that ended
// without closing stop (a Fatal) cancels ctx, after which every call would
// fail at once, and be recorded without end.
func ended(ctx context.Context, stop <-chan struct{}) bool {
	select {
	case <-stop:
		return true
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// load runs writers and readers through c until stop is closed.
func load(ctx context.Context, c *Client, writers, readers int, stop <-chan struct{}) []op {
	var mu sync.Mutex
	var ops []op
	var wg sync.WaitGroup
	for w := range writers + readers {
		wg.Go(func() {
			var mine []op
			for seq := 0; ; seq++ {
				if ended(ctx, stop) {
					mu.Lock()
					ops = append(ops, mine...)
					mu.Unlock()
					return
				}
				o := op{write: w < writers, start: time.Now()}
				if o.write {
					o.key = fmt.Sprintf("op:%d:%d", w, seq)
					o.err = c.Incr(ctx, o.key).Err()
				} else {
					o.val, o.err = c.Get(ctx, "who").Result()
				}
				o.end = time.Now()
				mine = append(mine, o)
			}
		})
	}
	wg.Wait()
	return ops
}

// underLoad runs load (4 writers, 4 readers) through c: after warmup it
// applies fault, waits until moved holds (10 s at most), runs for after
// more, and returns every operation.
func underLoad(ctx context.Context, c *Client, warmup time.Duration, fault func(), moved func() bool, after time.Duration) []op {
	stop := make(chan struct{})
	var ops []op
	done := make(chan struct{})
	go func() { ops = load(ctx, c, 4, 4, stop); close(done) }()
	time.Sleep(warmup)
	fault()
	for deadline := time.Now().Add(10 * time.Second); !moved() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(after)
	close(stop)
	<-done
	return ops
}

// TestKillActiveUnderLoad kills the active database (SIGKILL) under
// continuous reads and writes, with the client's default settings: traffic
// moves to the next database by weight; the time from the kill to the first
// call served by it is measured (target ≤ 1 s); and no write ran twice,
// counted by unique op ids on every database (the killed one runs with
// appendfsync always, so what it executed survives for the count).
func TestKillActiveUnderLoad(t *testing.T) {
	aof := lab.Config{ExtraConfig: []string{"appendonly yes", "appendfsync always"}}
	nodes := standalone(t, 3, aof)
	ctx := testkit.Context(t, 60*time.Second)
	nameNodes(t, nodes)
	c, log := newClient(t, Config{}, nodes, 10, 5, 1) // every setting at its default
	var killed time.Time
	ops := underLoad(ctx, c, 500*time.Millisecond, func() {
		killed = time.Now()
		if err := nodes[0].Kill(); err != nil {
			t.Error(err)
		}
	}, func() bool { return c.Active() == "db1" }, time.Second)
	st := stateOf(c, "db0")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	placeOps(t, ops)

	// Detection to first success: the first call after the kill that db1
	// served (reads say so; a write is db1's if its key is there).
	if err := nodes[0].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	keys := writeKeys(ops)
	counts := make([]map[string]int, len(nodes))
	for i, n := range nodes {
		counts[i] = countKeys(t, ctx, n, keys)
	}
	firstErr, firstOnDB1 := time.Time{}, time.Time{}
	var readsFailed, writesFailed, writesChanged, acked int
	otherErrs := map[string]int{}
	for _, o := range ops {
		if o.err != nil && o.start.After(killed.Add(-time.Second)) && (firstErr.IsZero() || o.end.Before(firstErr)) {
			firstErr = o.end
		}
		servedByDB1 := o.err == nil && ((!o.write && o.val == "db1") || (o.write && counts[1][o.key] == 1))
		if servedByDB1 && (firstOnDB1.IsZero() || o.end.Before(firstOnDB1)) {
			firstOnDB1 = o.end
		}
		switch {
		case o.err == nil && o.write:
			acked++
		case o.err != nil && !o.write:
			readsFailed++
		case errors.Is(o.err, ErrDatabaseChanged):
			writesChanged++
		case o.err != nil:
			writesFailed++
			otherErrs[o.err.Error()]++
		}
	}
	if firstOnDB1.IsZero() {
		t.Fatal("no call was served by db1")
	}
	detection := firstOnDB1.Sub(killed)
	t.Logf("kill → first success on db1: %v (first failed call → first success: %v); %d ops: %d writes acknowledged, %d refused as DatabaseChanged, %d other write errors, %d failed reads; db0: %d failed calls, %d of them coalesced",
		detection.Round(100*time.Microsecond), firstOnDB1.Sub(firstErr).Round(100*time.Microsecond), len(ops), acked, writesChanged, writesFailed, readsFailed,
		st.Failures, st.CoalescedFailures)
	if len(otherErrs) > 0 {
		t.Logf("other write errors: %v", otherErrs)
	}
	if detection > time.Second {
		t.Errorf("detection to first success took %v, want ≤ 1 s", detection)
	}

	// No write ran twice; every acknowledged write ran exactly once; none
	// went to db2 (db1 was next by weight).
	for _, o := range ops {
		if !o.write {
			continue
		}
		n := counts[0][o.key] + counts[1][o.key] + counts[2][o.key]
		switch {
		case n > 1:
			t.Errorf("%s ran %d times (db0 %d, db1 %d, db2 %d): %v", o.key, n, counts[0][o.key], counts[1][o.key], counts[2][o.key], o.err)
		case o.err == nil && n != 1:
			t.Errorf("%s was acknowledged but ran %d times", o.key, n)
		case counts[2][o.key] != 0:
			t.Errorf("%s ran on db2", o.key)
		}
	}
	sw := log.awaitSwitches(t, 1)
	if len(sw) != 1 || sw[0].Old != "db0" || sw[0].New != "db1" || sw[0].Reason != ReasonAutomatic {
		t.Fatalf("switches %v, want one automatic db0 → db1", sw)
	}
	t.Logf("trip: %v", sw[0].Err)
}

// writeKeys are the keys of the writes among ops.
func writeKeys(ops []op) []string {
	var keys []string
	for _, o := range ops {
		if o.write {
			keys = append(keys, o.key)
		}
	}
	return keys
}

// countKeys returns the value of each key that exists on the node.
func countKeys(t *testing.T, ctx context.Context, n *lab.Node, keys []string) map[string]int {
	t.Helper()
	cl := n.NewClient()
	defer cl.Close()
	return countKeysOn(t, ctx, cl, keys)
}

// TestFailbackAfterDwell kills the active database, then makes it flap
// (down 2 s, up 2 s) before it stays up: traffic moves away at once, never
// back while it flaps (each healthy spell is shorter than the dwell), so no
// two switches are closer than the dwell, and goes back only once the
// database has passed its checks for the dwell.
func TestFailbackAfterDwell(t *testing.T) {
	nodes := standalone(t, 2, lab.Standalone())
	const dwell = 3 * time.Second
	c, log := newClient(t, fast(Config{FailbackDwell: dwell}), nodes, 10, 5)
	ctx := testkit.Context(t, 60*time.Second)

	if err := nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	_ = c.Ping(ctx) // traffic or the next health check notices
	testkit.WaitFor(t, 3*time.Second, "failover to db1", func() bool { return c.Active() == "db1" })

	var lastUp time.Time // when db0 was last started: it answers no earlier
	for cycle := range 3 {
		time.Sleep(2 * time.Second) // down
		lastUp = time.Now()
		if err := nodes[0].Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if cycle == 2 {
			break // stays up
		}
		time.Sleep(2*time.Second - time.Since(lastUp)) // up, shorter than the dwell
		if c.Active() != "db1" {
			t.Fatalf("cycle %d: failed back to a database up for 2 s (dwell %v)", cycle, dwell)
		}
		if err := nodes[0].Kill(); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, dwell+3*time.Second, "failback to db0", func() bool { return c.Active() == "db0" })
	back := time.Now()

	sw := log.awaitSwitches(t, 2)
	if len(sw) != 2 || sw[0].New != "db1" || sw[0].Reason != ReasonAutomatic || sw[1].New != "db0" || sw[1].Reason != ReasonFailback {
		t.Fatalf("switches %v, want db0 → db1 (automatic), db1 → db0 (failback)", sw)
	}
	if d := sw[1].Time.Sub(lastUp); d < dwell {
		t.Fatalf("failed back %v after db0 came back up, before the dwell (%v)", d, dwell)
	}
	for i := 1; i < len(sw); i++ {
		if gap := sw[i].Time.Sub(sw[i-1].Time); gap < dwell {
			t.Errorf("switches %d and %d are %v apart, less than the dwell %v", i-1, i, gap, dwell)
		}
	}
	t.Logf("failback %v after db0 stayed up (dwell %v)", back.Sub(lastUp).Round(time.Millisecond), dwell)
	// The breaker of the flapping database opened and closed with it.
	if st := stateOf(c, "db0"); st.Trips < 3 || st.State != Closed {
		t.Fatalf("db0: %d trips, breaker %s; want ≥ 3 and closed", st.Trips, st.State)
	}
}

// TestAllDown takes every database down: calls fail with
// ErrTemporarilyUnavailable, then ErrNoHealthyDatabase once the failover
// attempts are used up, and service resumes when a database comes back,
// without restarting the client.
func TestAllDown(t *testing.T) {
	nodes := standalone(t, 2, lab.Standalone())
	const attempts, delay = 3, 200 * time.Millisecond
	var records testkit.Buffer
	logger := slog.New(slog.NewTextHandler(&records, nil))
	c, log := newClient(t, fast(Config{FailoverAttempts: attempts, FailoverDelay: delay, Logger: logger}), nodes, 10, 5)
	ctx := testkit.Context(t, 30*time.Second)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range nodes {
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 3*time.Second, "no active database", func() bool { return c.Active() == "" })
	down := log.await(t, EventAllUnhealthy, 1)
	if len(down) != 1 {
		t.Fatalf("all-unhealthy events %v", down)
	}
	err := c.Get(ctx, "k").Err()
	var ue *UnavailableError
	if !errors.Is(err, ErrTemporarilyUnavailable) || !errors.As(err, &ue) || ue.Exhausted {
		t.Fatalf("GET with every database down = %v, want ErrTemporarilyUnavailable", err)
	}
	if len(ue.Databases) != 2 || ue.Databases[0].State == Closed || ue.Databases[0].LastError == "" {
		t.Fatalf("the error does not say what each database is doing: %v", ue)
	}
	// Pipelines and Watch fail the same way, and nothing is sent.
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Incr(ctx, "n"); return nil }); !errors.Is(err, ErrTemporarilyUnavailable) {
		t.Fatalf("pipeline = %v", err)
	}
	if err := c.Watch(ctx, func(*redis.Tx) error { return nil }, "k"); !errors.Is(err, ErrTemporarilyUnavailable) {
		t.Fatalf("Watch = %v", err)
	}

	testkit.WaitFor(t, attempts*delay+2*time.Second, "ErrNoHealthyDatabase", func() bool {
		return errors.Is(c.Get(ctx, "k").Err(), ErrNoHealthyDatabase)
	})
	if ev := log.await(t, EventNoHealthyDatabase, 1); len(ev) != 1 || ev[0].Time.Sub(down[0].Time) < attempts*delay {
		t.Fatalf("exhausted events %v, want one ≥ %v after all-unhealthy at %v", ev, attempts*delay, down[0].Time)
	}
	if st := c.Stats(); !st.Exhausted || st.UnavailableSince.IsZero() {
		t.Fatalf("stats: %+v", st)
	}

	// The standby comes back: service resumes on it.
	if err := nodes[1].Restart(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "service on db1", func() bool { return c.Set(ctx, "k", "again", 0).Err() == nil })
	if c.Active() != "db1" || get(t, nodes[1], "k") != "again" {
		t.Fatalf("active %q after recovery", c.Active())
	}
	if st := c.Stats(); st.Exhausted || !st.UnavailableSince.IsZero() {
		t.Fatalf("stats after recovery: exhausted %v since %v", st.Exhausted, st.UnavailableSince)
	}
	// Resuming is reported as a switch from no database.
	sw := log.switches()
	testkit.WaitFor(t, 2*time.Second, "the resume event", func() bool {
		sw = log.switches()
		return len(sw) > 0 && sw[len(sw)-1].Old == ""
	})
	if last := sw[len(sw)-1]; last.Old != "" || last.New != "db1" || last.Reason != ReasonAutomatic {
		t.Fatalf("last switch %v, want an automatic one from none to db1", last)
	}
	// The log tells the story.
	for _, msg := range []string{"database unreachable", "no healthy database", "failover attempts used up",
		"database reachable again", "service resumed", "active database changed"} {
		if !strings.Contains(records.String(), "msg=\"multidb: "+msg) {
			t.Errorf("no %q record in the log:\n%s", msg, records.String())
		}
	}
}

// TestStalledActiveUnderLoad black-holes the active database (it accepts
// and never answers) under continuous reads and writes with the default
// settings: calls time out at the database client's ReadTimeout (500 ms
// here). The calls in flight when it stalled time out together: one
// failure event, a burst, which asks for a second sign at once. Both the
// health check it starts and the calls started after it time out too (the
// check after T, the earlier of ProbeTimeout and the client's ReadTimeout:
// go-redis puts the earlier of a context's deadline and its own timeout on
// the socket; here T is the ReadTimeout), with nothing answered in
// between: the breaker trips on the first of them, and traffic moves on.
// The stall comes once the first health check is over, so the next is
// seconds away, and the trip must be the burst's.
//
// So the trip comes ReadTimeout + T after the stall, plus what this
// machine's delays add, measured here: how late the first round's calls
// returned past the stall's ReadTimeout (by then every worker has sent its
// second-round call, which times out a T later) and how late a timeout on
// db0 was delivered at most. The first call served by the next database
// follows once a reader's second-round call has timed out too (they were
// sent as the first round's calls returned, over the spread measured
// here, and are delivered as late as the others) and db1 has answered its
// re-run: as long as db1 took for a call after the switch, or for the
// same number of first calls on fresh connections as there are workers
// (the re-run reads find its pool cold and connect all at once), measured
// just before the stall. A worker caught sending one more call to the
// stalled database would add a ReadTimeout. And the first success comes
// at least ReadTimeout + T after the first failed call started (timers do
// not fire early): one round of timeouts, however many calls it fails,
// does not trip.
func TestStalledActiveUnderLoad(t *testing.T) {
	nodes := standalone(t, 2, lab.Config{Proxy: true})
	ctx := testkit.Context(t, 30*time.Second)
	nameNodes(t, nodes)
	c, log := newClient(t, Config{}, nodes, 10, 5) // every setting at its default
	rt := opts(nodes[0]).ReadTimeout
	check := min(DefaultProbeTimeout, rt) // T
	if check != rt {
		t.Fatalf("the bounds below take the check's timeout %v for the calls' ReadTimeout %v", check, rt)
	}
	const workers = 8 // underLoad's
	var stalled time.Time
	var cold time.Duration
	ops := underLoad(ctx, c, 300*time.Millisecond, func() {
		testkit.WaitFor(t, 5*time.Second, "the first health check", func() bool { return stateOf(c, "db0").Checked })
		cold = coldCalls(t, ctx, nodes[1], workers)
		stalled = time.Now()
		nodes[0].BlackHole()
	}, func() bool { return c.Active() == "db1" }, 500*time.Millisecond)
	placeOps(t, ops)
	sw := log.awaitSwitches(t, 1)
	if len(sw) != 1 || sw[0].New != "db1" || !strings.Contains(sw[0].Err.Error(), "calls failed together") {
		t.Fatalf("switches %v, want one to db1, by the burst's second sign", sw)
	}
	switched := sw[0].Time

	var first, firstFailed, burst, round1 time.Time
	for _, o := range ops {
		if o.err != nil && (burst.IsZero() || o.end.Before(burst)) {
			burst = o.end // no earlier than the burst began (its first failure was seen)
		}
	}
	var changed, failed int
	var late, served time.Duration
	for _, o := range ops {
		if o.err == nil && !o.write && o.val == "db1" && (first.IsZero() || o.end.Before(first)) {
			first = o.end
		}
		if o.err != nil && (firstFailed.IsZero() || o.start.Before(firstFailed)) {
			firstFailed = o.start
		}
		if o.err != nil && o.start.Before(burst) && o.end.After(round1) {
			round1 = o.end // the first round: the calls in flight when the burst began
		}
		// How late a timeout on db0 reached its caller, past its
		// ReadTimeout (the switch's own work included, for a write it
		// caught).
		if o.err != nil && failure.Timeout(o.err) {
			late = max(late, o.end.Sub(o.start)-rt)
		}
		if o.err == nil && !o.start.Before(switched) {
			served = max(served, o.end.Sub(o.start))
		}
		switch {
		case errors.Is(o.err, ErrDatabaseChanged):
			changed++
		case o.err != nil:
			failed++
		}
	}
	if first.IsZero() {
		t.Fatal("no read was served by db1")
	}
	took, detected, after := first.Sub(stalled), switched.Sub(stalled), first.Sub(switched)
	returned := round1.Sub(stalled) - rt // the first round, past a timeout after the stall
	spread := round1.Sub(burst)          // over which the second-round calls were sent
	db1 := max(served, cold)
	st := stateOf(c, "db0")
	t.Logf("stall → switch %v, → first success on db1 %v (%v after the switch); ReadTimeout %v, check timeout %v; measured: the first round returned %v past a timeout after the stall, over %v, timeouts delivered up to %v late, db1 answered within %v after the switch and %d first calls on fresh connections within %v; %d writes refused as DatabaseChanged, %d other errors; db0: %d failed calls, %d of them coalesced, %d burst checks; trip: %s",
		detected.Round(100*time.Microsecond), took.Round(100*time.Microsecond), after.Round(100*time.Microsecond), rt, check,
		returned.Round(100*time.Microsecond), spread.Round(100*time.Microsecond), late.Round(100*time.Microsecond),
		served.Round(100*time.Microsecond), workers, cold.Round(100*time.Microsecond),
		changed, failed, st.Failures, st.CoalescedFailures, st.BurstChecks, sw[0].Err)
	if limit := rt + check + returned + late; detected > limit {
		t.Errorf("stall to switch took %v, want ≤ %v (ReadTimeout %v, check timeout %v, and the delays measured)", detected, limit, rt, check)
	}
	if limit := spread + late + db1; after > limit {
		t.Errorf("switch to first success on db1 took %v, want ≤ %v (the delays measured)", after, limit)
	}
	if limit := rt + check + returned + spread + 2*late + db1; took > limit {
		t.Errorf("stall to first success took %v, want ≤ %v (ReadTimeout %v, check timeout %v, and the delays measured)", took, limit, rt, check)
	}
	if least := rt + check; first.Sub(firstFailed) < least {
		t.Errorf("the first success on db1 came %v after the first failed call started, want ≥ %v: one round of timeouts tripped the breaker", first.Sub(firstFailed), least)
	}
	if st.BurstChecks == 0 {
		t.Error("the burst asked for no health check")
	}
	nodes[0].Restore()
}

// coldCalls makes n first calls at once, each on a fresh connection to
// node (a client of its own with the options multidb gives a database
// client: a dial, the handshake, a GET), and returns the longest.
func coldCalls(t *testing.T, ctx context.Context, node *lab.Node, n int) time.Duration {
	t.Helper()
	took := make([]time.Duration, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			cl := redis.NewClient(clientOptions(opts(node)))
			defer cl.Close()
			start := time.Now()
			if err := cl.Get(ctx, "who").Err(); err != nil {
				t.Errorf("a first call to %s: %v", node.Name(), err)
			}
			took[i] = time.Since(start)
		})
	}
	wg.Wait()
	return slices.Max(took)
}
