package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rediskit/rediskit/lab"
)

// The replica-read benchmark of issue 24: 3 shards; each master and its
// near replica +6 ms, its far replica +42 ms. Run once:
//
//	go test -v -run '^$' -bench 'BenchmarkReplicaReads' -benchtime 2000x ./cluster/
//
// Each client reads the same keys from 8 goroutines; the figures are the
// latencies of the reads and the share of them that the far replicas
// served (counted by the client's own Stats for rediskit, and by a hook
// per node, or the servers' INFO commandstats for rueidis, for the
// others). BenchmarkReplicaSwap then swaps the near and far replicas'
// latencies and measures how long until the reads leave the old near
// replicas, and until 95% are on the new near ones (100 ms buckets, at
// most 75 s):
//
//	go test -v -run '^$' -bench 'BenchmarkReplicaSwap' -benchtime 1x ./cluster/

const (
	benchNearRTT = 6 * time.Millisecond
	benchFarRTT  = 42 * time.Millisecond
)

// replicaBench is the lab and its nodes, per shard master, near and far.
type replicaBench struct {
	l      *lab.Lab
	shards [][3]*lab.Node // master, near, far
	keys   []string
}

func startReplicaBench(b *testing.B) *replicaBench {
	b.Helper()
	ctx := context.Background()
	l, err := lab.Start(ctx, lab.Cluster(3, 2))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	rb := &replicaBench{l: l}
	for _, id := range l.ShardIDs() {
		m, err := l.ShardMaster(ctx, id)
		if err != nil {
			b.Fatal(err)
		}
		var rs []*lab.Node
		for _, n := range l.ShardNodes(id) {
			if n != m {
				rs = append(rs, n)
			}
		}
		rb.shards = append(rb.shards, [3]*lab.Node{m, rs[0], rs[1]})
		m.SetLatency(benchNearRTT)
		rs[0].SetLatency(benchNearRTT)
		rs[1].SetLatency(benchFarRTT)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: l.ClusterAddrs(), MaxRetries: -1, DialerRetries: 1, DisableIdentity: true})
	defer cc.Close()
	for i := range 300 {
		k := fmt.Sprint("rb", i)
		rb.keys = append(rb.keys, k)
		if err := cc.Set(ctx, k, k, 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
	for _, sh := range rb.shards {
		if err := sh[0].Do(ctx, "WAIT", 2, 5000).Err(); err != nil {
			b.Fatal(err)
		}
	}
	return rb
}

// role is addr's part in the lab: master, near or far replica (as set
// at the start: after a swap the far one is the near one).
func (rb *replicaBench) role(addr string) string {
	for _, sh := range rb.shards {
		switch addr {
		case sh[0].Addr():
			return "master"
		case sh[1].Addr():
			return "near"
		case sh[2].Addr():
			return "far"
		}
	}
	return "?"
}

// onRole are the reads between two counts that the nodes of role (see
// role) got, and all the reads.
func (rb *replicaBench) onRole(before, after map[string]uint64, role string) (on, all uint64) {
	for addr, n := range after {
		d := n - before[addr]
		all += d
		if rb.role(addr) == role {
			on += d
		}
	}
	return on, all
}

// nodeCounter counts GETs per node address through a go-redis hook.
type nodeCounter struct {
	mu     sync.Mutex
	counts map[string]*atomic.Uint64
}

func (nc *nodeCounter) hook(addr string) redis.Hook {
	nc.mu.Lock()
	if nc.counts == nil {
		nc.counts = map[string]*atomic.Uint64{}
	}
	n := nc.counts[addr]
	if n == nil {
		n = new(atomic.Uint64)
		nc.counts[addr] = n
	}
	nc.mu.Unlock()
	return countHook{n}
}

func (nc *nodeCounter) snapshot() map[string]uint64 {
	nc.mu.Lock()
	defer nc.mu.Unlock()
	out := map[string]uint64{}
	for a, n := range nc.counts {
		out[a] = n.Load()
	}
	return out
}

type countHook struct{ n *atomic.Uint64 }

func (countHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h countHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "get" {
			h.n.Add(1)
		}
		return next(ctx, cmd)
	}
}
func (countHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// commandstatsGets are the GETs each node served, from INFO commandstats.
func (rb *replicaBench) commandstatsGets(ctx context.Context, b *testing.B) map[string]uint64 {
	out := map[string]uint64{}
	for _, sh := range rb.shards {
		for _, n := range sh {
			info, err := n.Do(ctx, "INFO", "commandstats").Text()
			if err != nil {
				b.Fatal(err)
			}
			for line := range strings.Lines(info) {
				if rest, ok := strings.CutPrefix(line, "cmdstat_get:calls="); ok {
					var calls uint64
					_, _ = fmt.Sscan(strings.SplitN(rest, ",", 2)[0], &calls)
					out[n.Addr()] = calls
				}
			}
		}
	}
	return out
}

// benchReader is one client under test.
type benchReader struct {
	name   string
	get    func(ctx context.Context, key string) error
	counts func() map[string]uint64 // GETs per node address so far
	warm   func(ctx context.Context) error
	close  func()
}

func (rb *replicaBench) readers(b *testing.B, ctx context.Context) []benchReader {
	var out []benchReader
	for _, rf := range []ReadFrom{Nearest, ReplicaPreferred} {
		c, err := NewClient(Config{Addrs: rb.l.ClusterAddrs(), ReadFrom: rf})
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, benchReader{name: "rediskit " + string(rf),
			get: func(ctx context.Context, k string) error { return c.Get(ctx, k).Err() },
			counts: func() map[string]uint64 {
				m := map[string]uint64{}
				for _, n := range c.Stats().Nodes {
					m[n.Addr] = n.Reads
				}
				return m
			},
			warm: func(ctx context.Context) error { // until the first probe round
				if err := c.Get(ctx, rb.keys[0]).Err(); err != nil {
					return err
				}
				for _, sh := range c.topo.snap.Load().masters {
					if err := sh.sel.WaitRound(ctx, 1); err != nil {
						return err
					}
				}
				return nil
			},
			close: func() { _ = c.Close() }})
	}
	for _, mode := range []string{"ReadOnly", "RouteByLatency", "RouteRandomly"} {
		o := &redis.ClusterOptions{Addrs: rb.l.ClusterAddrs(), MaxRetries: -1, DialerRetries: 1, DisableIdentity: true}
		switch mode {
		case "ReadOnly":
			o.ReadOnly = true
		case "RouteByLatency":
			o.RouteByLatency = true
		case "RouteRandomly":
			o.RouteRandomly = true
		}
		nc := &nodeCounter{}
		cc := redis.NewClusterClient(o)
		cc.OnNewNode(func(rdb *redis.Client) { rdb.AddHook(nc.hook(rdb.Options().Addr)) })
		out = append(out, benchReader{name: "go-redis " + mode,
			get:    func(ctx context.Context, k string) error { return cc.Get(ctx, k).Err() },
			counts: nc.snapshot,
			warm:   func(ctx context.Context) error { return cc.Get(ctx, rb.keys[0]).Err() },
			close:  func() { _ = cc.Close() }})
	}
	out = append(out, rb.floorReader(b, ctx))
	rue, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: rb.l.ClusterAddrs(), DisableCache: true, DisableRetry: true,
		SendToReplicas: func(cmd rueidis.Completed) bool { return cmd.IsReadOnly() }})
	if err != nil {
		b.Fatal(err)
	}
	out = append(out, benchReader{name: "rueidis SendToReplicas",
		get: func(ctx context.Context, k string) error {
			return rue.Do(ctx, rue.B().Get().Key(k).Build()).Error()
		},
		counts: func() map[string]uint64 { return rb.commandstatsGets(ctx, b) },
		warm: func(ctx context.Context) error {
			return rue.Do(ctx, rue.B().Get().Key(rb.keys[0]).Build()).Error()
		},
		close: rue.Close})
	return out
}

// floorReader is the floor the cluster clients are measured against: one
// plain go-redis client per near replica (READONLY), each key read
// straight from its shard's near replica, with no routing at all; its p99
// is what the proxies and the machine give a read of the near replica.
func (rb *replicaBench) floorReader(b *testing.B, ctx context.Context) benchReader {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: rb.l.ClusterAddrs(), MaxRetries: -1, DialerRetries: 1, DisableIdentity: true})
	defer cc.Close()
	near := map[string]*redis.Client{} // master address → client of its near replica
	var all []*redis.Client
	for _, sh := range rb.shards {
		c := redis.NewClient(&redis.Options{Addr: sh[1].Addr(), MaxRetries: -1, DisableIdentity: true,
			OnConnect: func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }})
		near[sh[0].Addr()], all = c, append(all, c)
	}
	byKey := map[string]*redis.Client{}
	for _, k := range rb.keys {
		m, err := cc.MasterForKey(ctx, k)
		if err != nil {
			b.Fatal(err)
		}
		if byKey[k] = near[m.Options().Addr]; byKey[k] == nil {
			b.Fatalf("key %s: master %s is not a lab shard's", k, m.Options().Addr)
		}
	}
	nc := &nodeCounter{}
	for _, c := range all {
		c.AddHook(nc.hook(c.Options().Addr))
	}
	return benchReader{name: "floor: go-redis straight to the near replica",
		get:    func(ctx context.Context, k string) error { return byKey[k].Get(ctx, k).Err() },
		counts: nc.snapshot,
		warm:   func(ctx context.Context) error { return byKey[rb.keys[0]].Get(ctx, rb.keys[0]).Err() },
		close: func() {
			for _, c := range all {
				_ = c.Close()
			}
		}}
}

type benchFigures struct {
	p50, p90, p99 time.Duration
	far, masters  float64 // shares of the reads
	reads         uint64
}

// BenchmarkReplicaReads reports each client's read latencies and the
// share of its reads the far replicas served, and logs a table.
func BenchmarkReplicaReads(b *testing.B) {
	rb := startReplicaBench(b)
	ctx := context.Background()
	results := map[string]benchFigures{}
	var order []string
	for _, r := range rb.readers(b, ctx) {
		if err := r.warm(ctx); err != nil {
			b.Fatal(err)
		}
		// Fill the pools first (every client alike): the figures are of
		// steady reads, not of the dials of the first ones.
		var warm sync.WaitGroup
		for g := range 8 {
			warm.Go(func() {
				for i := g; i < len(rb.keys); i += 8 {
					if err := r.get(ctx, rb.keys[i]); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		warm.Wait()
		b.Run(strings.ReplaceAll(r.name, " ", "_"), func(b *testing.B) {
			before := r.counts()
			lat := make([]time.Duration, b.N)
			var next atomic.Int64
			b.ResetTimer()
			var wg sync.WaitGroup
			for range 8 {
				wg.Go(func() {
					for {
						i := int(next.Add(1) - 1)
						if i >= b.N {
							return
						}
						start := time.Now()
						if err := r.get(ctx, rb.keys[i%len(rb.keys)]); err != nil {
							b.Error(err)
							return
						}
						lat[i] = time.Since(start)
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			after := r.counts()
			far, all := rb.onRole(before, after, "far")
			masters, _ := rb.onRole(before, after, "master")
			slices.Sort(lat)
			f := benchFigures{p50: lat[len(lat)/2], p90: lat[len(lat)*9/10], p99: lat[len(lat)*99/100], reads: all}
			if all > 0 {
				f.far, f.masters = float64(far)/float64(all), float64(masters)/float64(all)
			}
			b.ReportMetric(float64(f.p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(f.p99.Microseconds())/1000, "p99-ms")
			b.ReportMetric(f.far*100, "far-%")
			if _, ok := results[r.name]; !ok {
				order = append(order, r.name)
			}
			results[r.name] = f
		})
		r.close()
	}
	var t strings.Builder
	fmt.Fprintf(&t, "\n| client | p50 | p90 | p99 | reads on far replicas | on masters |\n|---|---|---|---|---|---|\n")
	for _, name := range order {
		f := results[name]
		fmt.Fprintf(&t, "| %s | %.1f ms | %.1f ms | %.1f ms | %.1f%% of %d | %.1f%% |\n", name,
			float64(f.p50.Microseconds())/1000, float64(f.p90.Microseconds())/1000, float64(f.p99.Microseconds())/1000, f.far*100, f.reads, f.masters*100)
	}
	b.Logf("3 shards; master and near replica +%v, far replica +%v; 8 goroutines:%s", benchNearRTT, benchFarRTT, t.String())
}

// BenchmarkReplicaSwap swaps each shard's near and far replicas'
// latencies under a steady read load and reports, in 100 ms buckets, how
// long until at most 5% of the reads land on the old near replicas (far
// now), and until 95% land on the new near ones, for rediskit Nearest and
// ReplicaPreferred and go-redis RouteByLatency. Run it with -benchtime 1x.
func BenchmarkReplicaSwap(b *testing.B) {
	ctx := context.Background()
	want := []string{"rediskit nearest", "rediskit replicaPreferred", "go-redis RouteByLatency"}
	for range b.N {
		rb := startReplicaBench(b)
		var lines []string
		for _, r := range rb.readers(b, ctx) {
			if !slices.Contains(want, r.name) {
				r.close()
				continue
			}
			if err := r.warm(ctx); err != nil {
				b.Fatal(err)
			}
			time.Sleep(5 * time.Second) // a few probe rounds, as a running client has had
			off, on := rb.swapTimes(ctx, r)
			show := func(d time.Duration, what string) string {
				if d < 0 {
					return "none within 75 s"
				}
				b.ReportMetric(d.Seconds(), strings.ReplaceAll(r.name, " ", "_")+"-"+what+"-s")
				return d.String()
			}
			lines = append(lines, fmt.Sprintf("| %s | %s | %s |", r.name, show(off, "off"), show(on, "on")))
			r.close()
			for _, sh := range rb.shards { // back for the next client
				sh[1].SetLatency(benchNearRTT)
				sh[2].SetLatency(benchFarRTT)
			}
		}
		b.Logf("\n| client | until ≤ 5%% of reads on the old near replicas | until ≥ 95%% on the new near replicas |\n|---|---|---|\n%s",
			strings.Join(lines, "\n"))
	}
}

// swapTimes runs reads from 8 goroutines, swaps the latencies, and returns
// the time until the first 100 ms bucket with at most 5% of its reads on
// the old near replicas (off), and the first with at least 95% on the new
// near replicas, the old far ones (on); -1 for none within 75 s.
func (rb *replicaBench) swapTimes(ctx context.Context, r benchReader) (off, on time.Duration) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; ; i += 8 {
				select {
				case <-stop:
					return
				default:
				}
				_ = r.get(ctx, rb.keys[i%len(rb.keys)])
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	time.Sleep(time.Second)
	for _, sh := range rb.shards {
		sh[1].SetLatency(benchFarRTT)
		sh[2].SetLatency(benchNearRTT)
	}
	swapped := time.Now()
	off, on = -1, -1
	prev := r.counts()
	for time.Since(swapped) < 75*time.Second && (off < 0 || on < 0) {
		time.Sleep(100 * time.Millisecond)
		cur := r.counts()
		onNew, all := rb.onRole(prev, cur, "far") // the far replicas are the near ones now
		onOld, _ := rb.onRole(prev, cur, "near")
		prev = cur
		took := time.Since(swapped).Round(10 * time.Millisecond)
		if all > 0 && off < 0 && float64(onOld) <= 0.05*float64(all) {
			off = took
		}
		if all > 0 && on < 0 && float64(onNew) >= 0.95*float64(all) {
			on = took
		}
	}
	return off, on
}
