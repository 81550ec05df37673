package replica_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/timeline"
)

// figuresDir is where BenchmarkReplicaAdaptation writes its figures (make
// figures passes the repository's docs/); empty: it writes none, and still
// records and checks the reads they would draw.
var figuresDir = flag.String("figures", "", "write BenchmarkReplicaAdaptation's timelines as SVG and PNG files into this directory")

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// getCommand is how go-redis writes the benchmarks' GET of one key (RESP
// array of two, the command in lower case).
const getCommand = "*2\r\n$3\r\nget\r\n"

// readLog records every GET a client writes: when, and to which node (the
// address the connection dialled). A read's serving node is exact this
// way, where the INFO commandstats counts the benchmark polls are sampled
// every 100 ms. Each GET is recorded when it is written, not when its
// reply comes: at most one round trip (6 or 42 ms) earlier.
type readLog struct {
	mu   sync.Mutex
	sent []sentGets
}

// sentGets is one write to a connection: n GETs at once (more than one
// when go-redis pipelines them).
type sentGets struct {
	at   time.Time
	addr string
	n    int
}

// wrap returns dial with its connections counting the GETs written.
func (r *readLog) wrap(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &getCountingConn{Conn: conn, addr: loopbackAddr(addr), log: r}, nil
	}
}

// loopbackAddr is addr with an empty host made 127.0.0.1: go-redis's
// cluster client (RouteByLatency) dials a loopback node the sentinels name
// 127.0.0.1:port as ":port", which reaches the same node.
func loopbackAddr(addr string) string {
	if host, port, err := net.SplitHostPort(addr); err == nil && host == "" {
		return net.JoinHostPort("127.0.0.1", port)
	}
	return addr
}

// note records the GETs in b, written to addr now.
func (r *readLog) note(b []byte, addr string, now time.Time) {
	n := bytes.Count(b, []byte(getCommand))
	if n == 0 {
		return
	}
	r.mu.Lock()
	r.sent = append(r.sent, sentGets{at: now, addr: addr, n: n})
	r.mu.Unlock()
}

type getCountingConn struct {
	net.Conn
	addr string
	log  *readLog
}

func (c *getCountingConn) Write(b []byte) (int, error) {
	c.log.note(b, c.addr, time.Now())
	return c.Conn.Write(b)
}

// totals is the number of GETs written to each address.
func (r *readLog) totals() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, s := range r.sent {
		out[s.addr] += s.n
	}
	return out
}

// check compares the GETs the client wrote with the GETs the nodes ran
// while it was open (gets, counted before it opened; the client is
// closed): the same number on every node, and none written elsewhere.
func (r *readLog) check(nodes []*lab.Node, gets *counter) error {
	ran, _ := gets.deltas()
	written := r.totals()
	var bad []string
	for i, n := range nodes {
		if written[n.Addr()] != ran[i] {
			bad = append(bad, fmt.Sprintf("node %d (%s) ran %d GETs, the client's connections wrote %d", i, n.Addr(), ran[i], written[n.Addr()]))
		}
		delete(written, n.Addr())
	}
	if len(written) > 0 {
		bad = append(bad, fmt.Sprintf("GETs written to addresses that are not the lab's nodes: %v", written))
	}
	if len(bad) > 0 {
		return errors.New(strings.Join(bad, "; "))
	}
	return nil
}

// drill is the reads written from from to to, re-based to from, each
// named by node(addr).
func (r *readLog) drill(run timeline.Run, from, to time.Time, node func(string) string) *timeline.Drill {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := &timeline.Drill{Run: run, Length: to.Sub(from)}
	for _, s := range r.sent {
		if s.at.Before(from) || !s.at.Before(to) {
			continue
		}
		for range s.n {
			d.Ops = append(d.Ops, timeline.Op{At: s.at.Sub(from), Kind: timeline.KindRead, Node: node(s.addr)})
		}
	}
	slices.SortStableFunc(d.Ops, func(a, b timeline.Op) int { return int(a.At - b.At) })
	return d
}

// electionLog records a Selector's Observer events and, from a goroutine
// of its own, the table of each probe round (Selector.Table after
// WaitRound).
type electionLog struct {
	mu     sync.Mutex
	events []replica.Event
	rounds []tableAt

	cancel context.CancelFunc
	done   chan struct{}
}

type tableAt struct {
	at    time.Time
	table []replica.NodeStatus
}

func (e *electionLog) observe(ev replica.Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

// watch records sel's table after each probe round from now until stop.
func (e *electionLog) watch(sel *replica.Selector) {
	ctx, cancel := context.WithCancel(context.Background())
	e.cancel, e.done = cancel, make(chan struct{})
	go func() {
		defer close(e.done)
		for n := sel.Rounds() + 1; ; n = sel.Rounds() + 1 {
			if err := sel.WaitRound(ctx, n); err != nil {
				return // stopped, or the Selector closed
			}
			tab, now := sel.Table(), time.Now()
			e.mu.Lock()
			e.rounds = append(e.rounds, tableAt{at: now, table: tab})
			e.mu.Unlock()
		}
	}()
}

// stop ends watch and waits for its goroutine.
func (e *electionLog) stop() {
	if e.cancel != nil {
		e.cancel()
		<-e.done
	}
}

// electionEvents are the election's changes from from to to as markers.
func (e *electionLog) electionEvents(from, to time.Time) []timeline.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []timeline.Event
	for _, ev := range e.events {
		if ev.Time.Before(from) || !ev.Time.Before(to) {
			continue
		}
		out = append(out, timeline.Event{At: ev.Time.Sub(from), Name: "election: " + string(ev.Reason), Detail: ev.Detail})
	}
	return out
}

// probe is the rounds from from to to, re-based to from; a node's
// Elected is whether Nearest's reads go to it (NodeStatus.Nearest).
func (e *electionLog) probe(run timeline.Run, from, to time.Time, node func(string) string) *timeline.Probe {
	e.mu.Lock()
	p := &timeline.Probe{Run: run}
	for _, r := range e.rounds {
		if r.at.Before(from) || !r.at.Before(to) {
			continue
		}
		round := timeline.Round{At: r.at.Sub(from)}
		for _, st := range r.table {
			round.Nodes = append(round.Nodes, timeline.NodeRTT{Addr: node(st.Addr), Role: string(st.Role), RTT: st.RTT, Healthy: st.Healthy, Elected: st.Nearest})
		}
		p.Rounds = append(p.Rounds, round)
	}
	e.mu.Unlock()
	p.Events = e.electionEvents(from, to)
	return p
}

// writeFigures writes fig as name.svg and name.png into *figuresDir.
func writeFigures(b *testing.B, name string, fig timeline.Figure) {
	b.Helper()
	for _, ext := range []string{".svg", ".png"} {
		path := filepath.Join(*figuresDir, name+ext)
		if err := timeline.WriteFile(path, fig); err != nil {
			b.Fatal(err)
		}
		b.Logf("wrote %s", path)
	}
}

// readLog counts the GETs in what a client writes, and only those.
func TestReadLogNote(t *testing.T) {
	get := "*2\r\n$3\r\nget\r\n$1\r\nk\r\n"
	tests := []struct {
		name  string
		wrote string
		want  int
	}{
		{"one GET", get, 1},
		{"three pipelined", get + get + get, 3},
		{"a PING", "*1\r\n$4\r\nping\r\n", 0},
		{"a SET of the key get", "*3\r\n$3\r\nset\r\n$3\r\nget\r\n$1\r\nv\r\n", 0},
		{"a GET after an INFO", "*2\r\n$4\r\ninfo\r\n$11\r\nreplication\r\n" + get, 1},
	}
	for _, tt := range tests {
		var r readLog
		r.note([]byte(tt.wrote), "a", time.Now())
		if got := r.totals()["a"]; got != tt.want {
			t.Errorf("%s: counted %d GETs, want %d", tt.name, got, tt.want)
		}
	}
}

// loopbackAddr names go-redis's ":port" dial as the lab's address.
func TestLoopbackAddr(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{":6379", "127.0.0.1:6379"},
		{"127.0.0.1:6379", "127.0.0.1:6379"},
		{"[::1]:6379", "[::1]:6379"},
		{"/tmp/redis.sock", "/tmp/redis.sock"},
	} {
		if got := loopbackAddr(tt.in); got != tt.want {
			t.Errorf("loopbackAddr(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
