package sentinel

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/timeline"
)

// loadConfig is the topology of the failover-under-load runs: 1 master,
// 2 replicas, 3 sentinels, every node 6 ms away (so 8 sequential writers
// make about 1,200 writes/s).
func loadConfig() lab.Config {
	return lab.Config{Replicas: 2, Sentinels: 3, Nodes: []lab.NodeConfig{
		{Latency: 6 * time.Millisecond}, {Latency: 6 * time.Millisecond}, {Latency: 6 * time.Millisecond},
	}}
}

type ackRecord struct {
	id string
	at time.Time
}

type failoverWindow struct {
	requested, agreed, settled time.Time
	oldMaster, newMaster       string // the addresses clients dial
}

type dialFunc = func(ctx context.Context, network, addr string) (net.Conn, error)

// servedBy records, for each op id, the address of the node the RPUSH
// carrying it was last written to (a command re-sent elsewhere is
// recorded where it went last, which is where its reply came from), and
// likewise for each read's key (a GET of a key that starts with
// readKeyPrefix). The clients' dialers are wrapped so that every
// connection knows its node.
type servedBy struct {
	mu   sync.Mutex
	addr map[string]string
}

func newServedBy() *servedBy { return &servedBy{addr: map[string]string{}} }

// wrap returns dial with its connections tagged with the address dialled.
func (s *servedBy) wrap(dial dialFunc) dialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &taggedConn{Conn: conn, addr: addr, rec: s}, nil
	}
}

func (s *servedBy) get(id string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addr[id]
}

// note finds the op ids of the RPUSH ops commands in a buffer a client
// writes (RESP: ... $3\r\nops\r\n$<n>\r\n<id>\r\n), and the keys of the
// readers' GETs (... $3\r\nget\r\n$<n>\r\nprobe:<id>\r\n).
func (s *servedBy) note(b []byte, addr string) {
	s.noteAfter(b, addr, "\r\n$3\r\nops\r\n$", "")
	s.noteAfter(b, addr, "\r\n$3\r\nget\r\n$", readKeyPrefix)
}

// noteAfter records the bulk string after each marker in b that starts
// with prefix.
func (s *servedBy) noteAfter(b []byte, addr, marker, prefix string) {
	for rest := b; ; {
		i := bytes.Index(rest, []byte(marker))
		if i < 0 {
			return
		}
		rest = rest[i+len(marker):]
		nl := bytes.Index(rest, []byte("\r\n"))
		if nl < 0 {
			return
		}
		n, err := strconv.Atoi(string(rest[:nl]))
		if err != nil || nl+2+n > len(rest) {
			return
		}
		id := string(rest[nl+2 : nl+2+n])
		rest = rest[nl+2+n:]
		if !strings.HasPrefix(id, prefix) {
			continue
		}
		s.mu.Lock()
		s.addr[id] = addr
		s.mu.Unlock()
	}
}

type taggedConn struct {
	net.Conn
	addr string
	rec  *servedBy
}

func (c *taggedConn) Write(b []byte) (int, error) {
	c.rec.note(b, c.addr)
	return c.Conn.Write(b)
}

// loadReport is what one run measured.
type loadReport struct {
	name            string
	writes, reads   int64
	acked           int
	duplicates      int
	lost            int
	lostPerFailover []int
	writeErrs       map[string]int
	readErrs        map[string]int
	readErrsOutside int
	gaps            []time.Duration // per failover: longest span without a surviving ack
	// firstOnNew is, per failover, the time from the failover command to
	// the first acknowledged write that survived and was served by the
	// new master (-1: none before the next failover).
	firstOnNew      []time.Duration
	switches        []int // per failover: master changes the client reported
	windows         []failoverWindow
	writesPerSecond float64
	// drill is the run's timeline, every op with its node and outcome.
	drill *timeline.Drill
}

func (r *loadReport) row() string {
	return fmt.Sprintf("| %s | %d | %d | %d | %v | %s | %s | %d | %s | %s |",
		r.name, r.acked, r.duplicates, r.lost, r.lostPerFailover, errSummary(r.writeErrs), errSummary(r.readErrs),
		r.readErrsOutside, medianMax(r.gaps), medianMax(r.firstOnNew))
}

// medianMax formats the median and the maximum of ds (a negative value,
// "not seen", counts as the largest).
func medianMax(ds []time.Duration) string {
	if len(ds) == 0 {
		return "-"
	}
	ds = slices.Clone(ds)
	for i, d := range ds {
		if d < 0 {
			ds[i] = time.Duration(1<<63 - 1)
		}
	}
	slices.Sort(ds)
	f := func(d time.Duration) string {
		if d == time.Duration(1<<63-1) {
			return "none"
		}
		return d.Round(time.Millisecond).String()
	}
	return f(ds[len(ds)/2]) + " / " + f(ds[len(ds)-1])
}

func errSummary(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func errKind(err error) string {
	var mce *MasterChangedError
	var nde *NotDurableError
	switch {
	case errors.As(err, &mce):
		return "master changed"
	case errors.As(err, &nde):
		return "not durable"
	case errors.Is(err, ErrFailoverInProgress):
		return "failover in progress"
	case redis.IsReadOnlyError(err):
		return "READONLY"
	case failure.Timeout(err):
		return "timeout"
	case failure.Network(err):
		return "connection"
	}
	return strings.SplitN(err.Error(), " ", 2)[0]
}

// runFailoverLoad drives 8 writers (RPUSH of unique op ids) and 8 readers
// through the given number of failovers and checks the final master.
// newClient must dial data nodes through the dial wrapper it is given.
func runFailoverLoad(t *testing.T, name string, failovers int, newClient func(*lab.Lab, func(Event), func(dialFunc) dialFunc) redis.UniversalClient) *loadReport {
	t.Helper()
	ctx := testkit.Context(t, 5*time.Minute)
	l := lab.New(t, loadConfig())
	events := &eventLog{}
	served := newServedBy()
	client := newClient(l, events.observe, served.wrap)
	defer client.Close()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	run := timeline.ThisRun(fmt.Sprintf("%s, %d failovers under load", name, failovers))
	run.Note = fmt.Sprintf("%s, master and 2 replicas each +6 ms, 3 sentinels, 8 writers and 8 readers", l.ServerVersion())

	rep := &loadReport{name: name, writeErrs: map[string]int{}, readErrs: map[string]int{}}
	var mu sync.Mutex
	var acks []ackRecord
	var readErrTimes []time.Time
	var writes, reads atomic.Int64
	// Each goroutine keeps its ops to itself and hands them over when it
	// returns: the readers take no lock for an answered read.
	var ops [][]opRecord
	handOver := func(mine []opRecord) {
		mu.Lock()
		ops = append(ops, mine)
		mu.Unlock()
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	loadStart := time.Now()
	for w := range 8 {
		wg.Go(func() {
			var mine []opRecord
			defer func() { handOver(mine) }()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%d-%d", w, i)
				octx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := client.RPush(octx, "ops", id).Err()
				cancel()
				writes.Add(1)
				op := opRecord{id: id, kind: timeline.KindWrite}
				mu.Lock()
				op.at = time.Now()
				if err == nil {
					acks = append(acks, ackRecord{id: id, at: op.at})
				} else {
					op.err, op.replied = errKind(err), failure.Reply(err)
					rep.writeErrs[op.err]++
				}
				mu.Unlock()
				mine = append(mine, op)
				if err != nil {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	for r := range 8 {
		wg.Go(func() {
			var mine []opRecord
			defer func() { handOver(mine) }()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("%s%d-%d", readKeyPrefix, r, i)
				octx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := client.Get(octx, key).Err()
				cancel()
				reads.Add(1)
				op := opRecord{id: key, kind: timeline.KindRead}
				if err != nil && !errors.Is(err, redis.Nil) {
					mu.Lock()
					op.at = time.Now()
					op.err, op.replied = errKind(err), failure.Reply(err)
					rep.readErrs[op.err]++
					readErrTimes = append(readErrTimes, op.at)
					mu.Unlock()
					mine = append(mine, op)
					time.Sleep(5 * time.Millisecond)
					continue
				}
				op.at = time.Now()
				mine = append(mine, op)
			}
		})
	}

	began := time.Now()
	time.Sleep(time.Second)
	for range failovers {
		res, err := l.Failover(ctx)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		if err := l.WaitSettled(ctx); err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		rep.windows = append(rep.windows, failoverWindow{requested: res.Requested, agreed: res.Agreed, settled: time.Now(),
			oldMaster: res.OldMaster.Addr(), newMaster: res.NewMaster.Addr()})
		time.Sleep(time.Second)
	}
	close(stop)
	wg.Wait()
	elapsed := time.Since(began)
	loadEnd := time.Now()

	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}
	master, err := l.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	final, err := master.Do(ctx, "LRANGE", "ops", 0, -1).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]int{}
	for _, id := range final {
		present[id]++
	}
	for _, n := range present {
		if n > 1 {
			rep.duplicates += n - 1
		}
	}
	rep.writes, rep.reads, rep.acked = writes.Load(), reads.Load(), len(acks)
	rep.writesPerSecond = float64(rep.writes) / elapsed.Seconds()
	rep.lostPerFailover = make([]int, len(rep.windows))
	var surviving []time.Time
	for _, a := range acks {
		if present[a.id] > 0 {
			surviving = append(surviving, a.at)
			continue
		}
		rep.lost++
		for k, w := range rep.windows {
			if !a.at.Before(w.requested) && a.at.Before(w.settled.Add(time.Second)) {
				rep.lostPerFailover[k]++
				break
			}
		}
	}
	slices.SortFunc(surviving, func(a, b time.Time) int { return a.Compare(b) })
	for _, w := range rep.windows {
		rep.gaps = append(rep.gaps, longestGap(surviving, w.requested, w.settled.Add(time.Second)))
	}
	// acks is in acknowledgement order (appended under mu at ack time).
	for k, w := range rep.windows {
		first := time.Duration(-1)
		for _, a := range acks {
			if a.at.Before(w.requested) {
				continue
			}
			if k+1 < len(rep.windows) && !a.at.Before(rep.windows[k+1].requested) {
				break
			}
			if present[a.id] > 0 && served.get(a.id) == w.newMaster {
				first = a.at.Sub(w.requested)
				break
			}
		}
		rep.firstOnNew = append(rep.firstOnNew, first)
	}
	for _, at := range readErrTimes {
		inside := false
		for _, w := range rep.windows {
			if !at.Before(w.requested.Add(-50*time.Millisecond)) && at.Before(w.settled.Add(time.Second)) {
				inside = true
			}
		}
		if !inside {
			rep.readErrsOutside++
		}
	}
	t.Logf("%s: %d writes (%.0f/s), %d reads, %d acknowledged, %d duplicates, %d acknowledged but lost %v; write errors: %s; read errors: %s (%d outside failover windows); write gap per failover %v; first surviving write served by the new master, after the failover command, per failover %v (-1: none)",
		name, rep.writes, rep.writesPerSecond, rep.reads, rep.acked, rep.duplicates, rep.lost, rep.lostPerFailover,
		errSummary(rep.writeErrs), errSummary(rep.readErrs), rep.readErrsOutside, rep.gaps, rep.firstOnNew)
	// When the client reported them: the hold on the leader's announcement,
	// and the switch, relative to each failover command.
	holds := 0 // failovers with a hold and a switch after it: the timeline's shaded windows
	for k, w := range rep.windows {
		var held, switched time.Duration = -1, -1
		switches := 0
		for _, ev := range events.all() {
			if ev.Kind == EventMasterChanged && !ev.Time.Before(w.requested) && ev.Time.Before(w.settled) {
				switches++
			}
		}
		rep.switches = append(rep.switches, switches)
		for _, ev := range events.all() {
			if ev.Time.Before(w.requested) || !ev.Time.Before(w.settled) {
				continue
			}
			if ev.Kind == EventFailoverStarted && held < 0 {
				held = ev.Time.Sub(w.requested)
			}
			if ev.Kind == EventMasterChanged && switched < 0 {
				switched = ev.Time.Sub(w.requested)
			}
		}
		if held >= 0 && switched >= held {
			holds++
		}
		if held >= 0 || switched >= 0 {
			t.Logf("%s failover %d: writes held at %v, switched at %v after the command (-1: not seen); sentinels agreed at %v",
				name, k+1, held, switched, w.agreed.Sub(w.requested))
		}
	}
	var all []opRecord
	for _, mine := range ops {
		all = append(all, mine...)
	}
	rep.drill = loadDrill(run, loadStart, loadEnd, all, present, served, rep.windows, events.all())
	checkDrill(t, rep, rep.drill, present, holds)
	// Every run's figure is drawn, written or not, so that a timeline the
	// renderer cannot draw fails here rather than in make figures.
	if err := rep.drill.Render(io.Discard, timeline.SVG); err != nil {
		t.Errorf("%s: drawing the timeline: %v", name, err)
	}
	return rep
}

// longestGap is the longest span inside [from, to] with no time in ts
// (sorted): the write unavailability, counting only writes that survived.
func longestGap(ts []time.Time, from, to time.Time) time.Duration {
	longest, last := time.Duration(0), from
	for _, at := range ts {
		if at.Before(from) {
			continue
		}
		if at.After(to) {
			break
		}
		longest = max(longest, at.Sub(last))
		last = at
	}
	return max(longest, to.Sub(last))
}

// servedBy finds the op ids in what a client writes, and only those.
func TestServedByNote(t *testing.T) {
	tests := []struct {
		name  string
		wrote string
		want  map[string]string
	}{
		{"one RPUSH", "*3\r\n$5\r\nrpush\r\n$3\r\nops\r\n$3\r\n0-1\r\n", map[string]string{"0-1": "a"}},
		{"a durable pipeline (RPUSH, WAIT)", "*3\r\n$5\r\nrpush\r\n$3\r\nops\r\n$5\r\n7-123\r\n*3\r\n$4\r\nwait\r\n$1\r\n2\r\n$4\r\n1000\r\n",
			map[string]string{"7-123": "a"}},
		{"two RPUSHes", "*3\r\n$5\r\nrpush\r\n$3\r\nops\r\n$3\r\n1-1\r\n*3\r\n$5\r\nrpush\r\n$3\r\nops\r\n$4\r\n2-10\r\n",
			map[string]string{"1-1": "a", "2-10": "a"}},
		{"a GET", "*2\r\n$3\r\nget\r\n$5\r\nprobe\r\n", map[string]string{}},
		{"a reader's GET", "*2\r\n$3\r\nget\r\n$9\r\nprobe:3-7\r\n", map[string]string{"probe:3-7": "a"}},
		{"a GET and an RPUSH auto-pipelined", "*2\r\n$3\r\nget\r\n$10\r\nprobe:0-12\r\n*3\r\n$5\r\nrpush\r\n$3\r\nops\r\n$3\r\n4-2\r\n",
			map[string]string{"probe:0-12": "a", "4-2": "a"}},
		{"a GET of a key named like an op id", "*2\r\n$3\r\nget\r\n$3\r\n0-1\r\n", map[string]string{}},
		{"a reader's GET cut short", "*2\r\n$3\r\nget\r\n$12\r\nprobe:3\r\n", map[string]string{}},
		{"cut short", "*3\r\n$5\r\nrpush\r\n$3\r\nops\r\n$9\r\n0-1\r\n", map[string]string{}},
	}
	for _, tt := range tests {
		s := newServedBy()
		s.note([]byte(tt.wrote), "a")
		if fmt.Sprint(s.addr) != fmt.Sprint(tt.want) {
			t.Errorf("%s: recorded %v, want %v", tt.name, s.addr, tt.want)
		}
	}
}

// TestFailoverUnderLoad runs the same load through 5 failovers with
// rediskit (default and durable, each also with Config.AutoPipeline) and
// go-redis's NewFailoverClient (default options), each on its own lab, and
// compares them.
func TestFailoverUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("about a minute and a half of failovers")
	}
	const failovers = 5
	ours := func(durable, auto bool) func(*lab.Lab, func(Event), func(dialFunc) dialFunc) redis.UniversalClient {
		return func(l *lab.Lab, observe func(Event), wrap func(dialFunc) dialFunc) redis.UniversalClient {
			c, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), Durable: durable, Observer: observe,
				AutoPipeline: auto,
				NodeOptions:  func(o *redis.Options) { o.Dialer = wrap(o.Dialer) }})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	// go-redis with default options; its Dialer is go-redis's own default
	// (net.Dialer, 5 s timeout, 5 min keep-alive), wrapped to tag
	// connections with the node they reach.
	goRedis := func(l *lab.Lab, _ func(Event), wrap func(dialFunc) dialFunc) redis.UniversalClient {
		d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Minute}
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
			Dialer: wrap(d.DialContext)})
	}

	def := runFailoverLoad(t, "rediskit (default)", failovers, ours(false, false))
	dur := runFailoverLoad(t, "rediskit (durable)", failovers, ours(true, false))
	defAuto := runFailoverLoad(t, "rediskit (default, AutoPipeline)", failovers, ours(false, true))
	durAuto := runFailoverLoad(t, "rediskit (durable, AutoPipeline)", failovers, ours(true, true))
	gor := runFailoverLoad(t, "go-redis NewFailoverClient", failovers, goRedis)

	t.Log("| client | acknowledged | duplicates | acknowledged but lost | lost per failover | write errors | read errors | read errors outside failovers | write gap median / max | failover command to first durable write on the new master, median / max |")
	for _, r := range []*loadReport{def, dur, defAuto, durAuto, gor} {
		t.Log(r.row())
	}
	if *figuresDir != "" {
		writeLoadFigures(t, def, gor)
	}

	for _, r := range []*loadReport{def, dur, defAuto, durAuto} {
		if r.duplicates != 0 {
			t.Errorf("%s: %d duplicate op ids", r.name, r.duplicates)
		}
		if r.readErrsOutside != 0 {
			t.Errorf("%s: %d read errors outside the failover windows", r.name, r.readErrsOutside)
		}
	}
	for _, r := range []*loadReport{def, dur, defAuto, durAuto} {
		for k, n := range r.switches {
			if n != 1 {
				t.Errorf("%s failover %d: the client switched %d times, want once", r.name, k+1, n)
			}
		}
	}
	for _, r := range []*loadReport{dur, durAuto} {
		if r.lost != 0 {
			t.Errorf("%s: %d acknowledged op ids missing from the final master", r.name, r.lost)
		}
	}
	for _, r := range []*loadReport{def, defAuto} {
		if gor.lost > 0 && r.lost*4 > gor.lost {
			t.Errorf("%s lost %d acknowledged writes, go-redis %d: want at most a quarter", r.name, r.lost, gor.lost)
		}
		if gor.lost == 0 && r.lost > 0 {
			t.Errorf("%s lost %d acknowledged writes where go-redis lost none", r.name, r.lost)
		}
	}
}
