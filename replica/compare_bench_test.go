package replica_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
	"github.com/rediskit/rediskit/timeline"
)

// The comparison benchmarks of BENCHMARKS.md ("Latency-aware replica
// election"): master +6 ms, replica A +6 ms, replica B +42 ms, 8 goroutines
// each sending GETs one after the other.
//
//	go test -run '^$' -bench 'ReplicaReads' -benchtime 40000x -timeout 60m ./replica/
//	go test -run '^$' -bench 'ConcurrentReads' -benchtime 20000x ./replica/
//	go test -run '^$' -bench 'SameLoadReads' -benchtime 40000x -timeout 60m ./replica/
//	go test -run '^$' -bench 'ReplicaAdaptation' -benchtime 1x -timeout 30m ./replica/

const benchWorkers = 8

func benchLab(b *testing.B) *lab.Lab {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := lab.Start(ctx, lab.Config{Replicas: 2, Sentinels: 3, Nodes: []lab.NodeConfig{
		{Latency: 6 * ms}, {Latency: 6 * ms}, {Latency: 42 * ms}}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	m := l.Node(0).NewClient()
	defer m.Close()
	if err := m.Set(ctx, "k", "v", 0).Err(); err != nil {
		b.Fatal(err)
	}
	return l
}

// benchClient is one of the compared clients.
type benchClient struct {
	name string
	open func(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector)
}

func failoverOptions(l *lab.Lab) *redis.FailoverOptions {
	return &redis.FailoverOptions{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), MaxRetries: -1, DialerRetries: 1}
}

func rediskitClient(rf sentinel.ReadFrom) func(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
	return rediskitRecorded(rf, nil, nil)
}

// rediskitRecorded is rediskitClient with the data nodes' connections
// counting their GETs into reads and the election's events into election
// (each when not nil); nothing else differs.
func rediskitRecorded(rf sentinel.ReadFrom, reads *readLog, election *electionLog) func(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
	return func(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
		var scfg replica.Config // the client's default settings
		if election != nil {
			scfg.Observer = election.observe
		}
		sel, err := replica.NewSelector(scfg)
		if err != nil {
			b.Fatal(err)
		}
		cfg := sentinel.Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), ReadFrom: rf, ReplicaSelector: sel}
		if reads != nil {
			cfg.NodeOptions = func(o *redis.Options) { o.Dialer = reads.wrap(o.Dialer) }
		}
		c, err := sentinel.NewClient(cfg)
		if err != nil {
			b.Fatal(err)
		}
		return c, sel
	}
}

// routeByLatencyRecorded is benchClients' go-redis RouteByLatency with its
// connections counting their GETs into reads: go-redis's default dialer
// (redis.NewDialer, DialTimeout's 5 s default), wrapped.
func routeByLatencyRecorded(reads *readLog) func(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
	return func(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
		o := failoverOptions(l)
		o.RouteByLatency = true
		o.Dialer = reads.wrap(redis.NewDialer(&redis.Options{DialTimeout: 5 * time.Second}))
		return redis.NewFailoverClusterClient(o), nil
	}
}

func nearReplicaDirect(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
	return redis.NewClient(l.Node(1).Options()), nil
}

// benchClients are the clients BenchmarkReplicaReads compares. The first
// is the reference for the near replica's own latency, the second is
// rediskit, and the last is a second client identical to the first: how
// far two identical clients' percentiles differ in one run is the noise
// floor of the comparison. Only the clients named "go-redis …" count as
// go-redis options.
var benchClients = []benchClient{
	{"near replica A direct (reference)", nearReplicaDirect},
	{"rediskit Nearest", rediskitClient(sentinel.Nearest)},
	{"go-redis ReplicaOnly", func(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
		o := failoverOptions(l)
		o.ReplicaOnly = true
		return redis.NewFailoverClient(o), nil
	}},
	{"go-redis RouteByLatency", func(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
		o := failoverOptions(l)
		o.RouteByLatency = true
		return redis.NewFailoverClusterClient(o), nil
	}},
	{"go-redis RouteRandomly", func(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
		o := failoverOptions(l)
		o.RouteRandomly = true
		return redis.NewFailoverClusterClient(o), nil
	}},
	{"master only", func(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
		return redis.NewClient(l.Node(0).Options()), nil
	}},
	{"master and A in turn (a test selector)", alternatingClient},
	{"near replica A direct, a second client (noise floor)", nearReplicaDirect},
}

// alternatingClient is a rediskit client whose selector sends every other
// read to the master and the others to A: the two near nodes each carry
// half of the reads. It shows whether spreading the reads over the near
// nodes makes them faster.
func alternatingClient(b *testing.B, l *lab.Lab) (redis.UniversalClient, *replica.Selector) {
	c, err := sentinel.NewClient(sentinel.Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
		ReadFrom: sentinel.Nearest, ReplicaSelector: &alternatingSelector{replica: l.Node(1).Addr()}})
	if err != nil {
		b.Fatal(err)
	}
	return c, nil
}

// alternatingSelector picks the master ("") and its replica in turn.
type alternatingSelector struct {
	replica string
	reads   atomic.Uint64
}

func (s *alternatingSelector) UpdateTopology(sentinel.Topology) {}
func (s *alternatingSelector) Close() error                     { return nil }
func (s *alternatingSelector) Pick(sentinel.ReadFrom) (string, func()) {
	if s.reads.Add(1)%2 == 0 {
		return s.replica, nil
	}
	return "", nil
}

// warm reads for d from benchWorkers goroutines, after the rediskit
// selector's first round: so that every pool holds a connection for each
// goroutine before the measured reads (a dial costs a round trip more), and
// so that go-redis's RouteByLatency has measured each node's latency in the
// background when it first saw it (10 PINGs, 10–20 ms apart).
func warm(b *testing.B, c redis.UniversalClient, sel *replica.Selector, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	if err := c.Get(ctx, "k").Err(); err != nil {
		b.Fatal(err)
	}
	if sel != nil {
		if err := sel.WaitRound(ctx, 1); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Go(func() {
			for time.Now().Before(deadline) {
				if err := c.Get(ctx, "k").Err(); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// turnReads is how many reads a client makes in one turn of
// BenchmarkReplicaReads before the next client takes over: short turns
// (about 0.2 s for the near clients) so that the machine's changes of load
// are shared by all the clients rather than falling on one of them.
const turnReads = 200

// BenchmarkReplicaReads measures read latency (p50/p90/p99) and the share
// of reads per node for each client on one lab. b.N reads per client, in
// turns of turnReads: each round gives every client one turn, so a change
// of the machine's load during the run is shared by all of them. It
// reports rediskit's percentiles and their ratio to the best go-redis
// option's (below 1: rediskit is faster) and to the near replica's own
// p50, the same ratios between two identical clients of the near replica
// (the noise floor), and logs the table of every client.
//
// It runs twice. In start=together, every turn starts its 8 goroutines at
// the same instant; reads to a node of fixed latency then stay in step,
// so a client that sends all of its reads to near nodes has its 8 replies
// arrive, and queue for the 2 vCPUs, together (BenchmarkConcurrentReads),
// while a client that sends some of its reads to the far replica loses
// that step after a read or two. In start=staggered, goroutine w starts
// its turn w × benchStagger after the first, spreading the 8 over one near
// round trip as independent requesters would be; every client starts the
// same way, and nothing else differs.
func BenchmarkReplicaReads(b *testing.B) {
	b.Run("start=together", func(b *testing.B) { replicaReads(b, 0) })
	b.Run("start=staggered", func(b *testing.B) { replicaReads(b, benchStagger) })
}

// benchStagger spreads the start of a turn's benchWorkers goroutines over
// one round trip to the near nodes (6 ms).
const benchStagger = 6 * ms / benchWorkers

func replicaReads(b *testing.B, stagger time.Duration) {
	if b.N < turnReads {
		// The testing package's first call, b.N = 1, before the -benchtime
		// Nx one (or its first guesses without -benchtime): not enough for
		// one turn, and not worth a lab.
		return
	}
	l := benchLab(b)
	type result struct {
		lat  []time.Duration
		gets [3]int
	}
	clients := make([]redis.UniversalClient, len(benchClients))
	results := make([]result, len(benchClients))
	for i, bc := range benchClients {
		c, sel := bc.open(b, l)
		defer c.Close()
		warm(b, c, sel, 2*time.Second)
		clients[i] = c
		results[i].lat = make([]time.Duration, 0, b.N)
	}
	rounds := b.N / turnReads
	t := newTurns(benchWorkers)
	t.stagger = stagger
	b.ResetTimer()
	for range rounds {
		for i, c := range clients {
			gets := countGets(b, l.Nodes())
			results[i].lat = t.run(b, c, benchWorkers, turnReads, results[i].lat)
			d, _ := gets.deltas()
			for n := range d {
				results[i].gets[n] += d[n]
			}
		}
	}
	b.StopTimer()

	for i := range results {
		slices.Sort(results[i].lat)
	}
	pct := func(r result, q float64) float64 { return percentile(r.lat, q) }
	var rows []string
	bestP50, bestP99 := 1e9, 1e9
	for i, bc := range benchClients {
		r := results[i]
		total := max(r.gets[0]+r.gets[1]+r.gets[2], 1)
		share := func(n int) float64 { return 100 * float64(r.gets[n]) / float64(total) }
		rows = append(rows, fmt.Sprintf("| %s | %.2f | %.2f | %.2f | %.1f%% / %.1f%% / %.1f%% |",
			bc.name, pct(r, 0.5), pct(r, 0.9), pct(r, 0.99), share(0), share(1), share(2)))
		if strings.HasPrefix(bc.name, "go-redis") {
			bestP50, bestP99 = min(bestP50, pct(r, 0.5)), min(bestP99, pct(r, 0.99))
		}
	}
	// rediskit Nearest, the near replica direct, and its twin.
	ours, near, twin := results[1], results[0], results[len(results)-1]
	b.ReportMetric(pct(ours, 0.5), "rediskit-p50-ms")
	b.ReportMetric(pct(ours, 0.99), "rediskit-p99-ms")
	b.ReportMetric(pct(ours, 0.5)/bestP50, "p50-vs-best-go-redis")
	b.ReportMetric(pct(ours, 0.99)/bestP99, "p99-vs-best-go-redis")
	// The same ratios for the direct client to A, which reads where
	// rediskit reads with no routing at all: what the best routing scores
	// against the best of three noisy go-redis figures.
	b.ReportMetric(pct(near, 0.5)/bestP50, "near-p50-vs-best-go-redis")
	b.ReportMetric(pct(near, 0.99)/bestP99, "near-p99-vs-best-go-redis")
	b.ReportMetric(pct(ours, 0.99)/pct(near, 0.5), "p99-vs-near-p50")
	b.ReportMetric(pct(near, 0.99)/pct(near, 0.5), "near-p99-vs-near-p50")
	b.ReportMetric(pct(twin, 0.5)/pct(near, 0.5), "twin-p50-vs-near-p50")
	b.ReportMetric(pct(twin, 0.99)/pct(near, 0.99), "twin-p99-vs-near-p99")
	b.Logf("%d goroutines, %d reads per client in %d turns of %d\n| client | p50 ms | p90 ms | p99 ms | reads on master / A (+6 ms) / B (+42 ms) |\n|---|---|---|---|---|\n%s",
		benchWorkers, rounds*turnReads, rounds, turnReads, joinLines(rows))
}

// sameLoadRivals are the clients BenchmarkSameLoadReads runs alongside
// rediskit: the go-redis options, master only, and the direct client to A.
var sameLoadRivals = []string{"go-redis ReplicaOnly", "go-redis RouteByLatency", "go-redis RouteRandomly", "master only", "near replica A direct (reference)"}

// BenchmarkSameLoadReads is the control of BenchmarkReplicaReads
// (start=together) for its p50 comparison. There each client has the
// machine to itself during its turn, so how its own reads are spread in
// time decides how fast they are (see BenchmarkConcurrentReads). Here
// rediskit Nearest and one other client run at the same time, each from
// benchWorkers goroutines, in turns: both start together, and both stop
// sending when rediskit has sent turnReads reads, so both see the same load
// and the comparison is of routing alone. b.N reads of rediskit per rival;
// it reports rediskit's p50 and p99 over each rival's. The last pair is two
// identical direct clients to A, run the same way: their ratios are the
// method's noise floor.
func BenchmarkSameLoadReads(b *testing.B) {
	if b.N < turnReads {
		return // the testing package's first call, b.N = 1: not worth a lab
	}
	l := benchLab(b)
	open := func(name string) redis.UniversalClient {
		i := slices.IndexFunc(benchClients, func(bc benchClient) bool { return bc.name == name })
		c, sel := benchClients[i].open(b, l)
		b.Cleanup(func() { _ = c.Close() })
		warm(b, c, sel, 2*time.Second)
		return c
	}
	// A pair's lead sends turnReads reads a turn; the other client reads
	// alongside until the lead has sent them.
	type pair struct {
		name, metric string
		lead, other  redis.UniversalClient
		lat          [2][]time.Duration // lead's, other's
	}
	ours := open("rediskit Nearest")
	var pairs []*pair
	for _, name := range sameLoadRivals {
		short := strings.Fields(strings.TrimPrefix(name, "go-redis "))[0]
		pairs = append(pairs, &pair{name: "rediskit Nearest alongside " + name, metric: short, lead: ours, other: open(name)})
	}
	direct := "near replica A direct (reference)"
	pairs = append(pairs, &pair{name: "A direct alongside a second A direct client (noise floor)", metric: "noise-floor",
		lead: open(direct), other: open(direct)})
	tLead, tOther := newTurns(benchWorkers), newTurns(benchWorkers)
	b.ResetTimer()
	for range b.N / turnReads {
		for _, p := range pairs {
			// Both stop sending when the lead has sent its turnReads: each
			// has its last reads in flight as the machine empties.
			var next atomic.Int64
			var done atomic.Bool
			leadMore := func() bool {
				if next.Add(1) <= turnReads {
					return true
				}
				done.Store(true)
				return false
			}
			var wg sync.WaitGroup
			wg.Go(func() {
				p.lat[1] = tOther.runWhile(b, p.other, benchWorkers, func() bool { return !done.Load() }, p.lat[1])
			})
			p.lat[0] = tLead.runWhile(b, p.lead, benchWorkers, leadMore, p.lat[0])
			wg.Wait()
		}
	}
	b.StopTimer()
	var rows []string
	for _, p := range pairs {
		lead, other := p.lat[0], p.lat[1]
		slices.Sort(lead)
		slices.Sort(other)
		p50 := percentile(lead, 0.5) / percentile(other, 0.5)
		p99 := percentile(lead, 0.99) / percentile(other, 0.99)
		b.ReportMetric(p50, "p50-vs-"+p.metric)
		b.ReportMetric(p99, "p99-vs-"+p.metric)
		rows = append(rows, fmt.Sprintf("| %s | %d | %.2f / %.2f / %.2f | %d | %.2f / %.2f / %.2f | %.3f | %.3f |",
			p.name, len(lead), percentile(lead, 0.5), percentile(lead, 0.9), percentile(lead, 0.99),
			len(other), percentile(other, 0.5), percentile(other, 0.9), percentile(other, 0.99), p50, p99))
	}
	b.Logf("%d goroutines per client, two clients at a time\n| pair | first's reads | first's p50 / p90 / p99 ms | second's reads | second's p50 / p90 / p99 ms | p50 ratio | p99 ratio |\n|---|---|---|---|---|---|---|\n%s",
		benchWorkers, joinLines(rows))
}

// turns runs the turns of the read benchmarks, with a latency buffer per
// goroutine that each turn reuses.
type turns struct {
	lat [][]time.Duration
	// stagger delays goroutine w's first read of a turn by w × stagger
	// (zero: all start at once).
	stagger time.Duration
}

func newTurns(workers int) *turns {
	t := &turns{lat: make([][]time.Duration, workers)}
	for w := range t.lat {
		t.lat[w] = make([]time.Duration, 0, turnReads)
	}
	return t
}

// run makes reads GETs on c from workers goroutines (at most the workers
// newTurns was given), each sending one after the other, and returns out
// with their latencies appended.
func (t *turns) run(b *testing.B, c redis.UniversalClient, workers, reads int, out []time.Duration) []time.Duration {
	var next atomic.Int64
	return t.runWhile(b, c, workers, func() bool { return next.Add(1) <= int64(reads) }, out)
}

// runWhile is run with the turn's end left to more: each goroutine sends
// its next GET while more returns true.
func (t *turns) runWhile(b *testing.B, c redis.UniversalClient, workers int, more func() bool, out []time.Duration) []time.Duration {
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			ctx := context.Background()
			time.Sleep(time.Duration(w) * t.stagger)
			for more() {
				t0 := time.Now()
				if err := c.Get(ctx, "k").Err(); err != nil {
					b.Error(err)
					return
				}
				t.lat[w] = append(t.lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	for w := range workers {
		out = append(out, t.lat[w]...)
		t.lat[w] = t.lat[w][:0]
	}
	return out
}

// percentile returns the q quantile of sorted latencies, in milliseconds.
func percentile(sorted []time.Duration, q float64) float64 {
	return float64(sorted[int(q*float64(len(sorted)-1))]) / 1e6
}

// BenchmarkConcurrentReads measures what concurrent reads cost each read:
// GETs straight to replica A (+6 ms), from 1, 2, 4 and 8 goroutines each
// sending one after the other, b.N reads for each count in interleaved
// turns of turnReads, every goroutine of a turn starting at once. A last
// row starts its 8 goroutines benchStagger apart instead. Reads that start
// together through a node of constant latency stay in step and queue for
// the 2 vCPUs together; spread out they do not, and they keep the vCPUs
// from idling. The clients of BenchmarkReplicaReads that send part of
// their reads to the far replica (RouteRandomly, ReplicaOnly) fall out of
// step after a read or two: this gives the size of that effect on their
// p50 in start=together.
func BenchmarkConcurrentReads(b *testing.B) {
	if b.N < turnReads {
		return // the testing package's first call, b.N = 1: not worth a lab
	}
	l := benchLab(b)
	c := redis.NewClient(l.Node(1).Options())
	defer c.Close()
	warm(b, c, nil, time.Second)
	// The last row starts its goroutines staggered (benchStagger apart)
	// instead of at once.
	type count struct {
		readers int
		stagger time.Duration
	}
	counts := []count{{1, 0}, {2, 0}, {4, 0}, {benchWorkers, 0}, {benchWorkers, benchStagger}}
	lat := make([][]time.Duration, len(counts))
	t := newTurns(benchWorkers)
	b.ResetTimer()
	for range b.N / turnReads {
		for i, n := range counts {
			t.stagger = n.stagger
			lat[i] = t.run(b, c, n.readers, turnReads, lat[i])
		}
	}
	b.StopTimer()
	var rows []string
	for i, n := range counts {
		slices.Sort(lat[i])
		p50 := percentile(lat[i], 0.5)
		name, metric := fmt.Sprint(n.readers), fmt.Sprintf("p50-ms-%d-readers", n.readers)
		if n.stagger > 0 {
			name, metric = name+", staggered", fmt.Sprintf("p50-ms-%d-staggered-readers", n.readers)
		}
		b.ReportMetric(p50, metric)
		rows = append(rows, fmt.Sprintf("| %s | %.3f | %.3f | %.3f |", name, p50, percentile(lat[i], 0.9), percentile(lat[i], 0.99)))
	}
	b.Logf("%d reads per count\n| concurrent readers | p50 ms | p90 ms | p99 ms |\n|---|---|---|---|\n%s", b.N/turnReads*turnReads, joinLines(rows))
}

func joinLines(rows []string) string {
	s := ""
	for _, r := range rows {
		s += r + "\n"
	}
	return s
}

// BenchmarkReplicaAdaptation swaps the replicas' latencies (A +6 → +42 ms,
// B +42 → +6 ms) under load and measures, in 100 ms windows of GET counts
// per node, how long until 95% of the reads in a window run off the far
// node (on the master or B, both 6 ms away) and on B itself. It runs on
// the lab above (master +6 ms), where the master is as near as A, and with
// the master at +20 ms, where the near replica is the one nearest node.
//
// Every client's connections count the GETs they write (readLog), which
// must equal the GETs the nodes ran; with -figures, the master=6ms runs of
// rediskit Nearest and go-redis RouteByLatency are drawn from them side by
// side (replica-adaptation), and rediskit's election round by round
// (replica-adaptation-rtt).
func BenchmarkReplicaAdaptation(b *testing.B) {
	l := benchLab(b)
	var rows []string
	type recorded struct {
		reads    *readLog
		election *electionLog
		swapped  time.Time
		run      timeline.Run
	}
	figures := map[string]*recorded{} // by client, the master=6ms runs
	for _, master := range []time.Duration{6 * ms, 20 * ms} {
		for _, name := range []string{"rediskit Nearest", "rediskit ReplicaPreferred", "go-redis RouteByLatency"} {
			b.Run(fmt.Sprintf("master=%v/%s", master, name), func(b *testing.B) {
				for range b.N {
					rec := &recorded{reads: &readLog{}, election: &electionLog{}}
					open := routeByLatencyRecorded(rec.reads)
					switch name {
					case "rediskit Nearest":
						open = rediskitRecorded(sentinel.Nearest, rec.reads, rec.election)
					case "rediskit ReplicaPreferred":
						open = rediskitRecorded(sentinel.ReplicaPreferred, rec.reads, rec.election)
					}
					l.Node(0).SetLatency(master)
					l.Node(1).SetLatency(6 * ms)
					l.Node(2).SetLatency(42 * ms)
					rec.run = timeline.ThisRun(name + ": reads per node around the latency swap")
					rec.run.Note = fmt.Sprintf("%s, master +%d ms, replica A +6 → +42 ms, B +42 → +6 ms, 8 readers; reads counted as sent",
						l.ServerVersion(), master.Milliseconds())
					gets := countGets(b, l.Nodes())
					c, sel := open(b, l)
					if sel != nil {
						rec.election.watch(sel)
					}
					warm(b, c, sel, 3*time.Second)
					// The worst phase for each: rediskit swaps just after a
					// probe round; go-redis a few seconds after it measured
					// latencies (its next measurement comes with the
					// cluster-state reload, 60 s after its creation).
					beforeSwap := func() {}
					if sel != nil {
						beforeSwap = func() { _ = sel.WaitRound(context.Background(), sel.Rounds()+1) }
					}
					before, offFar, onB, swapped, err := adapt(l, c, beforeSwap, 2*time.Minute, figureAfter)
					rec.election.stop()
					_ = c.Close()
					if err != nil {
						b.Fatal(err)
					}
					if err := rec.reads.check(l.Nodes(), gets); err != nil {
						b.Fatal(err)
					}
					rec.swapped = swapped
					if master == 6*ms {
						figures[name] = rec
					}
					b.ReportMetric(offFar.Seconds(), "off-far-s")
					b.ReportMetric(onB.Seconds(), "on-B-s")
					rows = append(rows, fmt.Sprintf("| +%v | %s | %.0f%% / %.0f%% / %.0f%% | %s | %s |",
						master.Milliseconds(), name, before[0], before[1], before[2], fmtAdapt(offFar), fmtAdapt(onB)))
				}
			})
		}
	}
	b.Logf("\n| master | client | reads on master / A / B before the swap | 95%% of reads off the far node | 95%% of reads on the new near replica |\n|---|---|---|---|---|\n%s", joinLines(rows))

	ours, theirs := figures["rediskit Nearest"], figures["go-redis RouteByLatency"]
	if ours == nil || theirs == nil {
		return // -bench left one out: no figure
	}
	node := nodeNames(l)
	var drills []timeline.Figure
	for _, r := range []*recorded{ours, theirs} {
		from, to := r.swapped.Add(-figureBefore), r.swapped.Add(figureAfter)
		d := r.reads.drill(r.run, from, to, node)
		d.Events = append([]timeline.Event{{At: figureBefore, Name: "latency swap", Detail: "A +6 → +42 ms, B +42 → +6 ms"}},
			r.election.electionEvents(from, to)...)
		if len(d.Ops) == 0 {
			b.Fatalf("%s: no reads recorded around the swap", r.run.Title)
		}
		drills = append(drills, d)
	}
	from, to := ours.swapped.Add(-figureBefore), ours.swapped.Add(figureAfter)
	run := ours.run
	run.Title = "rediskit Nearest: RTT per node round by round around the latency swap"
	p := ours.election.probe(run, from, to, node)
	p.Events = append([]timeline.Event{{At: figureBefore, Name: "latency swap", Detail: "A +6 → +42 ms, B +42 → +6 ms"}}, p.Events...)
	fig := timeline.SideBySide(drills...)
	// Drawn whether or not they are written: a timeline the renderer
	// cannot draw fails here, not only in make figures.
	for _, f := range []timeline.Figure{fig, p} {
		if err := f.Render(io.Discard, timeline.SVG); err != nil {
			b.Fatal(err)
		}
	}
	if *figuresDir != "" {
		writeFigures(b, "replica-adaptation", fig)
		writeFigures(b, "replica-adaptation-rtt", p)
	}
}

// The adaptation figures span figureBefore before the swap to figureAfter
// after it; adapt keeps reading at least until figureAfter.
const (
	figureBefore = 2 * time.Second
	figureAfter  = 6 * time.Second
)

// nodeNames names the lab's nodes in the figures by their part and
// address ("A 127.0.0.1:40001").
func nodeNames(l *lab.Lab) func(string) string {
	names := map[string]string{}
	for i, part := range []string{"master", "A", "B"} {
		names[l.Node(i).Addr()] = part + " " + l.Node(i).Addr()
	}
	return func(addr string) string {
		if n, ok := names[addr]; ok {
			return n
		}
		return addr
	}
}

func fmtAdapt(d time.Duration) string {
	if d < 0 {
		return "not within 2 min"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

// adapt runs 8 readers, swaps A's and B's latencies once beforeSwap
// returns, and returns the share of reads per node in the 500 ms before,
// the time from the swap to the end of the first 100 ms window in which
// 95% of the reads ran off A, and on B (-1: not within limit), and when
// it swapped. The readers read at least until atLeast after the swap.
func adapt(l *lab.Lab, c redis.UniversalClient, beforeSwap func(), limit, atLeast time.Duration) (before [3]float64, offFar, onB time.Duration, swapped time.Time, err error) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var readErr atomic.Pointer[error]
	for range benchWorkers {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if err := c.Get(context.Background(), "k").Err(); err != nil && !errors.Is(err, redis.Nil) {
					readErr.CompareAndSwap(nil, &err)
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	ctx := context.Background()
	counts := func() [3]int {
		var out [3]int
		for i, n := range l.Nodes() {
			out[i] = calls(ctx, n, "get")
		}
		return out
	}
	start := counts()
	time.Sleep(500 * ms)
	prev := counts()
	sum := 0
	for i := range prev {
		sum += prev[i] - start[i]
	}
	for i := range prev {
		before[i] = 100 * float64(prev[i]-start[i]) / float64(max(sum, 1))
	}
	beforeSwap()
	prev = counts()
	l.Node(1).SetLatency(42 * ms)
	l.Node(2).SetLatency(6 * ms)
	swapped = time.Now()
	offFar, onB = -1, -1
	for time.Since(swapped) < limit && (offFar < 0 || onB < 0 || time.Since(swapped) < atLeast) {
		time.Sleep(100 * ms)
		cur := counts()
		var d [3]int
		total := 0
		for i := range d {
			d[i] = cur[i] - prev[i]
			total += d[i]
		}
		prev = cur
		if total == 0 {
			continue
		}
		at := time.Since(swapped)
		if offFar < 0 && float64(d[0]+d[2]) >= 0.95*float64(total) {
			offFar = at
		}
		if onB < 0 && float64(d[2]) >= 0.95*float64(total) {
			onB = at
		}
	}
	if e := readErr.Load(); e != nil {
		return before, offFar, onB, swapped, *e
	}
	return before, offFar, onB, swapped, nil
}

// calls is cmdCalls without a testing.TB, for the benchmark's poller.
func calls(ctx context.Context, n *lab.Node, cmd string) int {
	s, err := n.Do(ctx, "INFO", "commandstats").Text()
	if err != nil {
		return 0
	}
	return parseCalls(s, cmd)
}
