package replica_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
)

const ms = time.Millisecond

// latencyLab starts a master and replicas behind proxies with the given
// added round trips (master first), monitored by three sentinels.
func latencyLab(t *testing.T, cfg lab.Config, rtts ...time.Duration) *lab.Lab {
	t.Helper()
	cfg.Replicas, cfg.Sentinels, cfg.Proxy = len(rtts)-1, 3, true
	for _, d := range rtts {
		cfg.Nodes = append(cfg.Nodes, lab.NodeConfig{Latency: d})
	}
	return lab.New(t, cfg)
}

// eventLog collects a Selector's events, each with the table of the
// round it was made at when the Observer could read it (the Selector had
// not received another round yet).
type eventLog struct {
	sel    atomic.Pointer[replica.Selector]
	mu     sync.Mutex
	events []replica.Event
	tables [][]replica.NodeStatus // per event; nil when not read
}

func newEventLog() *eventLog { return &eventLog{} }

func (e *eventLog) observe(ev replica.Event) {
	var table []replica.NodeStatus
	if sel := e.sel.Load(); sel != nil {
		if r, t, ok := roundTable(sel); ok && r == ev.Round {
			table = t
		}
	}
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.tables = append(e.tables, table)
	e.mu.Unlock()
}

func (e *eventLog) all() []replica.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// table returns the table of ev's round, as the Observer read it.
func (e *eventLog) table(ev replica.Event) ([]replica.NodeStatus, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	for i, x := range e.events {
		if x.Round == ev.Round && x.Time.Equal(ev.Time) && e.tables[i] != nil {
			return e.tables[i], true
		}
	}
	return nil, false
}

// find returns the first event for which match holds, if there is one.
func (e *eventLog) find(match func(replica.Event) bool) (replica.Event, bool) {
	for _, ev := range e.all() {
		if match(ev) {
			return ev, true
		}
	}
	return replica.Event{}, false
}

// roundTable returns the Selector's table and the number of probe rounds
// it was made on; ok is false when a round completed while it was read.
func roundTable(sel *replica.Selector) (round uint64, table []replica.NodeStatus, ok bool) {
	round = sel.Rounds()
	table = sel.Table()
	return round, table, sel.Rounds() == round
}

// roundLog is the tables a test saw, by round.
type roundLog map[uint64][]replica.NodeStatus

// String lists the tables, in round order, for a failure message.
func (l roundLog) String() string {
	var b strings.Builder
	for _, r := range slices.Sorted(maps.Keys(l)) {
		fmt.Fprintf(&b, "\n  round %d: %s", r, tableString(l[r]))
	}
	return b.String()
}

// tableString is a table in one line: per node its address, RTT, and
// whether it is elected, Nearest, or why it is excluded.
func tableString(table []replica.NodeStatus) string {
	var parts []string
	for _, st := range table {
		s := fmt.Sprintf("%s %s %v", st.Role, st.Addr, st.RTT.Round(10*time.Microsecond))
		switch {
		case st.Elected:
			s += " elected"
		case st.Excluded != replica.NotExcluded:
			s += " excluded " + string(st.Excluded)
		}
		if st.Nearest {
			s += " nearest"
		}
		parts = append(parts, s)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// waitElection waits until the Selector's election is in the state want
// accepts, for at most rounds more probe rounds, and returns its round and
// table. The election follows the RTTs measured each round, and on a
// loaded machine scheduling delays of several milliseconds move them:
// replicas 3 ms apart swap places for a round, a master as near as a
// replica is measured nearer by more than the latency window. A test that
// needs a state waits for the rounds to produce it; a state the rounds
// never produce fails, with the tables seen.
func waitElection(t *testing.T, ctx context.Context, sel *replica.Selector, rounds uint64, what string, want func([]replica.NodeStatus) bool) (uint64, []replica.NodeStatus) {
	t.Helper()
	r, table, _ := followTables(t, ctx, sel, rounds, what, want)
	return r, table
}

// followTables is waitElection that also returns the tables of the
// rounds it saw before (by round; a round it missed has none).
func followTables(t *testing.T, ctx context.Context, sel *replica.Selector, rounds uint64, what string, want func([]replica.NodeStatus) bool) (uint64, []replica.NodeStatus, roundLog) {
	t.Helper()
	start := sel.Rounds()
	seen := roundLog{}
	for {
		r, table, ok := roundTable(sel)
		if !ok {
			continue
		}
		if want(table) {
			return r, table, seen
		}
		seen[r] = table
		if r >= start+rounds {
			t.Fatalf("the election was not %s within %d probe rounds; tables seen:%v", what, rounds, seen)
		}
		if err := sel.WaitRound(ctx, r+1); err != nil {
			t.Fatalf("waiting for the election to be %s: %v; tables seen:%v", what, err, seen)
		}
	}
}

// followRounds waits round by round for the first event (past or future)
// for which match holds, for at most rounds more probe rounds, and returns
// it with the tables of the rounds it saw. The bound is in rounds, not in
// time: what the test waits for happens at a probe round, and a loaded
// machine stretches rounds, not their number. The event may come a round
// after its own (the Observer is called from another goroutine).
func followRounds(t *testing.T, ctx context.Context, sel *replica.Selector, events *eventLog, rounds uint64, what string, match func(replica.Event) bool) (replica.Event, roundLog) {
	t.Helper()
	start := sel.Rounds()
	seen := roundLog{}
	for {
		r, table, ok := roundTable(sel)
		if !ok {
			continue
		}
		seen[r] = table
		if ev, ok := events.find(match); ok {
			return ev, seen
		}
		if r >= start+rounds+1 {
			t.Fatalf("no event %s within %d probe rounds; events: %v; tables seen:%v", what, rounds, events.all(), seen)
		}
		if err := sel.WaitRound(ctx, r+1); err != nil {
			t.Fatalf("waiting for an event %s: %v; events: %v", what, err, events.all())
		}
	}
}

// nearestEligible reports whether the table has near eligible and nearer
// than far (or far not eligible).
func nearestEligible(table []replica.NodeStatus, near, far string) bool {
	r, ok := rows(table, near, far)
	return ok && r[0].Excluded == replica.NotExcluded && (r[1].Excluded != replica.NotExcluded || r[0].RTT < r[1].RTT)
}

// nearestRule fails the test unless the table's choice for Nearest
// follows the rule: the master when no replica is elected, or when the
// master answers and its RTT plus the window is below every elected
// replica's.
func nearestRule(t *testing.T, table []replica.NodeStatus, window time.Duration) {
	t.Helper()
	var m replica.NodeStatus
	best := time.Duration(-1)
	for _, st := range table {
		switch {
		case st.Role == replica.RoleMaster:
			m = st
		case st.Elected && (best < 0 || st.RTT < best):
			best = st.RTT
		}
	}
	want := best < 0 || (m.Healthy && m.Samples > 0 && m.RTT+window < best)
	if m.Nearest != want {
		t.Fatalf("Nearest on the master is %v with the master at %v and the nearest elected replica at %v (window %v), want %v: %s",
			m.Nearest, m.RTT, best, window, want, tableString(table))
	}
}

// readStable runs total GETs through c, from workers goroutines, in
// batches, and returns the GETs each node ran in the batches during which
// the election stayed in the state want accepts, their sum (total), and
// the table of the last of them. A batch counts when want held before and
// after it and at most one probe round completed in between: its reads
// were then routed by those two elections alone. Any other batch is a
// measurement that could not tell which elections routed its reads: it is
// not counted, and the next batch waits for the state again
// (waitElection), with half the reads when it spanned more than one
// round. The probe rounds spent waiting and in batches not counted are
// bounded by rounds (the rounds of counted batches are not: a loaded
// machine makes reads slow); past that the test fails. want may fail the
// test itself on a table that breaks a rule.
func readStable(t *testing.T, ctx context.Context, c redis.UniversalClient, sel *replica.Selector, nodes []*lab.Node,
	workers, total int, rounds uint64, what string, want func([]replica.NodeStatus) bool) (gets []int, sum int, last []replica.NodeStatus) {
	t.Helper()
	gets = make([]int, len(nodes))
	batch := max(total/4, workers)
	var wasted uint64
	spanned, left := 0, roundLog{}
	for sum < total {
		if wasted >= rounds {
			t.Fatalf("the election did not stay %s through %d of %d reads: %d probe rounds spent waiting for it or in batches not counted (%d spanned more than one round; left the state at:%v)",
				what, sum, total, wasted, spanned, left)
		}
		start := sel.Rounds()
		r0, _ := waitElection(t, ctx, sel, rounds-wasted, what, want)
		wasted += r0 - start
		n := min(batch, total-sum)
		before := countGets(t, nodes)
		read(t, ctx, c, workers, n)
		d, s := before.deltas()
		r1, table, ok := roundTable(sel)
		switch {
		case ok && r1 <= r0+1 && want(table):
			for i := range d {
				gets[i] += d[i]
			}
			sum += s
			last = table
			continue
		case ok && r1 > r0+1:
			spanned++
			batch = max(batch/2, workers)
		case ok:
			left[r1] = table
		}
		wasted += max(r1, r0+1) - r0
	}
	if spanned > 0 || len(left) > 0 {
		t.Logf("batches of reads not counted: %d spanned more than one probe round; %d ended with the election no longer %s:%v", spanned, len(left), what, left)
	}
	return gets, sum, last
}

func newSelector(t *testing.T, cfg replica.Config) (*replica.Selector, *eventLog) {
	t.Helper()
	log := newEventLog()
	cfg.Observer = log.observe
	s, err := replica.NewSelector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	log.sel.Store(s)
	return s, log
}

// newClient returns a Sentinel client for the lab with the selector (nil:
// the client's default), closed when the test ends.
func newClient(t *testing.T, l *lab.Lab, sel sentinel.ReplicaSelector, mod func(*sentinel.Config)) *sentinel.Client {
	t.Helper()
	opts := sentinel.Config{
		MasterName:      l.MasterName(),
		SentinelAddrs:   l.SentinelAddrs(),
		ReplicaSelector: sel,
		ReadFrom:        sentinel.Nearest,
		RefreshInterval: 500 * ms,
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := sentinel.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c
}

// waitReplicas waits until the client routes with n healthy replicas.
func waitReplicas(t *testing.T, ctx context.Context, c *sentinel.Client, n int) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("%d healthy replicas", n), func() bool {
		_ = c.Ping(ctx).Err()
		return len(c.Stats().Replicas) == n
	})
}

// ready writes the key the tests read and waits until the client routes
// with both replicas. With rounds > 0 it then sends a read that may go to
// a replica (the first starts the prober) and waits for that many probe
// rounds.
func ready(t *testing.T, ctx context.Context, c *sentinel.Client, sel *replica.Selector, rounds uint64) {
	t.Helper()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, ctx, c, 2)
	if rounds == 0 {
		return
	}
	_ = c.Get(ctx, "k")
	if err := sel.WaitRound(ctx, rounds); err != nil {
		t.Fatal(err)
	}
}

// cmdCalls reads how many times cmd ran on the node (INFO commandstats,
// on the node's own port).
func cmdCalls(t testing.TB, n *lab.Node, cmd string) int {
	t.Helper()
	s, err := n.Do(context.Background(), "INFO", "commandstats").Text()
	if err != nil {
		t.Fatal(err)
	}
	return parseCalls(s, cmd)
}

// parseCalls reads a command's call count from INFO commandstats
// ("cmdstat_get:calls=10,usec=...").
func parseCalls(info, cmd string) int {
	stats := lab.ParseInfo(info)["cmdstat_"+cmd]
	calls, _, _ := strings.Cut(strings.TrimPrefix(stats, "calls="), ",")
	n, _ := strconv.Atoi(calls)
	return n
}

// counter snapshots the GETs each node has run.
type counter struct {
	t     testing.TB
	nodes []*lab.Node
	base  []int
}

func countGets(t testing.TB, nodes []*lab.Node) *counter {
	c := &counter{t: t, nodes: nodes}
	for _, n := range nodes {
		c.base = append(c.base, cmdCalls(t, n, "get"))
	}
	return c
}

// deltas returns the GETs per node since countGets, and their sum.
func (c *counter) deltas() ([]int, int) {
	out := make([]int, len(c.nodes))
	sum := 0
	for i, n := range c.nodes {
		out[i] = cmdCalls(c.t, n, "get") - c.base[i]
		sum += out[i]
	}
	return out, sum
}

// read runs total GETs from workers goroutines, each sequential.
func read(t *testing.T, ctx context.Context, c redis.UniversalClient, workers, total int) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= int64(total) {
				if err := c.Get(ctx, "k").Err(); err != nil && !errors.Is(err, redis.Nil) {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := failed.Load(); err != nil {
		t.Fatal(*err)
	}
}

// clientIDs lists the ids of the connections named name on the node.
func clientIDs(t testing.TB, n *lab.Node, name string) []string {
	t.Helper()
	list, err := n.Do(context.Background(), "CLIENT", "LIST").Text()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for line := range strings.SplitSeq(list, "\n") {
		if f := strings.Fields(line); slices.Contains(f, "name="+name) {
			ids = append(ids, f[0])
		}
	}
	return ids
}

// clientConns counts the connections named name on the node.
func clientConns(t testing.TB, n *lab.Node, name string) int { return len(clientIDs(t, n, name)) }

func row(t *testing.T, table []replica.NodeStatus, addr string) replica.NodeStatus {
	t.Helper()
	st, ok := findRow(table, addr)
	if !ok {
		t.Fatalf("%s not in the table %+v", addr, table)
	}
	return st
}

// findRow returns addr's row, if the table has one (a replica the client
// no longer reports healthy has none).
func findRow(table []replica.NodeStatus, addr string) (replica.NodeStatus, bool) {
	for _, st := range table {
		if st.Addr == addr {
			return st, true
		}
	}
	return replica.NodeStatus{}, false
}

// rows returns the rows of addrs, and false unless the table has each.
func rows(table []replica.NodeStatus, addrs ...string) ([]replica.NodeStatus, bool) {
	out := make([]replica.NodeStatus, len(addrs))
	for i, addr := range addrs {
		st, ok := findRow(table, addr)
		if !ok {
			return nil, false
		}
		out[i] = st
	}
	return out, true
}

// Master +6 ms, replica A +6 ms, replica B +42 ms: before the first probe
// round, reads go to the master; after it, the election names A, and while
// it names A the nearest (Nearest: the master is not nearer than A by more
// than the latency window), at least 99% of the reads go to A.
//
// The master and A are equally near, so which of them Nearest reads from
// rests on the measured RTTs: on a loaded machine a scheduling delay of a
// few milliseconds in A's PINGs makes the master nearer by more than the
// 2 ms window for a round, and Nearest reads then rightly go to the
// master. The test checks every table it sees against that rule, and
// counts the reads made while the election named A (readStable).
func TestNearReplicaTakesTheReads(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := latencyLab(t, lab.Config{}, 6*ms, 6*ms, 42*ms)
	master, near, far := l.Node(0), l.Node(1), l.Node(2)
	const window = replica.DefaultLatencyWindow
	sel, events := newSelector(t, replica.Config{LatencyWindow: window, ProbeInterval: 500 * ms})
	c := newClient(t, l, sel, nil)
	ready(t, ctx, c, sel, 0)
	if sel.Rounds() != 0 {
		t.Fatal("the prober ran before the first read that may go to a replica")
	}

	// The first reads start the prober; until its first round completes
	// (B's PINGs take 2 × 42 ms), they go to the master. The first read is
	// picked before any round (its Pick starts the prober); the reads that
	// returned before the first round were picked before it too.
	gets := countGets(t, l.Nodes())
	before := 0
	for i := 0; i < 50 && sel.Rounds() == 0; i++ {
		if err := c.Get(ctx, "k").Err(); err != nil {
			t.Fatal(err)
		}
		if sel.Rounds() == 0 {
			before++ // picked before the first round completed
		}
	}
	d, _ := gets.deltas()
	if d[0] < max(before, 1) {
		t.Fatalf("%d reads were picked before the first round (and the first always is); the master ran %d (replicas %v)", max(before, 1), d[0], d[1:])
	}
	t.Logf("%d reads before the first probe round, all on the master", before)

	if err := sel.WaitRound(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// The first election names A: 36 ms nearer than B, which no
	// scheduling delay short of a stall undoes; if the round measured A
	// excluded or slower than B, it must say so.
	ev, _ := followRounds(t, ctx, sel, events, 1, "first round", func(ev replica.Event) bool { return ev.Reason == replica.ReasonFirstRound })
	table, ok := events.table(ev)
	if ev.Round != 1 || (!slices.Equal(ev.Elected, []string{near.Addr()}) && !(ok && !nearestEligible(table, near.Addr(), far.Addr()))) {
		t.Fatalf("first election %v; its table (read: %v): %s", ev, ok, tableString(table))
	}
	if ok {
		nearestRule(t, table, window)
		t.Logf("first round: %s", tableString(table))
	} else {
		t.Logf("the first round's table was not read before the second round; its election: %v", ev)
	}

	// Reads while the election names A, the nearest.
	nearest := func(table []replica.NodeStatus) bool {
		nearestRule(t, table, window)
		r, ok := rows(table, master.Addr(), near.Addr(), far.Addr())
		return ok && r[1].Elected && r[1].Nearest && !r[0].Nearest && !r[2].Elected
	}
	d, total, table := readStable(t, ctx, c, sel, l.Nodes(), 8, 2000, 60, "naming A the nearest", nearest)
	if share := float64(d[1]) / float64(total); share < 0.99 {
		t.Fatalf("near replica ran %d of %d reads (%.1f%%; master %d, far %d) while the election named it, want ≥ 99%%", d[1], total, 100*share, d[0], d[2])
	}
	// The table the last counted reads were routed by: RTTs relative to
	// each other and to the latencies the lab adds (which no measurement
	// can undercut; scheduling delays only add to them).
	m, n, f := row(t, table, master.Addr()), row(t, table, near.Addr()), row(t, table, far.Addr())
	if m.Role != replica.RoleMaster || !m.Healthy || m.RTT < 5*ms || m.Nearest {
		t.Fatalf("master row %+v", m)
	}
	if !n.Elected || !n.Nearest || n.RTT < 5*ms || n.RTT > m.RTT+window || n.RTT >= f.RTT || !n.LinkUp || !n.LagKnown {
		t.Fatalf("near row %+v (master %v, far %v)", n, m.RTT, f.RTT)
	}
	// B is excluded as slow when its RTT exceeds 3 × the master's. The lab
	// makes it 7 ×, but scheduling delays add to every RTT alike: on a
	// loaded machine (20 ms on each) the ratio falls under 3, and B is then
	// merely outside the window of A.
	slow := float64(f.RTT) > replica.DefaultExclusionFactor*float64(m.RTT)
	if f.Elected || f.RTT < 40*ms || (f.Excluded == replica.ExcludedSlow) != slow ||
		(!slow && (f.Excluded != replica.NotExcluded || f.RTT-n.RTT <= window)) {
		t.Fatalf("far row %+v (master %v, near %v)", f, m.RTT, n.RTT)
	}
	for _, st := range table {
		t.Logf("%-8s %-22s rtt %-10v last %-10v elected %-5v %s %s", st.Role, st.Addr, st.RTT, st.LastRTT, st.Elected, st.Excluded, st.Why)
	}
}

// Swapping the replicas' latencies at run time: the election follows at
// the first probe round that measures the swap, reads move, and the
// client's pooled connections to the replica that left are closed,
// without restarting the client.
//
// One sample is enough (EWMAAlpha 0.75: B's average falls from 42 ms to
// 15 ms, under 3 × the master's 6 ms), so the election follows at the
// round after the one under way when the latencies changed, unless that
// round measured B as slow: a loaded machine can delay B's PING by the
// 3 ms that leaves. The bound is in rounds, checked against the tables of
// the rounds in between; wall-clock time is only logged (a loaded machine
// stretches rounds, not their number).
func TestElectionFollowsASwap(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := latencyLab(t, lab.Config{}, 6*ms, 6*ms, 42*ms)
	a, b := l.Node(1), l.Node(2)
	const interval = 500 * ms
	sel, events := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: interval})
	// ReplicaPreferred: the replica election itself. (Under Nearest the
	// master, as near as B, takes the reads until B's average has
	// converged, a few rounds.)
	c := newClient(t, l, sel, func(o *sentinel.Config) { o.ClientName, o.ReadFrom = "swap-test", sentinel.ReplicaPreferred })
	ready(t, ctx, c, sel, 2)
	elected := func(n *lab.Node) func([]replica.NodeStatus) bool {
		return func(table []replica.NodeStatus) bool {
			r, ok := rows(table, a.Addr(), b.Addr())
			return ok && r[0].Elected == (n == a) && r[1].Elected == (n == b)
		}
	}
	d, total, _ := readStable(t, ctx, c, sel, l.Nodes(), 8, 200, 30, "electing A alone", elected(a))
	pooled := clientIDs(t, a, "swap-test")
	if d[1] != total || len(pooled) < 2 {
		t.Fatalf("reads per node %v while the election named A; pooled connections to A before the swap: %v", d, pooled)
	}

	// Readers keep going through the swap.
	stop := make(chan struct{})
	var readers sync.WaitGroup
	var readErr atomic.Pointer[error]
	for range 8 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := c.Get(ctx, "k").Err(); err != nil {
					readErr.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	time.Sleep(300 * ms)
	swapped := time.Now()
	a.SetLatency(42 * ms)
	b.SetLatency(6 * ms)
	// At most one round was under way; the next one measures the swap.
	r0 := sel.Rounds()
	ev, seen := followRounds(t, ctx, sel, events, 10, "electing B", func(ev replica.Event) bool {
		return ev.Time.After(swapped) && slices.Equal(ev.Elected, []string{b.Addr()})
	})
	t.Logf("election followed the swap at round %d (swap after round %d), %v after it (%s: %s)", ev.Round, r0, ev.Time.Sub(swapped), ev.Reason, ev.Detail)
	for r := r0 + 2; r < ev.Round; r++ {
		table, ok := seen[r]
		if !ok {
			t.Fatalf("the election followed the swap at round %d, and round %d, which measured the swap, was not seen:%v", ev.Round, r, seen)
		}
		if st := row(t, table, b.Addr()); st.Excluded == replica.NotExcluded {
			t.Fatalf("round %d measured the swap, found B eligible and did not elect it alone (%s); elected at round %d", r, tableString(table), ev.Round)
		}
		t.Logf("round %d measured the swap but B as excluded: %s", r, tableString(table))
	}
	time.Sleep(300 * ms)
	close(stop)
	readers.Wait()
	if err := readErr.Load(); err != nil {
		t.Fatal(*err)
	}
	// Reads move: while the election names B, B runs them all.
	d, total, _ = readStable(t, ctx, c, sel, l.Nodes(), 8, 1000, 30, "electing B alone", elected(b))
	if d[2] < total*99/100 {
		t.Fatalf("after the re-election, reads per node %v (while the election named B); want ≥ 99%% on B", d)
	}
	// The client's pooled connections to A were evicted: none of those
	// open before the swap is left. (The client's topology checks, ROLE
	// every RefreshInterval, may have opened a new one.)
	testkit.WaitFor(t, 5*time.Second, "the client's pooled connections to A to close", func() bool {
		return !slices.ContainsFunc(clientIDs(t, a, "swap-test"), func(id string) bool { return slices.Contains(pooled, id) })
	})
	if n := clientConns(t, a, "swap-test-probe"); n != 1 {
		t.Fatalf("%d probe connections to A, want 1", n)
	}
}

// A replica slower than ExclusionFactor × the master's RTT is never
// elected; with every replica excluded, Nearest and ReplicaPreferred read
// from the master, and Replica from the nearest replica still answering.
//
// The rule compares measured RTTs, and scheduling delays add to every RTT
// alike: on a loaded machine 42 ms against the master's 6 ms can measure
// under 3 ×. The test reads while the tables show every replica excluded
// (readStable), and judges B's row by the RTTs in it.
func TestExclusionFactor(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := latencyLab(t, lab.Config{}, 6*ms, 42*ms, 60*ms)
	master, a, b := l.Node(0), l.Node(1), l.Node(2)
	sel, events := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: 200 * ms})
	c := newClient(t, l, sel, nil)
	ready(t, ctx, c, sel, 3)
	allSlow := func(table []replica.NodeStatus) bool {
		r, ok := rows(table, a.Addr(), b.Addr())
		return ok && r[0].Excluded == replica.ExcludedSlow && r[1].Excluded == replica.ExcludedSlow
	}
	// Replica reads from the nearest replica as measured: A (42 ms) while
	// its RTT is below B's (60 ms), which scheduling delays on a loaded
	// machine can invert for a round; those rounds are not counted.
	aNearer := func(table []replica.NodeStatus) bool {
		r, ok := rows(table, a.Addr(), b.Addr())
		return allSlow(table) && ok && r[0].RTT < r[1].RTT
	}
	for _, tc := range []struct {
		rf     sentinel.ReadFrom
		node   int
		stable func([]replica.NodeStatus) bool
	}{{sentinel.Nearest, 0, allSlow}, {sentinel.ReplicaPreferred, 0, allSlow}, {sentinel.Replica, 1, aNearer}} {
		d, total, _ := readStable(t, sentinel.WithReadFrom(ctx, tc.rf), c, sel, l.Nodes(), 4, 100, 30, "excluding every replica as slow", tc.stable)
		if d[tc.node] != total {
			t.Fatalf("%s with every replica excluded: reads per node %v, want all on node %d", tc.rf, d, tc.node)
		}
	}

	// A comes near; B stays slow and is never elected.
	a.SetLatency(6 * ms)
	followRounds(t, ctx, sel, events, 10, "electing A", func(ev replica.Event) bool { return slices.Equal(ev.Elected, []string{a.Addr()}) })
	r := sel.Rounds()
	if err := sel.WaitRound(ctx, r+5); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.all() {
		if slices.Contains(ev.Elected, b.Addr()) {
			t.Fatalf("the slow replica was elected: %v", ev)
		}
	}
	table := sel.Table()
	m, st := row(t, table, master.Addr()), row(t, table, b.Addr())
	slow := float64(st.RTT) > replica.DefaultExclusionFactor*float64(m.RTT)
	if st.Elected || st.RTT < 60*ms || (st.Excluded == replica.ExcludedSlow) != slow || (!slow && st.Excluded != replica.NotExcluded) {
		t.Fatalf("B: %+v (master %v)", st, m.RTT)
	}
}

// Black-holing the elected replica drops it at the next probe round and
// reads move to the other; it is elected again, as recovered, once it
// answers.
//
// A (6 ms) and B (9 ms) are 3 ms apart, within what scheduling delays add
// to an RTT on a loaded machine: which of them the election names, and
// whether B is within 3 × the master (6 ms), rests on each round's
// measurements. So the test waits for the election it needs before each
// step, counts reads while the election names B (readStable), and bounds
// its waits in probe rounds. Whether A's return is labelled "recovered"
// can be seen only when nothing else changed in the round that elected it
// again: when another node's change ranks first, or A's first RTT after
// the black hole put it outside the window for a round (it is then elected
// later, for its RTT), the cycle is measured again, at most 4 times.
func TestBlackHoledReplicaIsDropped(t *testing.T) {
	ctx := testkit.Context(t, 120*time.Second)
	// Sentinel and the client's refresh would drop the replica too; they
	// are slowed down so that the probe is what drops it.
	l := latencyLab(t, lab.Config{DownAfter: 30 * time.Second}, 6*ms, 6*ms, 9*ms)
	const interval, timeout = 300 * ms, 300 * ms
	sel, events := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: interval, ProbeTimeout: timeout})
	c := newClient(t, l, sel, func(o *sentinel.Config) {
		o.ReadFrom, o.RefreshInterval, o.ReadTimeout = sentinel.ReplicaPreferred, time.Minute, time.Second
	})
	ready(t, ctx, c, sel, 2)
	for cycle := 1; ; cycle++ {
		if blackHoleCycle(t, ctx, l, sel, c, events) {
			return
		}
		if cycle == 4 {
			t.Fatalf("A's return could not be told apart from other changes in %d cycles", cycle)
		}
	}
}

// blackHoleCycle black-holes A, checks that the next probe round drops it
// and that reads go to B, restores it and checks its election again. It
// reports false when the label of A's return could not be judged (another
// change in the same round ranked first, or A was eligible but outside the
// window first): the caller runs the cycle again.
func blackHoleCycle(t *testing.T, ctx context.Context, l *lab.Lab, sel *replica.Selector, c *sentinel.Client, events *eventLog) bool {
	t.Helper()
	a, b := l.Node(1), l.Node(2)
	waitElection(t, ctx, sel, 30, "electing A", func(table []replica.NodeStatus) bool {
		st, ok := findRow(table, a.Addr())
		return ok && st.Elected
	})

	a.BlackHole()
	holed := time.Now()
	// Read after the black hole: at most one round was under way then (it
	// may find A healthy); the next one starts after it and must find A
	// unreachable. Read from the tables: a round may also have measured A
	// outside the window of B first, and A then left for its RTT.
	r0 := sel.Rounds()
	rx, table, _ := followTables(t, ctx, sel, 2, "finding A unreachable", func(table []replica.NodeStatus) bool {
		st, ok := findRow(table, a.Addr())
		return ok && st.Excluded == replica.ExcludedUnreachable
	})
	if rx > r0+2 {
		t.Logf("A found unreachable at round %d, but round %d was not seen: measuring again", rx, r0+2)
		a.Restore()
		return false
	}
	// If A was elected until then, it left for that.
	left, ok := events.find(func(ev replica.Event) bool {
		return ev.Time.After(holed) && ev.Round <= rx && !slices.Contains(ev.Elected, a.Addr())
	})
	if !ok {
		left, _ = followRounds(t, ctx, sel, events, 2, "A leaving the election", func(ev replica.Event) bool {
			return ev.Time.After(holed) && !slices.Contains(ev.Elected, a.Addr())
		})
	}
	if left.Round > rx || (left.Round == rx && (left.Reason != replica.ReasonUnreachable || !strings.Contains(left.Detail, a.Addr()+" left (unreachable: "))) {
		t.Fatalf("A found unreachable at round %d (black hole after round %d); it left the election with %v", rx, r0, left)
	}
	// B is elected in its place, unless that round measured B excluded
	// too (slow against the master, or not answering in time).
	if st := row(t, table, b.Addr()); !st.Elected && st.Excluded == replica.NotExcluded {
		t.Fatalf("round %d dropped A and did not elect B: %s", rx, tableString(table))
	}
	t.Logf("A unreachable at round %d, seen %v after the black hole (after round %d): %s; A left the election at round %d (%s)",
		rx, time.Since(holed), r0, tableString(table), left.Round, left.Reason)
	onB := func(table []replica.NodeStatus) bool {
		r, ok := rows(table, a.Addr(), b.Addr())
		if ok && (r[0].Elected || r[0].Healthy) {
			t.Fatalf("A is %+v while black-holed", r[0])
		}
		return ok && r[1].Elected
	}
	d, total, _ := readStable(t, ctx, c, sel, l.Nodes(), 4, 100, 30, "electing B alone", onB)
	if d[2] != total {
		t.Fatalf("reads per node after the drop %v (while the election named B), want all on B", d)
	}

	a.Restore()
	restored := time.Now()
	// As for the drop: the round under way may have probed A before; the
	// one after it probes A answering. A is elected once its RTT is within
	// the window of B's, which a loaded machine may delay by a few rounds.
	r1 := sel.Rounds()
	ev, seen := followRounds(t, ctx, sel, events, 30, "electing A again", func(ev replica.Event) bool {
		return ev.Time.After(restored) && slices.Contains(ev.Elected, a.Addr())
	})
	t.Logf("A elected again at round %d, %v after the network came back (restored after round %d): %v", ev.Round, ev.Time.Sub(restored), r1, ev)
	if !strings.Contains(ev.Detail, a.Addr()+" joined (") {
		t.Fatalf("A came back with %v", ev)
	}
	switch ev.Reason {
	case replica.ReasonRecovered:
		return true
	case replica.ReasonRTT:
		// A was elected for its RTT, so an earlier round found it answering
		// but outside the window (an excluded replica elected again is
		// "recovered"). The test must have seen that round, or missed one.
		for r := r1 + 1; r < ev.Round; r++ {
			table, ok := seen[r]
			if !ok {
				t.Logf("round %d not seen: measuring again", r)
				return false
			}
			if st := row(t, table, a.Addr()); st.Healthy && st.Excluded == replica.NotExcluded && !st.Elected {
				t.Logf("round %d found A answering outside the window (%s): measuring again", r, tableString(table))
				return false
			}
		}
		t.Fatalf("A came back with %v, and no earlier round found it answering outside the window:%v", ev, seen)
	case replica.ReasonUnreachable, replica.ReasonLinkDown, replica.ReasonStale, replica.ReasonSlow:
		// Another node left in the same round, for a reason that ranks
		// before "recovered": the event is labelled with that one.
		if strings.Contains(strings.ReplaceAll(ev.Detail, a.Addr()+" joined", ""), " left ("+string(ev.Reason)+": ") {
			t.Logf("another change ranked first in the round that elected A again: measuring again")
			return false
		}
	}
	t.Fatalf("A came back with %v", ev)
	return false
}

// A replica whose replication stalls while it still answers is excluded
// once its lag exceeds MaxStaleness, and elected again when it has caught
// up. Its replication is made to go through a proxy of the test's own,
// which is then black-holed.
//
// When: the lag estimate is good to one spacing of the master's offset
// samples, and a round follows within one more. That spacing is the probe
// interval on an idle machine and longer on a loaded one (a round that
// outlasts the interval drops ticks), so the bounds use the spacing the
// test measured, from the probe times in the tables it saw. B (6 ms) and A
// (9 ms) are 3 ms apart, within a loaded machine's scheduling delays, so
// B may leave the election for its RTT before it is stale: the exclusion
// is read from the tables, and each step waits for the election it needs.
func TestStaleReplicaIsExcluded(t *testing.T) {
	ctx := testkit.Context(t, 120*time.Second)
	// FailoverTimeout: Sentinel re-points a replica that follows another
	// address than the master's only after that long.
	l := latencyLab(t, lab.Config{FailoverTimeout: 2 * time.Minute}, 6*ms, 9*ms, 6*ms)
	master, a, b := l.Node(0), l.Node(1), l.Node(2)
	detour := replicateThroughDetour(t, ctx, master, b)

	const maxStale = time.Second
	const interval = 250 * ms
	sel, events := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: interval, MaxStaleness: maxStale})
	c := newClient(t, l, sel, func(o *sentinel.Config) { o.ReadFrom = sentinel.ReplicaPreferred })
	ready(t, ctx, c, sel, 2)
	_, table := waitElection(t, ctx, sel, 30, "electing B", func(table []replica.NodeStatus) bool {
		st, ok := findRow(table, b.Addr())
		return ok && st.Elected
	})
	if st := row(t, table, b.Addr()); !st.LagKnown || st.Lag > maxStale {
		t.Fatalf("B before the stall: %+v", st)
	}

	// A writer keeps the master's offset moving.
	defer keepWriting(ctx, c)()

	detour.BlackHole()
	stalled := time.Now()
	staleB := func(table []replica.NodeStatus) bool {
		st, ok := findRow(table, b.Addr())
		return ok && st.Excluded == replica.ExcludedStale
	}
	rx, table, seen := followTables(t, ctx, sel, 40, "excluding B as stale", staleB)
	observed := time.Now()
	seen[rx] = table
	st := row(t, table, b.Addr())
	if !st.Healthy {
		t.Fatalf("B excluded as stale while not answering: %+v", st)
	}
	// The spacing of the master's samples, from the rounds seen (a round
	// missed counts as part of the gap it leaves).
	var spacing time.Duration
	var prevRound uint64
	var prevProbe time.Time
	for _, r := range slices.Sorted(maps.Keys(seen)) {
		m, ok := findRow(seen[r], master.Addr())
		if !ok || m.LastProbe.IsZero() {
			continue
		}
		if !prevProbe.IsZero() && r > prevRound {
			spacing = max(spacing, m.LastProbe.Sub(prevProbe)/time.Duration(r-prevRound))
		}
		prevRound, prevProbe = r, m.LastProbe
	}
	spacing = max(spacing, interval)
	// Not before the lag could exceed the bound (the exclusion was seen
	// after its round completed), and by the round after the one whose
	// estimate must exceed it (B's probe at that round started by then).
	early, late := observed.Sub(stalled), st.LastProbe.Sub(stalled)
	t.Logf("B excluded as stale at round %d: its probe %v after the stall, seen %v after it; master samples %v apart; %s (lag %v, %d bytes, rtt %v)",
		rx, late, early, spacing, st.Why, st.Lag, st.LagBytes, st.RTT)
	if early < maxStale-spacing || late > maxStale+3*spacing {
		t.Fatalf("B excluded as stale (probe %v after the stall, seen %v after it), want between %v and %v (samples %v apart):%v",
			late, early, maxStale-spacing, maxStale+3*spacing, spacing, seen)
	}
	// If B was elected until then, the election changed for staleness,
	// and named A unless that round measured A excluded too.
	if prev, ok := seen[rx-1]; ok && row(t, prev, b.Addr()).Elected {
		ev, _ := followRounds(t, ctx, sel, events, 2, "B leaving as stale", func(ev replica.Event) bool {
			return ev.Round == rx && !slices.Contains(ev.Elected, b.Addr())
		})
		if ev.Reason != replica.ReasonStale || !strings.Contains(ev.Detail, b.Addr()+" left (stale: ") ||
			(!slices.Equal(ev.Elected, []string{a.Addr()}) && row(t, table, a.Addr()).Excluded == replica.NotExcluded) {
			t.Fatalf("B left with %v; its round's table %s", ev, tableString(table))
		}
	}
	onA := func(table []replica.NodeStatus) bool {
		r, ok := rows(table, a.Addr(), b.Addr())
		return ok && r[0].Elected && r[1].Excluded == replica.ExcludedStale
	}
	d, total, _ := readStable(t, ctx, c, sel, l.Nodes(), 4, 100, 30, "electing A with B stale", onA)
	if d[1] != total {
		t.Fatalf("reads per node while B is stale %v, want all on A", d)
	}

	detour.Restore() // resets the stalled link; B reconnects and catches up
	restored := time.Now()
	_, table = waitElection(t, ctx, sel, 60, "electing B again", func(table []replica.NodeStatus) bool {
		st, ok := findRow(table, b.Addr())
		return ok && st.Elected
	})
	t.Logf("B elected again %v after the link came back", time.Since(restored))
	if st := row(t, table, b.Addr()); st.Lag > maxStale || !st.LinkUp {
		t.Fatalf("B re-elected with %+v", st)
	}
}

// Under MaxStaleness, a replica whose replication stalls serves no read,
// whatever the read preference: ReadFrom Replica fails with the typed
// error that names the deployment and why the replica was excluded, and
// never reads the master; Nearest and ReplicaPreferred read from the
// master. Once the replica has caught up, Replica reads from it again.
func TestStaleReplicaServesNoRead(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	// FailoverTimeout: Sentinel re-points a replica that follows another
	// address than the master's only after that long.
	l := latencyLab(t, lab.Config{FailoverTimeout: 2 * time.Minute}, 2*ms, 2*ms)
	master, b := l.Node(0), l.Node(1)
	detour := replicateThroughDetour(t, ctx, master, b)

	const maxStale, interval = time.Second, 250 * ms
	sel, events := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: interval, MaxStaleness: maxStale})
	c := newClient(t, l, sel, func(o *sentinel.Config) { o.ReadFrom = sentinel.Replica })
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	waitReplicas(t, ctx, c, 1)
	// The first read waits for the first probe round (no replica is vetted
	// before it), then reads from the replica.
	gets := countGets(t, l.Nodes())
	read(t, ctx, c, 4, 40)
	if d, total := gets.deltas(); d[1] != total {
		t.Fatalf("ReadFrom Replica with a fresh replica: reads per node %v, want all on the replica", d)
	}

	// A writer keeps the master's offset moving.
	defer keepWriting(ctx, c)()

	// The exclusion is read from the tables, in probe rounds: at 2 ms
	// against the master's 2 ms, a scheduling delay can exclude the
	// replica as slow for a round before it is stale (still serving
	// ReadFrom Replica, so no election event marks its staleness then).
	detour.BlackHole()
	stalled := time.Now()
	rx, table, _ := followTables(t, ctx, sel, 40, "excluding the replica as stale", func(table []replica.NodeStatus) bool {
		st, ok := findRow(table, b.Addr())
		return ok && st.Excluded == replica.ExcludedStale
	})
	t.Logf("excluded as stale at round %d, seen %v after the stall: %s", rx, time.Since(stalled), tableString(table))
	if st := row(t, table, b.Addr()); !st.Healthy {
		t.Fatalf("the stalled replica: %+v", st)
	}
	if ev, ok := events.find(func(ev replica.Event) bool { return ev.Time.After(stalled) && ev.Round == rx }); ok &&
		(ev.Reason != replica.ReasonStale || len(ev.Elected) != 0) {
		t.Fatalf("the election when the replica became stale: %v", ev)
	}
	gets = countGets(t, l.Nodes())
	for range 10 {
		err := c.Get(ctx, "k").Err()
		var nre *sentinel.NoReplicaError
		if !errors.As(err, &nre) || !errors.Is(err, sentinel.ErrNoReplica) {
			t.Fatalf("ReadFrom Replica with the only replica stale: %v, want a *sentinel.NoReplicaError", err)
		}
		if nre.MasterName != l.MasterName() || nre.Master != master.Addr() || len(nre.Replicas) != 1 ||
			nre.Replicas[0].Addr != b.Addr() || nre.Replicas[0].Reason != replica.ExcludedStale ||
			!strings.Contains(err.Error(), fmt.Sprintf("%q", l.MasterName())) || !strings.Contains(err.Error(), "max staleness") {
			t.Fatalf("error %+v: %v", nre, err)
		}
	}
	if d, _ := gets.deltas(); d[0] != 0 || d[1] != 0 {
		t.Fatalf("failed ReadFrom Replica reads ran somewhere: GETs per node %v", d)
	}
	for _, rf := range []sentinel.ReadFrom{sentinel.Nearest, sentinel.ReplicaPreferred} {
		gets := countGets(t, l.Nodes())
		read(t, sentinel.WithReadFrom(ctx, rf), c, 4, 40)
		if d, total := gets.deltas(); d[0] != total {
			t.Fatalf("%s with the only replica stale: reads per node %v, want all on the master", rf, d)
		}
	}

	detour.Restore() // resets the stalled link; the replica reconnects and catches up
	restored := time.Now()
	// Caught up: eligible, or excluded only as slow (for a round, on a
	// loaded machine), which ReadFrom Replica still reads from.
	fresh := func(table []replica.NodeStatus) bool {
		st, ok := findRow(table, b.Addr())
		return ok && st.Healthy && st.LagKnown && st.Lag <= maxStale &&
			(st.Excluded == replica.NotExcluded || st.Excluded == replica.ExcludedSlow)
	}
	_, table = waitElection(t, ctx, sel, 60, "having the replica caught up", fresh)
	t.Logf("caught up %v after the link came back: %s", time.Since(restored), tableString(table))
	d, total, _ := readStable(t, ctx, c, sel, l.Nodes(), 4, 40, 30, "having the replica caught up", fresh)
	if d[1] != total {
		t.Fatalf("ReadFrom Replica after the replica caught up: reads per node %v, want all on it", d)
	}
}

// Two clients of one deployment in one process share one prober: each
// node sees one probe connection and two PINGs per round, not four.
func TestTwoClientsShareOneProber(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Sentinel(2))
	const interval = 100 * ms
	sel1, _ := newSelector(t, replica.Config{LatencyWindow: -1, ProbeInterval: interval})
	sel2, _ := newSelector(t, replica.Config{LatencyWindow: -1, ProbeInterval: interval})
	c1 := newClient(t, l, sel1, func(o *sentinel.Config) { o.ClientName = "share-test" })
	sentinels := slices.Clone(l.SentinelAddrs())
	slices.Reverse(sentinels) // another order, the same deployment
	c2 := newClient(t, l, sel2, func(o *sentinel.Config) { o.ClientName, o.SentinelAddrs = "share-test", sentinels })
	for _, c := range []*sentinel.Client{c1, c2} {
		waitReplicas(t, ctx, c, 2)
		_ = c.Get(ctx, "k") // both start "their" prober
	}
	if err := sel2.WaitRound(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for _, n := range l.Nodes() {
		if got := clientConns(t, n, "share-test-probe"); got != 1 {
			t.Fatalf("%d probe connections on %s, want 1", got, n.Addr())
		}
	}
	pings := make([]int, 3)
	for i, n := range l.Nodes() {
		pings[i] = cmdCalls(t, n, "ping")
	}
	r0, start := sel1.Rounds(), time.Now()
	time.Sleep(2 * time.Second)
	rounds := int(sel1.Rounds() - r0)
	if d := int(sel2.Rounds()) - int(sel1.Rounds()); d < -1 || d > 1 {
		t.Fatalf("the selectors saw %d and %d rounds", sel1.Rounds(), sel2.Rounds())
	}
	// Each sentinel PINGs every node once a second too.
	sentinelPings := 3 * (int(time.Since(start)/time.Second) + 2)
	for i, n := range l.Nodes() {
		got := cmdCalls(t, n, "ping") - pings[i]
		t.Logf("%s: %d PINGs in %d rounds", n.Addr(), got, rounds)
		if got < 2*(rounds-1) || got > 2*(rounds+1)+sentinelPings {
			t.Fatalf("%s ran %d PINGs in %d probe rounds; one prober sends 2 per round (plus at most %d from the sentinels)", n.Addr(), got, rounds, sentinelPings)
		}
	}
	// The prober outlives the first client and stops with the last.
	_ = c1.Close()
	r1 := sel2.Rounds()
	if err := sel2.WaitRound(ctx, r1+2); err != nil {
		t.Fatal(err)
	}
	_ = c2.Close()
	for _, n := range l.Nodes() {
		testkit.WaitFor(t, 2*time.Second, "the probe connection to close", func() bool { return clientConns(t, n, "share-test-probe") == 0 })
	}
}

// Two replicas as near as each other under the latency window each take
// 40–60% of the reads while both are elected.
func TestEqualReplicasShareReads(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := latencyLab(t, lab.Config{}, 6*ms, 6*ms, 6*ms)
	sel, _ := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: 200 * ms})
	c := newClient(t, l, sel, func(o *sentinel.Config) { o.ReadFrom = sentinel.ReplicaPreferred })
	ready(t, ctx, c, sel, 2)
	// Counted while the election names both (a loaded machine's scheduling
	// delays can put one outside the 2 ms window for a round).
	both := func(table []replica.NodeStatus) bool {
		r, ok := rows(table, l.Node(1).Addr(), l.Node(2).Addr())
		return ok && r[0].Elected && r[1].Elected
	}
	d, total, table := readStable(t, ctx, c, sel, l.Nodes(), 8, 3000, 150, "electing both replicas", both)
	t.Logf("reads per node %v; table %s", d, tableString(table))
	for _, i := range []int{1, 2} {
		if share := float64(d[i]) / float64(total); share < 0.40 || share > 0.60 {
			t.Fatalf("replica %d ran %.1f%% of the reads (%v), want 40–60%%", i, 100*share, d)
		}
	}
}

// Passwords never appear in the table, the events or the logs, even when
// probes fail to authenticate (the password changed under the client).
func TestNoSecretsInTableEventsOrLogs(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	const oldPass, newPass = "s3cret-old-pw", "s3cret-new-pw"
	l := latencyLab(t, lab.Config{Password: oldPass}, 2*ms, 2*ms, 2*ms)
	var logs testkit.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	sel, events := newSelector(t, replica.Config{LatencyWindow: -1, ProbeInterval: 100 * ms, Logger: logger})
	c := newClient(t, l, sel, func(o *sentinel.Config) { o.Password, o.Logger, o.ClientName = oldPass, logger, "secret-test" })
	ready(t, ctx, c, sel, 1)
	// The password changes on every node; the probe connections are cut, and
	// the probes' new connections are refused.
	for _, n := range l.Nodes() {
		if err := n.Do(ctx, "CONFIG", "SET", "requirepass", newPass).Err(); err != nil {
			t.Fatal(err)
		}
		if err := n.Do(ctx, "CLIENT", "KILL", "USER", "default", "SKIPME", "yes").Err(); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "the probes to fail", func() bool {
		for _, st := range sel.Table() {
			if st.Err != nil && strings.Contains(st.Err.Error(), "WRONGPASS") {
				return true
			}
		}
		return false
	})
	var texts []string
	for _, st := range sel.Table() {
		texts = append(texts, fmt.Sprintf("%+v", st), st.Why)
		if st.Err != nil {
			texts = append(texts, st.Err.Error())
		}
	}
	for _, ev := range events.all() {
		texts = append(texts, ev.String(), fmt.Sprintf("%+v", ev))
	}
	texts = append(texts, logs.String())
	for _, s := range texts {
		if strings.Contains(s, "s3cret") {
			t.Fatalf("a password in %q", s)
		}
	}
	if !strings.Contains(logs.String(), "WRONGPASS") {
		t.Fatalf("the failed probes were not logged: %s", logs.String())
	}
}

// Close returns at once even while a probe waits on a node that never
// answers (its connection is closed under it), and the prober's goroutine
// is gone (TestMain checks for leaks).
func TestCloseIsPromptDuringAProbe(t *testing.T) {
	l := lab.New(t, lab.Config{Replicas: 1, Proxy: true})
	master, rep := l.Node(0), l.Node(1)
	sel, err := replica.NewSelector(replica.Config{LatencyWindow: -1, ProbeInterval: 100 * ms, ProbeTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	sel.Bind(replica.Env{MasterName: "close-test", Sentinels: []string{"127.0.0.1:1"}, NodeOptions: func(addr string) *redis.Options {
		o := master.Options()
		o.Addr = addr
		return o
	}})
	sel.UpdateTopology(replica.Topology{Master: master.Addr(), Replicas: []string{rep.Addr()}})
	rep.BlackHole()
	if err := sel.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * ms) // the first round waits on the black hole (up to 10 s)
	if sel.Rounds() != 0 {
		t.Fatal("a round completed while a node was black-holed and the timeout is 10 s")
	}
	start := time.Now()
	if err := sel.Close(); err != nil {
		t.Fatal(err)
	}
	// Promptly: within what a Close takes on this machine now when no
	// probe waits (at least the 500 ms it is given on an idle machine), far
	// from the probe's 10 s timeout.
	took, idle := time.Since(start), idleClose(t, master)
	if bound := max(500*ms, 10*idle); took > bound {
		t.Fatalf("Close took %v during a probe, want within %v (a Close with no probe waiting took %v)", took, bound, idle)
	}
	t.Logf("Close took %v during a probe; %v with no probe waiting", took, idle)
}

// idleClose measures how long a Close takes when no probe waits: a
// Selector of a deployment of its own, probing the node, closed after a
// round.
func idleClose(t *testing.T, node *lab.Node) time.Duration {
	t.Helper()
	sel, err := replica.NewSelector(replica.Config{LatencyWindow: -1, ProbeInterval: 100 * ms})
	if err != nil {
		t.Fatal(err)
	}
	sel.Bind(replica.Env{MasterName: "idle-close", Sentinels: []string{"127.0.0.1:1"}, NodeOptions: func(addr string) *redis.Options {
		o := node.Options()
		o.Addr = addr
		return o
	}})
	sel.UpdateTopology(replica.Topology{Master: node.Addr()})
	if err := sel.Start(); err != nil {
		t.Fatal(err)
	}
	if err := sel.WaitRound(testkit.Context(t, 30*time.Second), 1); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := sel.Close(); err != nil {
		t.Fatal(err)
	}
	return time.Since(start)
}

// The CLI's probe command: a client from a URL, its Selector started at
// once (before the client has found the topology), the table read after
// each round, without any read.
func TestTableWithoutReads(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := latencyLab(t, lab.Config{}, 2*ms, 2*ms, 30*ms)
	sel, err := replica.NewSelector(replica.Config{LatencyWindow: -1, ProbeInterval: 200 * ms})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sentinel.NewClientFromURL(l.URL(), sentinel.Config{ReplicaSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := sel.Start(); err != nil {
		t.Fatal(err)
	}
	for n := uint64(1); n <= 3; n++ {
		if err := sel.WaitRound(ctx, n); err != nil {
			t.Fatal(err)
		}
		table := sel.Table()
		if len(table) != 3 || table[0].Role != replica.RoleMaster || table[0].Addr != l.Node(0).Addr() {
			t.Fatalf("round %d: table %+v", n, table)
		}
		for _, st := range table {
			if !st.Healthy || st.RTT <= 0 || st.Samples == 0 || st.LastProbe.IsZero() {
				t.Fatalf("round %d: %+v", n, st)
			}
		}
		// Excluded as slow when its RTT exceeds 3 × the master's: 15 × here,
		// but a loaded machine adds its delays to every RTT alike, and the
		// ratio of what it measures can fall under 3.
		m, st := table[0], row(t, table, l.Node(2).Addr())
		slow := float64(st.RTT) > replica.DefaultExclusionFactor*float64(m.RTT)
		if st.RTT < 30*ms || st.Elected || (st.Excluded == replica.ExcludedSlow) != slow || (!slow && st.Excluded != replica.NotExcluded) {
			t.Fatalf("round %d: the 30 ms replica is %+v (master %v)", n, st, m.RTT)
		}
	}
}

// An Observer may call the Selector it observes (Start, WaitRound for the
// next round), on a real client: the rounds go on, and Client.Close
// returns promptly.
func TestObserverCallingTheSelector(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := latencyLab(t, lab.Config{}, 2*ms, 2*ms, 30*ms)
	var sel *replica.Selector
	waited := make(chan error, 64)
	sel, err := replica.NewSelector(replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: 100 * ms, Observer: func(ev replica.Event) {
		if err := sel.Start(); err != nil {
			waited <- err
			return
		}
		waited <- sel.WaitRound(ctx, ev.Round+1)
	}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sentinel.NewClient(sentinel.Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
		ReplicaSelector: sel, ReadFrom: sentinel.Nearest, RefreshInterval: 500 * ms})
	if err != nil {
		t.Fatal(err)
	}
	// Once Close was called, or the Selector is stuck (the test failed),
	// the test does not call Close again: it would hang.
	closing := false
	t.Cleanup(func() {
		if !closing && !t.Failed() {
			_ = c.Close()
		}
	})
	ready(t, ctx, c, sel, 1)
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("the Observer's call: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("the Observer's WaitRound did not return (rounds %d)", sel.Rounds())
	}
	if err := sel.WaitRound(ctx, sel.Rounds()+2); err != nil {
		t.Fatalf("the rounds stopped: %v", err)
	}
	done := make(chan error, 1)
	closing = true
	go func() { done <- c.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("Client.Close hangs while the Observer calls the Selector")
	}
}

// monitor records the commands a node runs (MONITOR, on a raw connection)
// until the test ends.
type monitor struct {
	mu    sync.Mutex
	lines []string
}

func startMonitor(t *testing.T, addr string) *monitor {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatal(err)
	}
	m := &monitor{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 64<<10)
		var rest string
		for {
			n, err := conn.Read(buf)
			rest += string(buf[:n])
			lines := strings.Split(rest, "\r\n")
			rest = lines[len(lines)-1]
			m.mu.Lock()
			m.lines = append(m.lines, lines[:len(lines)-1]...)
			m.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	t.Cleanup(func() {
		_ = conn.Close()
		<-done
	})
	return m
}

func (m *monitor) text() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return strings.Join(m.lines, "\n")
}

// A Selector bound without Env.NodeOptions builds its probe clients with
// rediskit's inner-client policy too: no CLIENT SETINFO, no maintenance
// notifications handshake, nothing but the probes on the node.
func TestProbeClientWithoutNodeOptions(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	node := lab.New(t, lab.Standalone()).Node(0)
	mon := startMonitor(t, node.Addr())
	sel, err := replica.NewSelector(replica.Config{LatencyWindow: -1, ProbeInterval: 100 * ms})
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Close()
	sel.Bind(replica.Env{MasterName: "inner-policy", Sentinels: []string{"127.0.0.1:1"}})
	sel.UpdateTopology(replica.Topology{Master: node.Addr()})
	if err := sel.Start(); err != nil {
		t.Fatal(err)
	}
	if err := sel.WaitRound(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if st := row(t, sel.Table(), node.Addr()); !st.Healthy {
		t.Fatalf("the node's probes failed: %+v", st)
	}
	// Everything the probes sent is in MONITOR's feed once a later
	// command is.
	if err := node.Do(ctx, "ECHO", "probe-test-marker").Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the marker in MONITOR's feed", func() bool { return strings.Contains(mon.text(), "probe-test-marker") })
	feed := mon.text()
	if !strings.Contains(strings.ToLower(feed), `"ping"`) {
		t.Fatalf("MONITOR saw no probe:\n%s", feed)
	}
	// A command the server refused (CLIENT SETINFO before Redis 7.2) is
	// not in MONITOR's feed but in the error counts.
	if strings.Contains(strings.ToLower(feed), `"client"`) {
		t.Fatalf("the probe client sent CLIENT commands of its own on connect:\n%s", feed)
	}
	stats, err := node.Do(ctx, "INFO", "errorstats").Text()
	if err != nil {
		t.Fatal(err)
	}
	if errs := lab.ParseInfo(stats); len(errs) != 0 {
		t.Fatalf("the node refused commands the probe client sent on its own: %v\nMONITOR:\n%s", errs, feed)
	}
}

// keepWriting writes through c every 10 ms, so the master's replication
// offset keeps moving, until the returned stop function is called.
func keepWriting(ctx context.Context, c *sentinel.Client) (stop func()) {
	done := make(chan struct{})
	var writer sync.WaitGroup
	writer.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(10 * ms):
			}
			_ = c.Set(ctx, "w", i, 0).Err()
		}
	})
	return func() { close(done); writer.Wait() }
}

// replicateThroughDetour points replica at master through a proxy of its
// own (which a test can black-hole to stall that replica's link alone)
// and waits until the replica replicates through it.
func replicateThroughDetour(t *testing.T, ctx context.Context, master, replica *lab.Node) *lab.Proxy {
	t.Helper()
	detour, err := lab.NewProxy("127.0.0.1:0", master.DirectAddr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = detour.Close() })
	host, port, _ := net.SplitHostPort(detour.Addr())
	if err := replica.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the replica to replicate through the detour", func() bool {
		info, err := replica.ReplicationInfo(ctx)
		return err == nil && info["master_port"] == port && info["master_link_status"] == "up"
	})
	return detour
}
