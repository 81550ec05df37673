package rediskitotel

import (
	"context"
	"errors"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/sentinel"
)

// spanRecorder is an in-memory exporter's tracer provider.
func spanRecorder(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// spanNodes returns, for each span of a call, its name and the server it
// names (server.address:server.port). The spans go-redis's instrumentation
// makes for a new connection (redis.dial, and its HELLO) are left out: a
// plain go-redis client has them too, as a go-redis ClusterClient's
// replica connections have their READONLY.
func spanNodes(exp *tracetest.InMemoryExporter) []string {
	var out []string
	for _, s := range exp.GetSpans() {
		if s.Name == "redis.dial" || s.Name == "hello" || s.Name == "readonly" {
			continue
		}
		host, port := "", ""
		for _, a := range s.Attributes {
			switch a.Key {
			case "server.address":
				host = a.Value.AsString()
			case "server.port":
				port = a.Value.Emit() //nolint:staticcheck // the port is an int attribute: Emit formats any kind
			}
		}
		out = append(out, s.Name+"@"+net.JoinHostPort(host, port))
	}
	return out
}

// nodeInstrumenter's instrument is an OnNewNode function: it instruments
// each client with redisotel's tracing (and its metrics, with mp) and
// records the client's address.
type nodeInstrumenter struct {
	t     *testing.T
	tp    *sdktrace.TracerProvider
	mp    *sdkmetric.MeterProvider
	mu    sync.Mutex // instrument runs on the client's goroutines as nodes appear
	addrs []string
}

func (ni *nodeInstrumenter) instrument(rc *redis.Client) {
	ni.mu.Lock()
	ni.addrs = append(ni.addrs, rc.Options().Addr)
	ni.mu.Unlock()
	err := redisotel.InstrumentTracing(rc, redisotel.WithTracerProvider(ni.tp))
	if ni.mp != nil {
		err = errors.Join(err, redisotel.InstrumentMetrics(rc, redisotel.WithMeterProvider(ni.mp)))
	}
	if err != nil {
		ni.t.Error(err)
	}
}

// check fails the test unless the master and the replica were instrumented.
func (ni *nodeInstrumenter) check(master, replica string) {
	ni.t.Helper()
	ni.mu.Lock()
	defer ni.mu.Unlock()
	if !slices.Contains(ni.addrs, master) || !slices.Contains(ni.addrs, replica) {
		ni.t.Fatalf("instrumented %v, want the master %s and the replica %s", ni.addrs, master, replica)
	}
}

// The standard go-redis instrumentation (redisotel) works through
// OnNewNode: one span per call the caller makes (a command, a pipeline, a
// transaction), on the node that served it, and none for the client's own
// checks (ROLE, the sentinel poll, the replica prober).
func TestStandardTracingThroughOnNewNode(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	tp, exp := spanRecorder(t)
	l := lab.Sentinel(1)
	lb := lab.New(t, l)
	c, err := sentinel.NewClient(sentinel.Config{MasterName: lb.MasterName(), SentinelAddrs: lb.SentinelAddrs(),
		ReadFrom: sentinel.Replica, RefreshInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nodes := &nodeInstrumenter{t: t, tp: tp}
	c.OnNewNode(nodes.instrument)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "a read on the replica", func() bool {
		return c.Get(ctx, "k").Err() == nil && slices.ContainsFunc(c.Stats().Nodes, func(n sentinel.NodeStats) bool {
			return n.Addr == lb.Node(1).Addr() && n.Reads > 0
		})
	})
	exp.Reset()
	time.Sleep(500 * time.Millisecond) // refreshes, polls and probe rounds, none traced
	if got := spanNodes(exp); len(got) != 0 {
		t.Fatalf("spans of the client's own checks: %v", got)
	}
	master, replica := lb.Node(0).Addr(), lb.Node(1).Addr()
	if err := c.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "k").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "k")
		p.Get(ctx, "k")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "n")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := spanNodes(exp)
	want := []string{"set@" + master, "get@" + replica, "redis.pipeline get@" + replica, "redis.pipeline multi incr exec@" + master}
	if len(got) != len(want) {
		t.Fatalf("spans %v, want one per call: %v", got, want)
	}
	for i := range want {
		if !strings.HasPrefix(got[i], strings.Split(want[i], "@")[0]) || !strings.HasSuffix(got[i], "@"+strings.Split(want[i], "@")[1]) {
			t.Errorf("span %d: %s, want %s", i, got[i], want[i])
		}
	}
	nodes.check(master, replica)
}

// On a cluster client, the standard go-redis instrumentation (tracing and
// metrics) works through OnNewNode as on go-redis's ClusterClient: one
// span per call on the node that served it (the slot's master, the
// replica a read went to), pool metrics per node, and nothing for the
// client's own slot-map reads and probes.
func TestStandardInstrumentationThroughClusterOnNewNode(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	tp, exp := spanRecorder(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	l := lab.New(t, lab.Cluster(3, 1))
	c, err := cluster.NewClient(cluster.Config{Addrs: l.ClusterAddrs(), ReadFrom: cluster.Replica,
		RefreshInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	nodes := &nodeInstrumenter{t: t, tp: tp, mp: mp}
	c.OnNewNode(nodes.instrument)
	const key = "k"
	if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	master, err := l.SlotOwner(ctx, cluster.Slot(key))
	if err != nil {
		t.Fatal(err)
	}
	var replicaAddr string
	for _, n := range l.ShardNodes(master.Shard()) {
		if n != master {
			replicaAddr = n.Addr()
		}
	}
	testkit.WaitFor(t, 10*time.Second, "a read on the replica", func() bool { return c.Get(ctx, key).Err() == nil })
	exp.Reset()
	time.Sleep(500 * time.Millisecond) // slot-map reads and probe rounds, none traced
	if got := spanNodes(exp); len(got) != 0 {
		t.Fatalf("spans of the client's own work: %v", got)
	}
	if err := c.Set(ctx, key, "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, key)
		p.Get(ctx, key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := spanNodes(exp)
	want := []string{"set@" + master.Addr(), "get@" + replicaAddr, "redis.pipeline get@" + replicaAddr}
	if len(got) != len(want) {
		t.Fatalf("spans %v, want one per call: %v", got, want)
	}
	for i := range want {
		name, addr, _ := strings.Cut(want[i], "@")
		if !strings.HasPrefix(got[i], name) || !strings.HasSuffix(got[i], "@"+addr) {
			t.Errorf("span %d: %s, want %s", i, got[i], want[i])
		}
	}
	points := collect(t, reader)["db.client.connections.use_time"]
	for _, addr := range []string{master.Addr(), replicaAddr} {
		if n := sum(points, attribute.String("pool.name", addr)); n < 1 {
			t.Errorf("redisotel's use_time on %s: %v (all: %v)", addr, n, points)
		}
	}
	nodes.check(master.Addr(), replicaAddr)
}

// Through a multi-database client, a database's nodes are instrumented
// the same way, a Sentinel database's through its own OnNewNode; the
// multidb client's own health checks, however many, make no span.
func TestStandardTracingThroughMultidb(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	tp, exp := spanRecorder(t)
	plain := lab.New(t, lab.Standalone()).Node(0)
	sl := lab.New(t, lab.Sentinel(1))
	sc, err := sentinel.NewClient(sentinel.Config{MasterName: sl.MasterName(), SentinelAddrs: sl.SentinelAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	checks := &testkit.CommandCounter{}
	c, err := multidb.NewClient(multidb.Config{
		Databases: []multidb.Database{
			{Name: "main", Weight: 2, Options: plain.Options()},
			{Name: "sentinel", Weight: 1, Client: sc},
		},
		HealthCheckInterval: 20 * time.Millisecond,
		InternalHook:        checks,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.OnNewNode(func(rc *redis.Client) { _ = redisotel.InstrumentTracing(rc, redisotel.WithTracerProvider(tp)) })
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Three health checks of each database (each of several probes), each
	// of which would make spans if it went through an instrumented client.
	testkit.WaitFor(t, 20*time.Second, "three health checks of each database", func() bool {
		for _, db := range c.Stats().Databases {
			if db.ChecksPassed < 3 {
				return false
			}
		}
		return true
	})
	got := spanNodes(exp)
	if len(got) != 1 || got[0] != "set@"+plain.Addr() {
		t.Fatalf("spans %v, want one SET on %s", got, plain.Addr())
	}
	if n := checks.Counts()["ping"]; n < 3 {
		t.Errorf("the internal hook saw %d PINGs, want the health checks of the plain database (at least 3): %v", n, checks.Counts())
	}
}

// A hook added with AddHook sees the caller's commands only: the client's
// own checks (ROLE, the sentinel poll, the replica prober's PING) are not
// run through it (after one GET and a few idle seconds a hook saw
// hello=4 role=15).
func TestAddHookSeesTheCallersCommandsOnly(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	lb := lab.New(t, lab.Sentinel(1))
	c, err := sentinel.NewClient(sentinel.Config{MasterName: lb.MasterName(), SentinelAddrs: lb.SentinelAddrs(),
		ReadFrom: sentinel.ReplicaPreferred, RefreshInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := &testkit.CommandCounter{}
	c.AddHook(h)
	if err := c.Get(ctx, "missing").Err(); err != redis.Nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // refreshes, polls, probe rounds
	seen := h.Counts()
	for name := range seen {
		if name != "get" && name != "hello" {
			t.Errorf("the hook saw %s, which the caller never sent (all: %v)", name, seen)
		}
	}
	if seen["get"] != 1 {
		t.Errorf("the hook saw %d GETs, want 1 (all: %v)", seen["get"], seen)
	}
	// HELLO is go-redis's own, once per new connection of the caller's
	// traffic, as on a plain go-redis client.
	if seen["hello"] > 1 {
		t.Errorf("the hook saw %d HELLOs for one GET (all: %v)", seen["hello"], seen)
	}
}
