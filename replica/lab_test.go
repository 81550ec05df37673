package replica_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
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

// eventLog collects a Selector's events.
type eventLog struct {
	mu     sync.Mutex
	events []replica.Event
	ch     chan replica.Event
}

func newEventLog() *eventLog { return &eventLog{ch: make(chan replica.Event, 64)} }

func (e *eventLog) observe(ev replica.Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
	select {
	case e.ch <- ev:
	default:
	}
}

func (e *eventLog) all() []replica.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events)
}

// waitEvent returns the first event (past or future) for which match holds.
func (e *eventLog) waitEvent(t *testing.T, d time.Duration, what string, match func(replica.Event) bool) replica.Event {
	t.Helper()
	deadline := time.After(d)
	for {
		for _, ev := range e.all() {
			if match(ev) {
				return ev
			}
		}
		select {
		case <-e.ch:
		case <-deadline:
			t.Fatalf("no event %s within %v; events: %v", what, d, e.all())
		}
	}
}

func newSelector(t *testing.T, cfg replica.Config) (*replica.Selector, *eventLog) {
	t.Helper()
	log := newEventLog()
	cfg.Observer = log.observe
	s, err := replica.NewSelector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, log
}

// newClient returns a Sentinel client for the lab with the selector (nil:
// the client's default), closed when the test ends.
func newClient(t *testing.T, l *lab.Lab, sel sentinel.ReplicaSelector, mod func(*sentinel.Options)) *sentinel.Client {
	t.Helper()
	opts := sentinel.Options{
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
	for _, st := range table {
		if st.Addr == addr {
			return st
		}
	}
	t.Fatalf("%s not in the table %+v", addr, table)
	return replica.NodeStatus{}
}

// Master +6 ms, replica A +6 ms, replica B +42 ms: before the first probe
// round, reads go to the master; after it, at least 99% go to A.
func TestNearReplicaTakesTheReads(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := latencyLab(t, lab.Config{}, 6*ms, 6*ms, 42*ms)
	master, near, far := l.Node(0), l.Node(1), l.Node(2)
	sel, events := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: 500 * ms})
	c := newClient(t, l, sel, nil)
	ready(t, ctx, c, sel, 0)
	if sel.Rounds() != 0 {
		t.Fatal("the prober ran before the first read that may go to a replica")
	}

	// The first reads start the prober; until its first round completes
	// (B's PINGs take 2 × 42 ms), they go to the master.
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
	if before == 0 || d[0] < before {
		t.Fatalf("%d reads were picked before the first round; the master ran %d (replicas %v)", before, d[0], d[1:])
	}
	t.Logf("%d reads before the first probe round, all on the master", before)

	if err := sel.WaitRound(ctx, 1); err != nil {
		t.Fatal(err)
	}
	ev := events.waitEvent(t, time.Second, "first round", func(ev replica.Event) bool { return ev.Reason == replica.ReasonFirstRound })
	if !slices.Equal(ev.Elected, []string{near.Addr()}) || ev.NearestMaster {
		t.Fatalf("first election %v", ev)
	}
	gets = countGets(t, l.Nodes())
	read(t, ctx, c, 8, 2000)
	d, total := gets.deltas()
	if share := float64(d[1]) / float64(total); share < 0.99 {
		t.Fatalf("near replica ran %d of %d reads (%.1f%%; master %d, far %d), want ≥ 99%%", d[1], total, 100*share, d[0], d[2])
	}
	table := sel.Table()
	if m := row(t, table, master.Addr()); m.Role != replica.RoleMaster || !m.Healthy || m.RTT < 5*ms || m.Nearest {
		t.Fatalf("master row %+v", m)
	}
	if n := row(t, table, near.Addr()); !n.Elected || !n.Nearest || n.RTT < 5*ms || n.RTT > 30*ms || !n.LinkUp || !n.LagKnown {
		t.Fatalf("near row %+v", n)
	}
	if f := row(t, table, far.Addr()); f.Elected || f.Excluded != replica.ExcludedSlow || f.RTT < 40*ms {
		t.Fatalf("far row %+v", f)
	}
	for _, st := range table {
		t.Logf("%-8s %-22s rtt %-10v last %-10v elected %-5v %s %s", st.Role, st.Addr, st.RTT, st.LastRTT, st.Elected, st.Excluded, st.Why)
	}
}

// Swapping the replicas' latencies at run time: the election follows
// within 2 probe intervals, reads move, and the client's pooled
// connections to the replica that left are closed, without restarting the
// client.
func TestElectionFollowsASwap(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := latencyLab(t, lab.Config{}, 6*ms, 6*ms, 42*ms)
	a, b := l.Node(1), l.Node(2)
	const interval = 500 * ms
	sel, events := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: interval})
	// ReplicaPreferred: the replica election itself. (Under Nearest the
	// master, as near as B, takes the reads until B's average has
	// converged, a few rounds.)
	c := newClient(t, l, sel, func(o *sentinel.Options) { o.ClientName, o.ReadFrom = "swap-test", sentinel.ReplicaPreferred })
	ready(t, ctx, c, sel, 2)
	read(t, ctx, c, 8, 200)
	pooled := clientIDs(t, a, "swap-test")
	if len(pooled) < 2 {
		t.Fatalf("pooled connections to A before the swap: %v", pooled)
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
	ev := events.waitEvent(t, 5*time.Second, "electing B", func(ev replica.Event) bool {
		return ev.Time.After(swapped) && slices.Equal(ev.Elected, []string{b.Addr()})
	})
	took := ev.Time.Sub(swapped)
	t.Logf("election followed the swap in %v (%s: %s)", took, ev.Reason, ev.Detail)
	if took > 2*interval {
		t.Fatalf("the election followed after %v, want within 2 probe intervals (%v)", took, 2*interval)
	}
	// Reads move: from the election on, B runs them all but those already
	// running on A.
	gets := countGets(t, l.Nodes())
	time.Sleep(time.Second)
	close(stop)
	readers.Wait()
	if err := readErr.Load(); err != nil {
		t.Fatal(*err)
	}
	d, total := gets.deltas()
	if d[2] < total*99/100 {
		t.Fatalf("after the re-election, reads per node %v; want ≥ 99%% on B", d)
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
func TestExclusionFactor(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := latencyLab(t, lab.Config{}, 6*ms, 42*ms, 60*ms)
	a, b := l.Node(1), l.Node(2)
	sel, events := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: 200 * ms})
	c := newClient(t, l, sel, nil)
	ready(t, ctx, c, sel, 3)
	for _, tc := range []struct {
		rf   sentinel.ReadFrom
		node int
	}{{sentinel.Nearest, 0}, {sentinel.ReplicaPreferred, 0}, {sentinel.Replica, 1}} {
		gets := countGets(t, l.Nodes())
		read(t, sentinel.WithReadFrom(ctx, tc.rf), c, 4, 100)
		if d, total := gets.deltas(); d[tc.node] != total {
			t.Fatalf("%s with every replica excluded: reads per node %v, want all on node %d", tc.rf, d, tc.node)
		}
	}
	for _, st := range sel.Table()[1:] {
		if st.Excluded != replica.ExcludedSlow {
			t.Fatalf("%s: %+v, want excluded as slow", st.Addr, st)
		}
	}

	// A comes near; B stays slow and is never elected.
	a.SetLatency(6 * ms)
	events.waitEvent(t, 2*time.Second, "electing A", func(ev replica.Event) bool { return slices.Equal(ev.Elected, []string{a.Addr()}) })
	r := sel.Rounds()
	if err := sel.WaitRound(ctx, r+5); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.all() {
		if slices.Contains(ev.Elected, b.Addr()) {
			t.Fatalf("the slow replica was elected: %v", ev)
		}
	}
	if st := row(t, sel.Table(), b.Addr()); st.Excluded != replica.ExcludedSlow {
		t.Fatalf("B: %+v", st)
	}
}

// Black-holing the elected replica drops it at the next probe round and
// reads move to the other; it is elected again once it answers.
func TestBlackHoledReplicaIsDropped(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	// Sentinel and the client's refresh would drop the replica too; they
	// are slowed down so that the probe is what drops it.
	l := latencyLab(t, lab.Config{DownAfter: 30 * time.Second}, 6*ms, 6*ms, 9*ms)
	a, b := l.Node(1), l.Node(2)
	const interval, timeout = 300 * ms, 300 * ms
	sel, events := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: interval, ProbeTimeout: timeout})
	c := newClient(t, l, sel, func(o *sentinel.Options) {
		o.ReadFrom, o.RefreshInterval, o.ReadTimeout = sentinel.ReplicaPreferred, time.Minute, time.Second
	})
	ready(t, ctx, c, sel, 2)
	if st := row(t, sel.Table(), a.Addr()); !st.Elected {
		t.Fatalf("A not elected: %+v", sel.Table())
	}

	r0 := sel.Rounds()
	a.BlackHole()
	holed := time.Now()
	ev := events.waitEvent(t, 3*time.Second, "A dropped", func(ev replica.Event) bool { return ev.Time.After(holed) && !slices.Contains(ev.Elected, a.Addr()) })
	// The round under way when A went dark may have finished with A
	// healthy; the next one must drop it.
	if ev.Round > r0+2 || ev.Reason != replica.ReasonUnreachable || !slices.Equal(ev.Elected, []string{b.Addr()}) {
		t.Fatalf("A dropped at round %d (black hole after round %d): %v", ev.Round, r0, ev)
	}
	t.Logf("dropped %v after the black hole: %s", ev.Time.Sub(holed), ev.Detail)
	gets := countGets(t, l.Nodes())
	read(t, ctx, c, 4, 100)
	if d, total := gets.deltas(); d[2] != total {
		t.Fatalf("reads per node after the drop %v, want all on B", d)
	}

	a.Restore()
	restored := time.Now()
	ev = events.waitEvent(t, 3*time.Second, "A elected again", func(ev replica.Event) bool {
		return ev.Time.After(restored) && slices.Contains(ev.Elected, a.Addr())
	})
	if ev.Reason != replica.ReasonRecovered {
		t.Fatalf("A came back with %v", ev)
	}
	t.Logf("A elected again %v after the network came back", ev.Time.Sub(restored))
}

// A replica whose replication stalls while it still answers is excluded
// once its lag exceeds MaxStaleness, and elected again when it has caught
// up. Its replication is made to go through a proxy of the test's own,
// which is then black-holed.
func TestStaleReplicaIsExcluded(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	// FailoverTimeout: Sentinel re-points a replica that follows another
	// address than the master's only after that long.
	l := latencyLab(t, lab.Config{FailoverTimeout: 2 * time.Minute}, 6*ms, 9*ms, 6*ms)
	master, a, b := l.Node(0), l.Node(1), l.Node(2)
	detour := replicateThroughDetour(t, ctx, master, b)

	const maxStale = time.Second
	const interval = 250 * ms
	sel, events := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: interval, MaxStaleness: maxStale})
	c := newClient(t, l, sel, func(o *sentinel.Options) { o.ReadFrom = sentinel.ReplicaPreferred })
	ready(t, ctx, c, sel, 2)
	if st := row(t, sel.Table(), b.Addr()); !st.Elected || !st.LagKnown || st.Lag > maxStale {
		t.Fatalf("B before the stall: %+v", st)
	}

	// A writer keeps the master's offset moving.
	defer keepWriting(ctx, c)()

	detour.BlackHole()
	stalled := time.Now()
	ev := events.waitEvent(t, 5*time.Second, "B excluded as stale", func(ev replica.Event) bool {
		return ev.Time.After(stalled) && !slices.Contains(ev.Elected, b.Addr())
	})
	st := row(t, sel.Table(), b.Addr())
	t.Logf("B excluded %v after the stall: %s; row: lag %v (%d bytes), rtt %v", ev.Time.Sub(stalled), ev.Detail, st.Lag, st.LagBytes, st.RTT)
	if ev.Reason != replica.ReasonStale || !slices.Equal(ev.Elected, []string{a.Addr()}) || !st.Healthy {
		t.Fatalf("B left with %v; row %+v", ev, st)
	}
	// When its lag exceeded the bound: the estimate is good to one probe
	// interval, and a round follows within one more.
	if took := ev.Time.Sub(stalled); took < maxStale-interval || took > maxStale+3*interval {
		t.Fatalf("B excluded %v after the stall, want between %v and %v", took, maxStale-interval, maxStale+3*interval)
	}
	gets := countGets(t, l.Nodes())
	read(t, ctx, c, 4, 100)
	if d, total := gets.deltas(); d[1] != total {
		t.Fatalf("reads per node while B is stale %v, want all on A", d)
	}

	detour.Restore() // resets the stalled link; B reconnects and catches up
	restored := time.Now()
	ev = events.waitEvent(t, 15*time.Second, "B elected again", func(ev replica.Event) bool {
		return ev.Time.After(restored) && slices.Equal(ev.Elected, []string{b.Addr()})
	})
	t.Logf("B elected again %v after the link came back (%s)", ev.Time.Sub(restored), ev.Reason)
	if st := row(t, sel.Table(), b.Addr()); st.Lag > maxStale || !st.LinkUp {
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
	c := newClient(t, l, sel, func(o *sentinel.Options) { o.ReadFrom = sentinel.Replica })
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

	detour.BlackHole()
	stalled := time.Now()
	ev := events.waitEvent(t, 5*time.Second, "the replica excluded as stale", func(ev replica.Event) bool {
		return ev.Time.After(stalled) && ev.Reason == replica.ReasonStale && len(ev.Elected) == 0
	})
	t.Logf("excluded %v after the stall: %s", ev.Time.Sub(stalled), ev.Detail)
	if st := row(t, sel.Table(), b.Addr()); st.Excluded != replica.ExcludedStale || !st.Healthy {
		t.Fatalf("the stalled replica: %+v", st)
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
	ev = events.waitEvent(t, 15*time.Second, "the replica elected again", func(ev replica.Event) bool {
		return ev.Time.After(restored) && slices.Equal(ev.Elected, []string{b.Addr()})
	})
	t.Logf("elected again %v after the link came back", ev.Time.Sub(restored))
	gets = countGets(t, l.Nodes())
	read(t, ctx, c, 4, 40)
	if d, total := gets.deltas(); d[1] != total {
		t.Fatalf("ReadFrom Replica after the replica caught up: reads per node %v, want all on it", d)
	}
}

// Two clients of one deployment in one process share one prober: each
// node sees one probe connection and two PINGs per round, not four.
func TestTwoClientsShareOneProber(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Sentinel(2))
	const interval = 100 * ms
	sel1, _ := newSelector(t, replica.Config{ProbeInterval: interval})
	sel2, _ := newSelector(t, replica.Config{ProbeInterval: interval})
	c1 := newClient(t, l, sel1, func(o *sentinel.Options) { o.ClientName = "share-test" })
	sentinels := slices.Clone(l.SentinelAddrs())
	slices.Reverse(sentinels) // another order, the same deployment
	c2 := newClient(t, l, sel2, func(o *sentinel.Options) { o.ClientName, o.SentinelAddrs = "share-test", sentinels })
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
// 40–60% of the reads.
func TestEqualReplicasShareReads(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := latencyLab(t, lab.Config{}, 6*ms, 6*ms, 6*ms)
	sel, _ := newSelector(t, replica.Config{LatencyWindow: replica.DefaultLatencyWindow, ProbeInterval: 200 * ms})
	c := newClient(t, l, sel, func(o *sentinel.Options) { o.ReadFrom = sentinel.ReplicaPreferred })
	ready(t, ctx, c, sel, 2)
	gets := countGets(t, l.Nodes())
	read(t, ctx, c, 8, 3000)
	d, total := gets.deltas()
	t.Logf("reads per node %v; table %+v", d, sel.Table())
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
	sel, events := newSelector(t, replica.Config{ProbeInterval: 100 * ms, Logger: logger})
	c := newClient(t, l, sel, func(o *sentinel.Options) { o.Password, o.Logger, o.ClientName = oldPass, logger, "secret-test" })
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
	sel, err := replica.NewSelector(replica.Config{ProbeInterval: 100 * ms, ProbeTimeout: 10 * time.Second})
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
	if took := time.Since(start); took > 500*ms {
		t.Fatalf("Close took %v during a probe", took)
	}
}

// The CLI's probe command: a client from a URL, its Selector started at
// once (before the client has found the topology), the table read after
// each round, without any read.
func TestTableWithoutReads(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := latencyLab(t, lab.Config{}, 2*ms, 2*ms, 30*ms)
	sel, err := replica.NewSelector(replica.Config{ProbeInterval: 200 * ms})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sentinel.NewClientFromURL(l.URL(), &sentinel.Options{ReplicaSelector: sel})
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
		if st := row(t, table, l.Node(2).Addr()); st.Excluded != replica.ExcludedSlow {
			t.Fatalf("round %d: the 30 ms replica is %+v", n, st)
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
	c, err := sentinel.NewClient(sentinel.Options{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
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
	sel, err := replica.NewSelector(replica.Config{ProbeInterval: 100 * ms})
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
