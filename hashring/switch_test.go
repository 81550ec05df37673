package hashring

import (
	"bufio"
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

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/sentinel"
)

// The tests of this file run a node and a ring view on our failover-
// following clients (the Sentinel client, the multi-database client) and
// make those clients switch servers. Each switch ends the subscription on
// the old server on purpose; the node and the view must take it as a
// handled event: no WARN, no backoff, a new subscription at once.
//
// What they measure, on the servers themselves (MONITOR): when the new
// server received the SUBSCRIBE of the subscription that stays, counted
// from the client's own report of the switch. go-redis's PubSub also
// reconnects by itself, inside the Receive that saw the connection close,
// before the node closes that PubSub: that first SUBSCRIBE is the time a
// dial and a SUBSCRIBE take here, the yardstick the node's is held to.

// switchOpts are the timings of the switch tests: fast's heartbeat, with
// the default retry waits (so that a backoff after a switch, which these
// tests rule out, would show as it does in production), and an ownership
// deadline long enough to outlast a heartbeat the Sentinel client holds
// during a failover (FailoverHold, 3 s), which is not what these tests
// are about.
func switchOpts(host string, log *slog.Logger) Config {
	o := fast(host, log)
	o.OwnershipDeadline, o.Expiry = 6*time.Second, 7*time.Second
	o.RetryWait, o.MaxRetryWait = DefaultRetryWait, DefaultMaxRetryWait
	return o
}

func viewOpts(log *slog.Logger) Config {
	return Config{Logger: log, HeartbeatInterval: 250 * time.Millisecond, SubscribeTimeout: 2 * time.Second,
		RetryWait: DefaultRetryWait, MaxRetryWait: DefaultMaxRetryWait}
}

// monitor records, from MONITOR on a server, every SUBSCRIBE: when the
// server ran it and for which connection. Sentinel kills the normal
// clients of the nodes it promotes and demotes (CLIENT KILL TYPE normal,
// which takes MONITOR connections too), so the monitor reconnects at once
// when its connection ends, until the test ends.
type monitor struct {
	node *lab.Node
	done chan struct{}

	mu     sync.Mutex
	conn   net.Conn
	closed bool
	subs   []seenSubscribe
}

type seenSubscribe struct {
	at      time.Time // the server's clock (the same host's as ours)
	client  string    // the connection's address as the server sees it
	channel string
}

func startMonitor(t *testing.T, n *lab.Node) *monitor {
	t.Helper()
	m := &monitor{node: n, done: make(chan struct{})}
	rd, err := m.dial()
	if err != nil {
		t.Fatal(err)
	}
	go m.run(rd)
	t.Cleanup(func() {
		m.mu.Lock()
		m.closed = true
		_ = m.conn.Close()
		m.mu.Unlock()
		<-m.done
	})
	return m
}

func (m *monitor) dial() (*bufio.Reader, error) {
	conn, err := net.DialTimeout("tcp", m.node.DirectAddr(), 2*time.Second)
	if err != nil {
		return nil, err
	}
	rd := bufio.NewReader(conn)
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if line, err := rd.ReadString('\n'); err != nil || line != "+OK\r\n" {
		_ = conn.Close()
		return nil, fmt.Errorf("MONITOR on %s: %q, %v", m.node.Name(), line, err)
	}
	_ = conn.SetDeadline(time.Time{})
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		_ = conn.Close()
		return nil, net.ErrClosed
	}
	m.conn = conn
	return rd, nil
}

func (m *monitor) run(rd *bufio.Reader) {
	defer close(m.done)
	for {
		m.read(rd)
		for {
			m.mu.Lock()
			closed := m.closed
			m.mu.Unlock()
			if closed {
				return
			}
			var err error
			if rd, err = m.dial(); err == nil {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}

// read parses MONITOR's lines, such as
//
//	+1733090000.123456 [0 127.0.0.1:53422] "subscribe" "ring"
//
// until the connection ends.
func (m *monitor) read(rd *bufio.Reader) {
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		ts, rest, ok := strings.Cut(strings.TrimPrefix(line, "+"), " [")
		if !ok {
			continue
		}
		client, args, ok := strings.Cut(rest, "] ")
		if !ok {
			continue
		}
		_, client, _ = strings.Cut(client, " ") // after the db number
		f := strings.Fields(args)
		if len(f) < 2 || !strings.EqualFold(f[0], `"subscribe"`) {
			continue
		}
		sec, err := strconv.ParseFloat(ts, 64)
		if err != nil {
			continue
		}
		m.mu.Lock()
		for _, ch := range f[1:] {
			m.subs = append(m.subs, seenSubscribe{at: scoreTime(sec), client: client, channel: strings.Trim(ch, `"`)})
		}
		m.mu.Unlock()
	}
}

// subscribers are the addresses of the server's pub/sub connections.
func subscribers(t *testing.T, ctx context.Context, n *lab.Node) map[string]bool {
	t.Helper()
	list, err := n.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
	if err != nil {
		t.Fatal(err)
	}
	addrs := map[string]bool{}
	for _, line := range strings.Split(list, "\n") {
		for _, f := range strings.Fields(line) {
			if a, ok := strings.CutPrefix(f, "addr="); ok {
				addrs[a] = true
			}
		}
	}
	return addrs
}

// settled waits until the subscription to channel on the monitor's server
// has settled after the moment after, and returns the first SUBSCRIBE to
// it since then (whichever connection sent it) and the one of the
// connection that stays subscribed (for 300 ms of polls in a row).
func (m *monitor) settled(t *testing.T, ctx context.Context, channel string, after time.Time) (first, final seenSubscribe) {
	t.Helper()
	var cand seenSubscribe
	var since time.Time
	began := time.Now()
	for {
		live := subscribers(t, ctx, m.node)
		var last seenSubscribe
		m.mu.Lock()
		first = seenSubscribe{}
		for _, s := range m.subs {
			if s.channel != channel || s.at.Before(after) {
				continue
			}
			if first.at.IsZero() {
				first = s
			}
			if live[s.client] {
				last = s
			}
		}
		m.mu.Unlock()
		switch {
		case last.at.IsZero():
			cand = seenSubscribe{}
		case last == cand:
			if time.Since(since) >= 300*time.Millisecond {
				return first, cand
			}
		default:
			cand, since = last, time.Now()
		}
		if time.Since(began) > 20*time.Second {
			m.mu.Lock()
			all := slices.Clone(m.subs)
			m.mu.Unlock()
			t.Fatalf("no subscription to %s settled on %s within 20 s of the switch at %v (first SUBSCRIBE since: %+v); all: %+v; live %v", channel, m.node.Name(), after, first, all, live)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// switchRun is one switch as the servers saw it.
type switchRun struct {
	at           time.Time     // the client reported the switch
	goRedis      time.Duration // to go-redis's own reconnection's SUBSCRIBE
	node, view   time.Duration // to the SUBSCRIBE of the node's and the view's lasting subscription
	nodeAfterGoR time.Duration // node − goRedis
}

func (r switchRun) String() string {
	return fmt.Sprintf("go-redis %v, node %v (+%v), view %v", r.goRedis.Round(10*time.Microsecond),
		r.node.Round(10*time.Microsecond), r.nodeAfterGoR.Round(10*time.Microsecond), r.view.Round(10*time.Microsecond))
}

// measure waits for the node's and the view's subscriptions on the new
// server to settle after a switch at at.
func measure(t *testing.T, ctx context.Context, m *monitor, at time.Time) switchRun {
	t.Helper()
	first, final := m.settled(t, ctx, "ring", at)
	_, view := m.settled(t, ctx, "view", at)
	return switchRun{at: at, goRedis: first.at.Sub(at), node: final.at.Sub(at), view: view.at.Sub(at),
		nodeAfterGoR: final.at.Sub(first.at)}
}

// events records a node's Observer events.
type events struct {
	mu  sync.Mutex
	evs []Event
}

func (e *events) observe(ev Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
}

func (e *events) of(kind EventKind) []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []Event
	for _, ev := range e.evs {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// ownership samples, every millisecond until stop is called, whether
// the node owns any range, and returns how many samples found none.
func ownership(n *Node) (stop func() int) {
	var lost atomic.Int64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			case <-time.After(time.Millisecond):
				if len(n.Ranges()) == 0 {
					lost.Add(1)
				}
			}
		}
	}()
	return func() int {
		close(done)
		wg.Wait()
		return int(lost.Load())
	}
}

// runView runs the view until the test ends.
func runView(t *testing.T, v *Ring) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- v.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// checkHandled asserts that every switch was a handled event for the node
// and the view: no WARN from either, no failed attempt, one
// EventSubscriptionMoved and one INFO each per switch, whose error matches
// movedErr; the node never owned nothing; and the node's new subscription
// followed go-redis's own reconnection without a wait. A backoff would
// wait up to RetryWait (1 s), uniformly; the bound allows the node 4 times
// the time go-redis's reconnection took after the switch (the same dial
// and SUBSCRIBE, measured in the same run), plus 100 ms for scheduling on
// a loaded machine. The WARN and event checks, not the time, are what
// rule a backoff out for sure.
func checkHandled(t *testing.T, runs []switchRun, rec, viewRec *recorder, evs *events, lost int, movedErr error) {
	t.Helper()
	for _, r := range []*recorder{rec, viewRec} {
		for _, w := range r.find(slog.LevelWarn, "") {
			t.Errorf("WARN during handled switches: %s %v", w.Message, recAttrs(w))
		}
	}
	if f := evs.of(EventAttemptFailed); len(f) != 0 {
		t.Errorf("%d failed attempts during handled switches: %v", len(f), f[0].Err)
	}
	moves := evs.of(EventSubscriptionMoved)
	if len(moves) != len(runs) {
		t.Errorf("%d EventSubscriptionMoved for %d switches", len(moves), len(runs))
	}
	for _, ev := range moves {
		if !errors.Is(ev.Err, movedErr) {
			t.Errorf("EventSubscriptionMoved with %v, want an error matching %v", ev.Err, movedErr)
		}
	}
	if got := len(rec.find(slog.LevelInfo, msgMoved)); got != len(runs) {
		t.Errorf("%d INFO %q for %d switches", got, msgMoved, len(runs))
	}
	if got := len(viewRec.find(slog.LevelInfo, msgViewMoved)); got != len(runs) {
		t.Errorf("%d INFO %q from the view for %d switches", got, msgViewMoved, len(runs))
	}
	if lost != 0 {
		t.Errorf("the node owned nothing in %d samples during the switches", lost)
	}
	for i, r := range runs {
		if limit := 4*r.goRedis + 100*time.Millisecond; r.nodeAfterGoR > limit || r.view-r.goRedis > limit {
			t.Errorf("switch %d: %v; want the node's and the view's subscription within %v of go-redis's", i, r, limit)
		}
	}
}

func recAttrs(rec slog.Record) map[string]string {
	m := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

func figures(runs []switchRun, f func(switchRun) time.Duration) []time.Duration {
	ds := make([]time.Duration, len(runs))
	for i, r := range runs {
		ds[i] = f(r).Round(10 * time.Microsecond)
	}
	slices.Sort(ds)
	return ds
}

const (
	msgMoved     = "hashring: the subscription moved to a new server"
	msgViewMoved = "hashring: the ring view's subscription moved to a new server"
)

// A node and a view on our Sentinel client, through failovers: each
// failover is a handled event (see checkHandled). Then a real loss of the
// node's subscription connection (CLIENT KILL) still logs a WARN and waits
// the logged backoff before the node subscribes again.
func TestSentinelFailoverResubscribesAtOnce(t *testing.T) {
	ctx := testkit.Context(t, 150*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	mons := map[string]*monitor{}
	for _, n := range l.Nodes() {
		mons[n.Addr()] = startMonitor(t, n)
	}
	type switchEvent struct {
		at     time.Time
		master string
	}
	switched := make(chan switchEvent, 16)
	sc, err := sentinel.NewClient(sentinel.Config{
		MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
		Observer: func(ev sentinel.Event) {
			if ev.Kind == sentinel.EventMasterChanged && ev.OldMaster != "" {
				switched <- switchEvent{at: ev.Time, master: ev.Master}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	rec, log := newRecorder()
	evs := &events{}
	o := switchOpts("node-a", log)
	o.Observer = evs.observe
	n := newNode(t, sc, "ring", o)
	viewRec, viewLog := newRecorder()
	v, err := NewRing(sc, "view", viewOpts(viewLog))
	if err != nil {
		t.Fatal(err)
	}
	start(t, ctx, n)
	runView(t, v)
	testkit.WaitFor(t, 5*time.Second, "the view's subscription", func() bool {
		return numsub(t, ctx, l.Node(0), "view") == 1
	})

	stop := ownership(n)
	var runs []switchRun
	for i := range 3 {
		res, err := l.Failover(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var ev switchEvent
		select {
		case ev = <-switched:
		case <-time.After(10 * time.Second):
			t.Fatalf("failover %d: the client did not report a master change", i)
		}
		if ev.master != res.NewMaster.Addr() {
			t.Fatalf("failover %d: the client switched to %s, the lab's new master is %s", i, ev.master, res.NewMaster.Addr())
		}
		runs = append(runs, measure(t, ctx, mons[ev.master], ev.at))
		if err := l.WaitSettled(ctx); err != nil {
			t.Fatal(err)
		}
	}
	lost := stop()
	t.Logf("failover → SUBSCRIBE on the new master: node %v, view %v; go-redis's own reconnection %v; node after go-redis %v",
		figures(runs, func(r switchRun) time.Duration { return r.node }), figures(runs, func(r switchRun) time.Duration { return r.view }),
		figures(runs, func(r switchRun) time.Duration { return r.goRedis }), figures(runs, func(r switchRun) time.Duration { return r.nodeAfterGoR }))
	checkHandled(t, runs, rec, viewRec, evs, lost, sentinel.ErrSubscriptionMoved)

	// A real loss: the master drops the node's subscription connection.
	master, err := l.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	m := mons[master.Addr()]
	failedBefore := len(evs.of(EventAttemptFailed))
	var gaps []time.Duration
	for i := range 3 {
		_, sub := m.settled(t, ctx, "ring", time.Time{})
		before := len(rec.find(slog.LevelWarn, msgRetry))
		killed := time.Now()
		if err := master.Do(ctx, "CLIENT", "KILL", "ADDR", sub.client).Err(); err != nil {
			t.Fatal(err)
		}
		var warn slog.Record
		testkit.WaitFor(t, 5*time.Second, "a WARN for the lost subscription", func() bool {
			ws := rec.find(slog.LevelWarn, msgRetry)
			if len(ws) > before {
				warn = ws[before]
				return true
			}
			return false
		})
		_, final := m.settled(t, ctx, "ring", killed)
		wait, _ := attr(warn, "wait")
		step, _ := attr(warn, "step")
		errv, _ := attr(warn, "error")
		if step.String() != "subscription" {
			t.Errorf("kill %d: WARN for step %q, want subscription", i, step)
		}
		if e, ok := errv.Any().(error); !ok || errors.Is(e, sentinel.ErrSubscriptionMoved) {
			t.Errorf("kill %d: WARN's error %v; want a lost connection, not a moved subscription", i, errv)
		}
		// The node subscribed again only after the wait it logged (the
		// server's timestamp is to the microsecond).
		gap := final.at.Sub(warn.Time)
		if gap < wait.Duration()-time.Millisecond {
			t.Errorf("kill %d: subscribed again %v after the WARN, before its wait %v ended", i, gap, wait.Duration())
		}
		gaps = append(gaps, final.at.Sub(killed).Round(10*time.Microsecond))
		t.Logf("kill %d: WARN wait %v; subscribed again %v after the kill", i, wait.Duration().Round(10*time.Microsecond), gaps[i])
	}
	if got, want := len(evs.of(EventAttemptFailed)), 3+failedBefore; got != want {
		t.Errorf("%d failed attempts after 3 lost connections, want %d", got, want)
	}
	if got := len(evs.of(EventSubscriptionMoved)); got != len(runs) {
		t.Errorf("a lost connection was taken for a moved subscription: %d EventSubscriptionMoved for %d switches", got, len(runs))
	}
}

// A node and a view on our multi-database client, through switches of the
// active database (SetActive): each is a handled event (see checkHandled),
// and the node's replicas are on the new database at once (the ring there
// may lack them: two databases do not share a ring unless they replicate).
func TestMultiDBSwitchResubscribesAtOnce(t *testing.T) {
	ctx := testkit.Context(t, 150*time.Second)
	dbs := []*lab.Node{lab.New(t, lab.Standalone()).Node(0), lab.New(t, lab.Standalone()).Node(0)}
	mons := []*monitor{startMonitor(t, dbs[0]), startMonitor(t, dbs[1])}
	type switchEvent struct {
		at time.Time
		to int
	}
	switched := make(chan switchEvent, 16)
	c, err := multidb.NewClient(multidb.Config{
		Databases: []multidb.Database{
			{Name: "db0", Weight: 10, Options: dbs[0].Options()},
			{Name: "db1", Weight: 5, Options: dbs[1].Options()},
		},
		Observer: func(ev multidb.Event) {
			if ev.Kind == multidb.EventActiveChanged && ev.Old != "" {
				to, _ := strconv.Atoi(strings.TrimPrefix(ev.New, "db"))
				switched <- switchEvent{at: ev.Time, to: to}
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rec, log := newRecorder()
	evs := &events{}
	o := switchOpts("node-a", log)
	o.Observer = evs.observe
	n := newNode(t, c, "ring", o)
	viewRec, viewLog := newRecorder()
	v, err := NewRing(c, "view", viewOpts(viewLog))
	if err != nil {
		t.Fatal(err)
	}
	start(t, ctx, n)
	runView(t, v)
	testkit.WaitFor(t, 5*time.Second, "the view's subscription", func() bool {
		return numsub(t, ctx, dbs[0], "view") == 1
	})

	stop := ownership(n)
	var runs []switchRun
	var rejoined []time.Duration
	for i := range 4 {
		to := (i + 1) % 2
		if err := c.SetActive(ctx, "db"+strconv.Itoa(to)); err != nil {
			t.Fatal(err)
		}
		var ev switchEvent
		select {
		case ev = <-switched:
		case <-time.After(10 * time.Second):
			t.Fatalf("switch %d: the client did not report it", i)
		}
		if ev.to != to {
			t.Fatalf("switch %d: the client reported a switch to db%d, want db%d", i, ev.to, to)
		}
		// The node's heartbeat right after its new subscription puts its
		// replicas on the new database (the first switch to db1 finds
		// none there).
		testkit.WaitFor(t, 20*time.Second, "the node's replicas on the new database", func() bool {
			return dbs[to].Do(ctx, "ZCOUNT", "ring", fmt.Sprint(timeScore(ev.at)), "+inf").Val() == int64(len(n.Members()))
		})
		rejoined = append(rejoined, time.Since(ev.at).Round(10*time.Microsecond))
		runs = append(runs, measure(t, ctx, mons[to], ev.at))
	}
	lost := stop()
	t.Logf("switch → SUBSCRIBE on the new database: node %v, view %v; go-redis's own reconnection %v; node after go-redis %v; node's replicas heartbeated there within %v",
		figures(runs, func(r switchRun) time.Duration { return r.node }), figures(runs, func(r switchRun) time.Duration { return r.view }),
		figures(runs, func(r switchRun) time.Duration { return r.goRedis }), figures(runs, func(r switchRun) time.Duration { return r.nodeAfterGoR }),
		rejoined)
	checkHandled(t, runs, rec, viewRec, evs, lost, multidb.ErrSubscriptionMoved)
}

func numsub(t *testing.T, ctx context.Context, n *lab.Node, channel string) int64 {
	t.Helper()
	v, err := n.Do(ctx, "PUBSUB", "NUMSUB", channel).Slice()
	if err != nil || len(v) != 2 {
		t.Fatalf("PUBSUB NUMSUB %s on %s: %v, %v", channel, n.Name(), v, err)
	}
	return v[1].(int64)
}
