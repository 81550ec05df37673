package rediskitotel

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/hashring"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// newMetrics returns Metrics on an SDK provider with a manual reader.
func newMetrics(t *testing.T) (*Metrics, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	m, err := New(mp)
	if err != nil {
		t.Fatal(err)
	}
	return m, reader
}

// point is one data point: its attributes and value.
type point struct {
	attrs attribute.Set
	value float64
	count uint64 // histograms
}

// collect reads every data point, by metric name.
func collect(t *testing.T, r *sdkmetric.ManualReader) map[string][]point {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string][]point{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrs: p.Attributes, value: float64(p.Value)})
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrs: p.Attributes, value: float64(p.Value)})
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrs: p.Attributes, value: p.Value})
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[m.Name] = append(out[m.Name], point{attrs: p.Attributes, value: p.Sum, count: p.Count})
				}
			}
		}
	}
	return out
}

// sum adds the values (or, for histograms, counts) of the points whose
// attributes include every given one.
func sum(points []point, want ...attribute.KeyValue) float64 {
	var total float64
	for _, p := range points {
		if !p.has(want...) {
			continue
		}
		if p.count > 0 {
			total += float64(p.count)
		} else {
			total += p.value
		}
	}
	return total
}

// sumWant is one row of a table of expected sums: a metric, the attributes
// its points must have, and the total of those points.
type sumWant struct {
	name  string
	attrs []attribute.KeyValue
	want  float64
}

// checkSums reports every row of wants whose sum differs from got's.
func checkSums(t *testing.T, got map[string][]point, wants []sumWant) {
	t.Helper()
	for _, w := range wants {
		if v := sum(got[w.name], w.attrs...); v != w.want {
			t.Errorf("%s%v = %v, want %v (points %v)", w.name, w.attrs, v, w.want, got[w.name])
		}
	}
}

// has reports whether the point's attributes include every given one.
func (p point) has(want ...attribute.KeyValue) bool {
	for _, kv := range want {
		if v, ok := p.attrs.Value(kv.Key); !ok || v != kv.Value {
			return false
		}
	}
	return true
}

// A lab failover shows as one master change with both addresses, a
// failover, discoveries with durations, and the skipped dead sentinel.
func TestSentinelFailoverMetrics(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	m, reader := newMetrics(t)
	l := lab.New(t, lab.Sentinel(1))
	if err := l.Sentinels()[0].Kill(); err != nil {
		t.Fatal(err)
	}
	c, err := sentinel.NewClient(sentinel.Config{
		MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
		Observer: m.SentinelObserver(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	old := c.Master()
	res, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the client to follow", func() bool { return c.Master() == res.NewMaster.Addr() })

	got := collect(t, reader)
	name := AttrMasterName.String(l.MasterName())
	if n := sum(got["rediskit.sentinel.master.changes"], name, AttrOldMaster.String(old), AttrNewMaster.String(res.NewMaster.Addr())); n != 1 {
		t.Fatalf("master changes old=%s new=%s: %v (all: %v)", old, res.NewMaster.Addr(), n, got["rediskit.sentinel.master.changes"])
	}
	if n := sum(got["rediskit.sentinel.failovers"], name); n < 1 {
		t.Fatalf("failovers: %v", n)
	}
	if n := sum(got["rediskit.sentinel.discovery.duration"], name, AttrOutcome.String("found")); n < 1 {
		t.Fatalf("discoveries recorded: %v", n)
	}
	if n := sum(got["rediskit.sentinel.sentinels.skipped"], name, AttrReason.String(string(sentinel.SkipDown))); n < 1 {
		t.Fatalf("skips of the dead sentinel: %v", got["rediskit.sentinel.sentinels.skipped"])
	}
}

// A guard fallback while Redis is down, limiter and gate outcomes, and the
// health state, read from the components' own counters.
func TestGuardMetrics(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	m, reader := newMetrics(t)
	l := lab.New(t, lab.Config{Proxy: true})
	g, err := guard.Open(guard.ClientConfig{Addr: l.Node(0).Addr(), KeyPrefix: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	cache, err := guard.NewCache(g, guard.CacheConfig[int]{Name: "price", LoadTimeout: 100 * time.Millisecond,
		Load: func(ctx context.Context, id string) (int, error) {
			if id == "sku-slow" { // past LoadTimeout: refused
				<-ctx.Done()
				return 0, ctx.Err()
			}
			return 1250, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	limiter, err := guard.NewLimiter(g, guard.LimiterConfig{Name: "login", Limit: 1, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	gate, err := guard.NewGate(g, guard.GateConfig{Name: "pay"})
	if err != nil {
		t.Fatal(err)
	}
	checker, err := guard.NewChecker(g, guard.HealthConfig{WriteProbe: true})
	if err != nil {
		t.Fatal(err)
	}
	mon, err := guard.NewMonitor(checker, guard.MonitorConfig{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer mon.Close()
	for _, reg := range []func() error{
		func() error { _, err := m.RegisterCache("price", cache.Stats); return err },
		func() error { _, err := m.RegisterLimiter("login", limiter); return err },
		func() error { _, err := m.RegisterGate("pay", gate); return err },
		func() error { _, err := m.RegisterHealth("shop", mon); return err },
	} {
		if err := reg(); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 5*time.Second, "the first health check", func() bool { return mon.Last().State != guard.StateUnknown })

	_, _ = cache.Lookup(ctx, "sku-1")    // miss, loaded
	_, _ = cache.Lookup(ctx, "sku-1")    // hit
	_, _ = cache.Lookup(ctx, "sku-slow") // miss, refused
	_, _ = limiter.Allow(ctx, "alice")
	_, _ = limiter.Allow(ctx, "alice") // limited
	_ = gate.Admit(ctx, "order-1")
	_ = gate.Admit(ctx, "order-1")    // busy
	l.Node(0).Proxy().Suspend()       // Redis down
	_, _ = cache.Lookup(ctx, "sku-2") // read error, loaded: a fallback
	_, _ = limiter.Allow(ctx, "bob")  // unavailable
	if err := l.Node(0).Proxy().Resume(); err != nil {
		t.Fatal(err)
	}

	got := collect(t, reader)
	price, login, pay := AttrName.String("price"), AttrName.String("login"), AttrName.String("pay")
	for _, tc := range []struct {
		metric string
		attrs  []attribute.KeyValue
		want   float64
	}{
		{"rediskit.guard.cache.reads", []attribute.KeyValue{price, AttrResult.String("hit")}, 1},
		{"rediskit.guard.cache.reads", []attribute.KeyValue{price, AttrResult.String("miss")}, 2},
		{"rediskit.guard.cache.reads", []attribute.KeyValue{price, AttrResult.String("error")}, 1},
		{"rediskit.guard.cache.reads", []attribute.KeyValue{price, AttrResult.String("canceled")}, 0},
		{"rediskit.guard.cache.fills", []attribute.KeyValue{price, AttrResult.String("loaded")}, 2},
		{"rediskit.guard.cache.fills", []attribute.KeyValue{price, AttrResult.String("refused")}, 1},
		{"rediskit.guard.cache.fills", []attribute.KeyValue{price, AttrResult.String("shared")}, 0},
		{"rediskit.guard.cache.fallbacks", []attribute.KeyValue{price}, 1},
		{"rediskit.guard.limiter.attempts", []attribute.KeyValue{login, AttrResult.String("allowed")}, 1},
		{"rediskit.guard.limiter.attempts", []attribute.KeyValue{login, AttrResult.String("limited")}, 1},
		{"rediskit.guard.limiter.attempts", []attribute.KeyValue{login, AttrResult.String("unavailable")}, 1},
		{"rediskit.guard.admission.attempts", []attribute.KeyValue{pay, AttrResult.String("admitted")}, 1},
		{"rediskit.guard.admission.attempts", []attribute.KeyValue{pay, AttrResult.String("busy")}, 1},
		{"rediskit.guard.redis.failures", []attribute.KeyValue{login}, 1},
		{"rediskit.guard.health.state", []attribute.KeyValue{AttrState.String("writable")}, 1},
		{"rediskit.guard.health.state", []attribute.KeyValue{AttrState.String("timeout")}, 0},
	} {
		if n := sum(got[tc.metric], tc.attrs...); n != tc.want {
			t.Errorf("%s %v = %v, want %v", tc.metric, tc.attrs, n, tc.want)
		}
	}
	if n := sum(got["rediskit.guard.redis.failures"], price); n < 1 {
		t.Errorf("cache Redis failures = %v, want at least 1", n)
	}
	// Each of the 4 lookups is one read; the 3 that did not hit are one
	// fill each.
	if n := sum(got["rediskit.guard.cache.reads"], price); n != 4 {
		t.Errorf("cache reads add up to %v, want the 4 lookups: %v", n, got["rediskit.guard.cache.reads"])
	}
	if n := sum(got["rediskit.guard.cache.fills"], price); n != 3 {
		t.Errorf("cache fills add up to %v, want the 3 lookups that did not hit: %v", n, got["rediskit.guard.cache.fills"])
	}
	if len(got["rediskit.guard.health.age"]) != 1 {
		t.Errorf("health age: %v", got["rediskit.guard.health.age"])
	}
}

// The cache series partition the lookups, whatever the counts: two
// concurrent lookups of a missing key (Misses 2, one Loaded, one Shared)
// are two reads and two fills, and every CacheStats count reaches exactly
// one series.
func TestCacheSeriesPartitionLookups(t *testing.T) {
	for _, tc := range []struct {
		name    string
		stats   guard.CacheStats
		lookups float64
	}{
		{"two concurrent lookups of a missing key", guard.CacheStats{Misses: 2, Loaded: 1, Shared: 1, Loads: 1}, 2},
		{"every outcome", guard.CacheStats{
			Hits: 3, Misses: 5, ReadFailures: 4, ReadsCanceled: 1,
			Loaded: 3, Shared: 2, Refusals: 1, LoadFailures: 2, LoadsCanceled: 1,
			RedisFailures: 6, Loads: 7, Fallbacks: 2,
		}, 13},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, reader := newMetrics(t)
			if _, err := m.RegisterCache("c", func() guard.CacheStats { return tc.stats }); err != nil {
				t.Fatal(err)
			}
			got := collect(t, reader)
			c := AttrName.String("c")
			if n := sum(got["rediskit.guard.cache.reads"], c); n != tc.lookups {
				t.Errorf("reads add up to %v, want the %v lookups: %v", n, tc.lookups, got["rediskit.guard.cache.reads"])
			}
			if n, want := sum(got["rediskit.guard.cache.fills"], c), float64(tc.stats.Misses+tc.stats.ReadFailures); n != want {
				t.Errorf("fills add up to %v, want the %v lookups that did not hit: %v", n, want, got["rediskit.guard.cache.fills"])
			}
			if n := sum(got["rediskit.guard.cache.fallbacks"], c); n != float64(tc.stats.Fallbacks) {
				t.Errorf("fallbacks %v, want %d", n, tc.stats.Fallbacks)
			}
			for name := range got {
				if name == "rediskit.guard.cache.lookups" {
					t.Errorf("the overlapping series %s is still reported", name)
				}
			}
		})
	}
}

// A node's share of the ring, and an ownership expiry and restore while
// Redis is paused past the deadline.
func TestHashringMetrics(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	m, reader := newMetrics(t)
	l := lab.New(t, lab.Standalone())
	client := l.Node(0).NewClient()
	defer client.Close()
	n, err := hashring.NewNode(client, "ring", hashring.Config{
		Hostname: "metrics", HeartbeatInterval: 200 * time.Millisecond,
		OwnershipDeadline: time.Second, Expiry: 1500 * time.Millisecond,
		RetryWait: 50 * time.Millisecond, MaxRetryWait: 200 * time.Millisecond,
		Observer: m.RingObserver(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Stop(ctx) }()
	if _, err := m.RegisterRingNode(n); err != nil {
		t.Fatal(err)
	}
	got := collect(t, reader)
	if s := sum(got["rediskit.hashring.share"]); s != 1 {
		t.Fatalf("share alone = %v, want 1", s)
	}
	if s := sum(got["rediskit.hashring.nodes"]); s != 1 {
		t.Fatalf("nodes = %v, want 1", s)
	}

	if err := l.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the deadline to pass", func() bool { return n.NodeCount() == 0 })
	time.Sleep(300 * time.Millisecond)
	if err := l.Node(0).Resume(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "ownership to come back", func() bool { return n.NodeCount() == 1 })
	testkit.WaitFor(t, 5*time.Second, "the restore to be counted", func() bool {
		got = collect(t, reader)
		return sum(got["rediskit.hashring.ownership.restores"]) == 1
	})
	if e := sum(got["rediskit.hashring.ownership.expiries"]); e != 1 {
		t.Fatalf("expiries = %v, want 1", e)
	}
}

func TestNewNeedsAProvider(t *testing.T) {
	if _, err := New(nil); err == nil {
		t.Fatal("New(nil) accepted")
	}
}

// A breaker trip: the active database dies, the client switches to the
// next by weight. Traffic trips it: the first health checks are done
// before the kill and the next are an hour away (a health check that
// failed first would trip the breaker with no traffic failure counted).
func TestMultiDBMetrics(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	m, reader := newMetrics(t)
	primary, standby := lab.New(t, lab.Standalone()), lab.New(t, lab.Standalone())
	c, err := multidb.NewClient(multidb.Config{
		Databases: []multidb.Database{
			{Name: "primary", Weight: 10, Options: &redis.Options{Addr: primary.Node(0).Addr()}},
			{Name: "standby", Weight: 5, Options: &redis.Options{Addr: standby.Node(0).Addr()}},
		},
		HealthCheckInterval: time.Hour,
		Observer:            m.MultiDBObserver(nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := m.RegisterMultiDB(c); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the first health checks", func() bool {
		st := c.Stats()
		return len(st.Databases) == 2 && st.Databases[0].Checked && st.Databases[1].Checked
	})
	if err := primary.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the switch to the standby", func() bool {
		_ = c.Set(ctx, "k", "v", 0).Err()
		return c.Active() == "standby"
	})
	var got map[string][]point
	testkit.WaitFor(t, 5*time.Second, "the switch to be counted", func() bool {
		got = collect(t, reader)
		return sum(got["rediskit.multidb.switches"], AttrSwitchReason.String("automatic"), AttrOldDatabase.String("primary"), AttrNewDatabase.String("standby")) == 1
	})
	db := func(name string) attribute.KeyValue { return AttrDatabase.String(name) }
	for _, tc := range []struct {
		metric string
		attrs  []attribute.KeyValue
		want   float64
	}{
		{"rediskit.multidb.active", []attribute.KeyValue{db("standby")}, 1},
		{"rediskit.multidb.active", []attribute.KeyValue{db("primary")}, 0},
		{"rediskit.multidb.breaker.state", []attribute.KeyValue{db("primary"), AttrState.String("open")}, 1},
		{"rediskit.multidb.breaker.state", []attribute.KeyValue{db("standby"), AttrState.String("closed")}, 1},
		{"rediskit.multidb.breaker.transitions", []attribute.KeyValue{db("primary"), AttrToState.String("open")}, 1},
	} {
		if n := sum(got[tc.metric], tc.attrs...); n != tc.want {
			t.Errorf("%s %v = %v, want %v", tc.metric, tc.attrs, n, tc.want)
		}
	}
	if n := sum(got["rediskit.multidb.failures"], db("primary")); n < 1 {
		t.Errorf("failures counted on primary: %v", n)
	}
}

// An election change: the RTT table, the elected flags and the reads per
// node follow a swap of the replicas' latencies.
func TestReplicaElectionMetrics(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	m, reader := newMetrics(t)
	near, far := 4*time.Millisecond, 40*time.Millisecond
	l := lab.New(t, lab.Config{Replicas: 2, Sentinels: 3,
		Nodes: []lab.NodeConfig{{Latency: near}, {Latency: near}, {Latency: far}}})
	sel, err := replica.NewSelector(replica.Config{LatencyWindow: -1, ProbeInterval: 200 * time.Millisecond, Observer: m.ReplicaObserver(nil)})
	if err != nil {
		t.Fatal(err)
	}
	c, err := sentinel.NewClient(sentinel.Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
		ReadFrom: sentinel.ReplicaPreferred, ReplicaSelector: sel, RefreshInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := m.RegisterSentinel(c); err != nil {
		t.Fatal(err)
	}
	a, b := l.Node(1).Addr(), l.Node(2).Addr()
	elected := func(addr string) bool {
		for _, row := range sel.Table() {
			if row.Addr == addr {
				return row.Elected
			}
		}
		return false
	}
	read := func() {
		for range 20 {
			if err := c.Get(ctx, "k").Err(); err != nil && !errors.Is(err, redis.Nil) {
				t.Fatal(err)
			}
		}
	}
	testkit.WaitFor(t, 10*time.Second, "node1 elected", func() bool { read(); return elected(a) })
	read()

	host := func(addr string) []attribute.KeyValue { return addrAttrs(addr) }
	got := collect(t, reader)
	if sum(got["rediskit.replica.elected"], host(a)...) != 1 || sum(got["rediskit.replica.elected"], host(b)...) != 0 {
		t.Fatalf("elected: %v", got["rediskit.replica.elected"])
	}
	rttA, rttB := sum(got["rediskit.replica.rtt"], host(a)...), sum(got["rediskit.replica.rtt"], host(b)...)
	if rttA <= 0 || rttB <= rttA {
		t.Fatalf("rtt near %v, far %v", rttA, rttB)
	}
	if r := sum(got["rediskit.sentinel.node.reads"], host(a)...); r < 20 {
		t.Fatalf("reads on the near replica: %v", r)
	}
	before := sum(got["rediskit.replica.elections"])

	l.Node(1).SetLatency(far)
	l.Node(2).SetLatency(near)
	testkit.WaitFor(t, 10*time.Second, "node2 elected", func() bool { read(); return elected(b) && !elected(a) })
	got = collect(t, reader)
	if sum(got["rediskit.replica.elections"]) <= before {
		t.Fatalf("elections did not grow past %v: %v", before, got["rediskit.replica.elections"])
	}
	if sum(got["rediskit.replica.elected"], host(b)...) != 1 {
		t.Fatalf("elected after the swap: %v", got["rediskit.replica.elected"])
	}
}

// Writes held for a master cut off show as a hold, and its length when it
// ended without a new master.
func TestSentinelIsolationMetrics(t *testing.T) {
	m, reader := newMetrics(t)
	observe := m.SentinelObserver(nil)
	observe(sentinel.Event{Kind: sentinel.EventMasterIsolated, MasterName: "mymaster", Master: "10.0.0.1:6379", Reason: "cut off"})
	observe(sentinel.Event{Kind: sentinel.EventIsolationEnded, MasterName: "mymaster", Master: "10.0.0.1:6379", Duration: 250 * time.Millisecond})
	got := collect(t, reader)
	name := AttrMasterName.String("mymaster")
	if n := sum(got["rediskit.sentinel.isolations"], name); n != 1 {
		t.Fatalf("isolations: %v", n)
	}
	if n := sum(got["rediskit.sentinel.isolation.held"], name); n != 1 {
		t.Fatalf("isolation holds recorded: %v (%v)", n, got["rediskit.sentinel.isolation.held"])
	}
}

// TestBatchMetrics: with Config.AutoPipeline, the round trips and the
// commands they carried are reported per node (sentinel) and per database
// (multidb), and concurrent callers share round trips.
func TestBatchMetrics(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	m, reader := newMetrics(t)
	l := lab.New(t, lab.Sentinel(1))
	sc, err := sentinel.NewClient(sentinel.Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), AutoPipeline: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	standalone := lab.New(t, lab.Standalone())
	mc, err := multidb.NewClient(multidb.Config{
		Databases:           []multidb.Database{{Name: "only", Weight: 1, Options: &redis.Options{Addr: standalone.Node(0).Addr()}}},
		HealthCheckInterval: time.Hour,
		AutoPipeline:        true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if _, err := m.RegisterSentinel(sc); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RegisterMultiDB(mc); err != nil {
		t.Fatal(err)
	}
	const goroutines, each = 32, 50
	for _, c := range []redis.Cmdable{sc, mc} {
		errs := make(chan error, goroutines)
		for range goroutines {
			go func() {
				var err error
				for range each {
					if err = c.Incr(ctx, "n").Err(); err != nil {
						break
					}
				}
				errs <- err
			}()
		}
		for range goroutines {
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
		}
	}
	got := collect(t, reader)
	for _, tc := range []struct {
		name, batches, batched string
		attrs                  []attribute.KeyValue
	}{
		{"sentinel master", "rediskit.sentinel.node.batches", "rediskit.sentinel.node.batched", addrAttrs(l.Node(0).Addr())},
		{"multidb database", "rediskit.multidb.batches", "rediskit.multidb.batched", []attribute.KeyValue{AttrDatabase.String("only")}},
	} {
		batches, batched := sum(got[tc.batches], tc.attrs...), sum(got[tc.batched], tc.attrs...)
		t.Logf("%s: %v commands in %v round trips", tc.name, batched, batches)
		if batched != goroutines*each || batches <= 0 || batches*2 > batched {
			t.Errorf("%s: %s %v, %s %v; want %d commands in at most half as many round trips",
				tc.name, tc.batched, batched, tc.batches, batches, goroutines*each)
		}
	}
}
