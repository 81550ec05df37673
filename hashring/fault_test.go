package hashring

import (
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// A node that dies without Stop (one heartbeat, then silence: its
// replicas stay in the ZSET) is taken over once its replicas expire, at
// the others' next read: after Expiry, within Expiry + one
// HeartbeatInterval.
func TestDeadNodeTakenOverAfterExpiry(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 60*time.Second)
	a := newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", fast("node-a", nil))
	b := newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", fast("node-b", nil))
	start(t, ctx, a, b)
	o := fast("node-dead", nil)
	dead := newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", o)

	hbStart := time.Now()
	if err := dead.pyHeartbeat(ctx); err != nil { // its only heartbeat, and a notice
		t.Fatal(err)
	}
	hbEnd := time.Now()
	testkit.WaitFor(t, time.Second, "a and b did not see the new node", func() bool {
		return a.NodeCount() == 3 && b.NodeCount() == 3
	})

	ks := keys(3000)
	var orphans []string
	for i, c := range claims([]*Node{a, b}, ks) {
		if c == 0 {
			orphans = append(orphans, ks[i])
		}
	}
	if len(orphans) == 0 {
		t.Fatal("the dead node owns no key of 3000")
	}
	live := []*Node{a, b}
	var taken time.Time
	for taken.IsZero() {
		now := time.Now()
		cs := claims(live, orphans)
		all := true
		for i, c := range cs {
			if c > 1 {
				t.Fatalf("%s claimed twice", orphans[i])
			}
			all = all && c == 1
		}
		if all {
			taken = now
		}
		if time.Since(hbStart) > o.Expiry+5*time.Second {
			unowned := 0
			for _, c := range cs {
				if c == 0 {
					unowned++
				}
			}
			t.Fatalf("the dead node's keys were never taken over: %d of %d still unowned; a sees %d nodes (valid until %v), b sees %d (valid until %v); zset %v",
				unowned, len(orphans), a.NodeCount(), a.ValidUntil(), b.NodeCount(), b.ValidUntil(),
				l.Node(0).Do(ctx, "ZRANGE", "ring", 0, -1, "WITHSCORES").Val())
		}
		time.Sleep(5 * time.Millisecond)
	}
	after := taken.Sub(hbEnd)
	t.Logf("%d orphaned keys taken over %v after the last heartbeat (expiry %v, heartbeat %v)",
		len(orphans), after, o.Expiry, o.HeartbeatInterval)
	if taken.Sub(hbStart) < o.Expiry {
		t.Errorf("taken over %v after the heartbeat, before the expiry %v", taken.Sub(hbStart), o.Expiry)
	}
	// One read interval, plus scheduling slack for a loaded -race run.
	if limit := o.Expiry + o.HeartbeatInterval + time.Second; after > limit {
		t.Errorf("taken over %v after the last heartbeat, want within %v", after, limit)
	}
	// Cleanup removes the dead replicas within a cleanup interval.
	testkit.WaitFor(t, o.CleanupInterval+2*time.Second, "dead replicas never cleaned up", func() bool {
		return l.Node(0).Do(ctx, "ZCARD", "ring").Val() == int64(32)
	})
}

// Redis stops answering (SIGSTOP) for longer than the expiry, while every
// node's goroutine is blocked in a Redis call (the client's read timeout
// is longer than the pause). Each node gives its keys up at its ownership
// deadline, which is before the others could count it dead; it logs one
// ERROR, and one INFO once Redis answers again, and gets its keys back.
func TestPausedRedisNodesGiveUpAtDeadline(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 60*time.Second)
	opts := func(h string, log *slog.Logger) Config {
		o := fast(h, log)
		o.OwnershipDeadline, o.Expiry = 2*time.Second, 3*time.Second
		return o
	}
	var nodes []*Node
	var recs []*recorder
	var evMu sync.Mutex
	events := map[string][]EventKind{}
	for _, h := range []string{"node-a", "node-b", "node-c"} {
		rec, log := newRecorder()
		recs = append(recs, rec)
		o := opts(h, log)
		o.Observer = func(ev Event) {
			if ev.Kind == EventDeadlinePassed || ev.Kind == EventOwnershipRestored {
				evMu.Lock()
				events[ev.Node] = append(events[ev.Node], ev.Kind)
				evMu.Unlock()
			}
		}
		nodes = append(nodes, newNode(t, client(t, l.Node(0).Options(), 5*time.Second), "ring", o))
	}
	start(t, ctx, nodes...)
	testkit.WaitFor(t, 5*time.Second, "no convergence", func() bool { return converged(nodes) })
	for _, n := range nodes {
		select {
		case <-n.Changes():
		default:
		}
	}
	D, E := nodes[0].opts.OwnershipDeadline, nodes[0].opts.Expiry

	if err := l.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	// No renewal can complete once Redis is stopped, but one whose last
	// reply arrived just before may still be publishing: take the latest
	// deadline seen during two heartbeat intervals.
	deadlines := make([]time.Time, len(nodes))
	for time.Since(paused) < 2*nodes[0].opts.HeartbeatInterval {
		for i, n := range nodes {
			if d := n.ValidUntil(); d.After(deadlines[i]) {
				deadlines[i] = d
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i, n := range nodes {
		if deadlines[i].IsZero() {
			t.Fatalf("%s lost ownership right after the pause", n.ID())
		}
	}
	ks := keys(2000)
	gaveUp := make([]time.Time, len(nodes))
	for time.Since(paused) < E+500*time.Millisecond {
		for i, n := range nodes {
			now := time.Now()
			owns := 0
			for _, k := range ks {
				if n.Contains(k) {
					owns++
				}
			}
			if now.After(deadlines[i]) && (owns > 0 || n.NodeCount() != 0 || len(n.Ranges()) != 0) {
				t.Fatalf("%s owns %d keys, %d nodes, ranges %v, %v after its deadline",
					n.ID(), owns, n.NodeCount(), n.Ranges(), now.Sub(deadlines[i]))
			}
			if owns == 0 && gaveUp[i].IsZero() {
				gaveUp[i] = now
			}
		}
		for i, c := range claims(nodes, ks) {
			if c > 1 {
				t.Fatalf("%s claimed by %d nodes during the pause", ks[i], c)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	for i, n := range nodes {
		lastHeartbeat := deadlines[i].Add(-D)
		t.Logf("%s: gave up %v after its last heartbeat (deadline %v, others' expiry %v)",
			n.ID(), gaveUp[i].Sub(lastHeartbeat), D, E)
		if gaveUp[i].IsZero() || !gaveUp[i].Before(lastHeartbeat.Add(E)) {
			t.Errorf("%s did not give its keys up before the others' expiry", n.ID())
		}
		select {
		case <-n.Changes(): // the deadline signalled the change
		default:
			t.Errorf("%s: no change signalled at the deadline", n.ID())
		}
	}

	if err := l.Node(0).Resume(); err != nil {
		t.Fatal(err)
	}
	resumed := time.Now()
	testkit.WaitFor(t, 10*time.Second, "no convergence after Redis came back", func() bool {
		ok, _ := exactlyOnce(nodes, ks)
		return ok && converged(nodes)
	})
	t.Logf("paused %v; every key owned once again %v after resuming", resumed.Sub(paused), time.Since(resumed))

	for i, rec := range recs {
		errs, infos := rec.find(slog.LevelError, msgExpired), rec.find(slog.LevelInfo, msgRestored)
		if len(errs) != 1 || len(infos) != 1 {
			t.Errorf("%s: %d ERROR and %d INFO records, want one each", nodes[i].ID(), len(errs), len(infos))
			continue
		}
		if !errs[0].Time.Before(infos[0].Time) {
			t.Errorf("%s: INFO before ERROR", nodes[i].ID())
		}
		if late, ok := attr(errs[0], "late"); !ok || late.Duration() < 0 {
			t.Errorf("%s: ERROR record without the delay since the deadline", nodes[i].ID())
		}
		evMu.Lock()
		got := events[nodes[i].ID()]
		evMu.Unlock()
		if !slices.Equal(got, []EventKind{EventDeadlinePassed, EventOwnershipRestored}) {
			t.Errorf("%s: observer saw %v, want deadline passed then ownership restored", nodes[i].ID(), got)
		}
	}
}

// One node loses Redis (its proxy black-holes) while the others keep
// working. At no moment do two nodes claim one key: the cut-off node
// gives its keys up at its deadline, the others take them over after the
// expiry. When the network is back it rejoins and gets keys again.
func TestPartitionedNodeGivesUpBeforeTakeover(t *testing.T) {
	l := lab.New(t, lab.Config{Proxy: true})
	ctx := testkit.Context(t, 60*time.Second)
	opts := func(h string, log *slog.Logger) Config {
		o := fast(h, log)
		o.OwnershipDeadline, o.Expiry = 2*time.Second, 3*time.Second
		return o
	}
	recA, logA := newRecorder()
	recC, logC := newRecorder()
	a := newNode(t, client(t, direct(l.Node(0)), time.Second), "ring", opts("node-a", logA))
	b := newNode(t, client(t, direct(l.Node(0)), time.Second), "ring", opts("node-b", nil))
	c := newNode(t, client(t, l.Node(0).Options(), 300*time.Millisecond), "ring", opts("node-c", logC))
	nodes := []*Node{a, b, c}
	start(t, ctx, nodes...)
	testkit.WaitFor(t, 5*time.Second, "no convergence", func() bool { return converged(nodes) })
	D, E, HB := c.opts.OwnershipDeadline, c.opts.Expiry, c.opts.HeartbeatInterval

	ks := keys(2000)
	var cKeys []string
	for _, k := range ks {
		if c.Contains(k) {
			cKeys = append(cKeys, k)
		}
	}
	if len(cKeys) == 0 {
		t.Fatal("node-c owns no keys")
	}

	l.Node(0).BlackHole()
	cut := time.Now()
	// A renewal whose replies passed before the cut may still publish.
	var deadline time.Time
	for time.Since(cut) < 2*HB {
		if d := c.ValidUntil(); d.After(deadline) {
			deadline = d
		}
		time.Sleep(5 * time.Millisecond)
	}
	if deadline.IsZero() {
		t.Fatal("node-c lost its keys at once")
	}
	var gaveUp, taken time.Time
	for taken.IsZero() {
		now := time.Now()
		cs := claims(nodes, cKeys)
		all := true
		for i, n := range cs {
			if n > 1 {
				t.Fatalf("%s claimed by %d nodes %v after the cut", cKeys[i], n, now.Sub(cut))
			}
			all = all && n == 1
		}
		if gaveUp.IsZero() && claims([]*Node{c}, cKeys[:1])[0] == 0 {
			gaveUp = now
		}
		if all && !gaveUp.IsZero() && claims([]*Node{a, b}, cKeys[:1])[0] == 1 {
			taken = now
		}
		if time.Since(cut) > E+5*time.Second {
			t.Fatal("node-c's keys were never taken over")
		}
		time.Sleep(5 * time.Millisecond)
	}
	lastHeartbeat := deadline.Add(-D)
	t.Logf("node-c gave up %v and the others took over %v after its last heartbeat (deadline %v, expiry %v)",
		gaveUp.Sub(lastHeartbeat), taken.Sub(lastHeartbeat), D, E)
	if limit := E + HB + time.Second; taken.Sub(lastHeartbeat) > limit {
		t.Errorf("takeover %v after the last heartbeat, want within %v", taken.Sub(lastHeartbeat), limit)
	}

	l.Node(0).Restore()
	restored := time.Now()
	testkit.WaitFor(t, 10*time.Second, "node-c did not rejoin", func() bool {
		ok, _ := exactlyOnce(nodes, ks)
		return ok && converged(nodes)
	})
	t.Logf("node-c owns keys again %v after the network came back", time.Since(restored))
	if n := len(recC.find(slog.LevelError, msgExpired)); n != 1 {
		t.Errorf("node-c logged %d ERROR records, want 1", n)
	}
	if n := len(recC.find(slog.LevelInfo, msgRestored)); n != 1 {
		t.Errorf("node-c logged %d INFO records, want 1", n)
	}
	if n := len(recC.find(slog.LevelWarn, msgRetry)); n == 0 {
		t.Error("node-c logged no failed attempt")
	}
	if n := len(recA.find(slog.LevelError, "")); n != 0 {
		t.Errorf("node-a logged %d ERROR records", n)
	}
}
