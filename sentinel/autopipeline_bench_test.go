package sentinel

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/lab"
)

// apBenchKeys are the keys the throughput benchmarks' goroutines cycle
// over.
var apBenchKeys = func() []string {
	k := make([]string, 64)
	for i := range k {
		k[i] = "bench:" + strconv.Itoa(i)
	}
	return k
}()

// BenchmarkAutoPipelineThroughput compares, in one run and on one lab
// master (no added latency), GET and SET throughput from 1, 8, 64 and 256
// goroutines: plain go-redis, go-redis's AutoPipeline on a plain client,
// rediskit's client without and with Config.AutoPipeline, rediskit's
// AutoPipeline(), rueidis (which pipelines concurrent commands itself)
// and benchcmp.Stream, the ceiling of rueidis's shape (one connection
// streaming commands, no work of its own); then GET on the replica
// (rediskit reading with ReplicaPreferred). Each round gives each client the same time in turn;
// the figures are the medians of the rounds: throughput, its ratio to
// plain go-redis, to rueidis and to go-redis's AutoPipeline, and the
// process's CPU time and allocations per command (the client's own cost:
// the servers are other processes).
//
// One sub-benchmark per node and count: -bench 'AutoPipelineThroughput/master/8$'
// runs one row.
//
//	go test -run '^$' -bench AutoPipelineThroughput -benchtime 1x -v ./sentinel/
func BenchmarkAutoPipelineThroughput(b *testing.B) {
	l := lab.New(b, lab.Sentinel(1))
	for _, target := range []string{"master", "replica"} {
		b.Run(target, func(b *testing.B) {
			clients, closeAll := throughputClients(b, l, target)
			defer closeAll()
			ops := []string{"GET", "SET"}
			if target == "replica" {
				ops = ops[:1] // writes go to the master whatever ReadFrom says
			}
			for _, goroutines := range []int{1, 8, 64, 256} {
				b.Run(strconv.Itoa(goroutines), func(b *testing.B) {
					for b.Loop() {
						table := benchcmp.Comparison{
							Rounds: 3, Turn: 2 * time.Second, Ops: ops, Goroutines: []int{goroutines},
							Keys: apBenchKeys, Clients: clients, Tag: target,
							Base: "go-redis", Versus: []string{"rueidis", "go-redis AutoPipeline", "ceiling"},
						}.Run(b)
						b.Logf("%s, %s: medians of 3 rounds of 2 s per client\n%s", target, l.ServerVersion(), table)
					}
				})
			}
		})
	}
}

// throughputClients are the clients of BenchmarkAutoPipelineThroughput
// for target: "master" (the go-redis clients and rueidis on the master,
// rediskit reading from the master) or "replica" (them on the replica,
// rediskit with ReadFrom ReplicaPreferred and the round-robin selector, so
// every read is on that replica).
func throughputClients(b *testing.B, l *lab.Lab, target string) ([]benchcmp.Client, func()) {
	b.Helper()
	ctx := context.Background()
	node, readFrom := l.Node(0), Master
	if target == "replica" {
		node, readFrom = l.Node(1), ReplicaPreferred
	}
	var closers []func()
	opt := node.Options()
	redisopt.Inner(opt)
	opt.PoolSize = 64
	plain := redis.NewClient(opt)
	apClient := redis.NewClient(opt)
	goAP, err := apClient.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	closers = append(closers, func() { _ = plain.Close(); _ = goAP.Close(); _ = apClient.Close() })
	cfg := func(auto bool) Config {
		return Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), PoolSize: 64, AutoPipeline: auto,
			ReadFrom: readFrom, ReplicaSelector: NewRoundRobinSelector()}
	}
	ours, err := NewClient(cfg(false))
	if err != nil {
		b.Fatal(err)
	}
	oursAuto, err := NewClient(cfg(true))
	if err != nil {
		b.Fatal(err)
	}
	closers = append(closers, func() { _ = ours.Close(); _ = oursAuto.Close() })
	oursAP, err := ours.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	// rueidis pipelines concurrent commands on its own (the benchmark's
	// only use of it; no client-side cache).
	rue, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{opt.Addr}, DisableCache: true, DisableRetry: true})
	if err != nil {
		b.Fatal(err)
	}
	closers = append(closers, rue.Close)
	// The ceiling of rueidis's shape on this machine: a pipelining
	// connection that does no work of its own.
	ceiling, err := benchcmp.DialStream(ctx, opt.Addr)
	if err != nil {
		b.Fatal(err)
	}
	closers = append(closers, func() { _ = ceiling.Close() })
	for _, c := range []*Client{ours, oursAuto} {
		if err := c.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		if target == "replica" {
			if err := waitReplicaRead(ctx, c, node); err != nil {
				b.Fatal(err)
			}
		}
	}
	clients := []benchcmp.Client{
		{Name: "go-redis", Do: func(ctx context.Context, op, key string) error { return benchcmp.RunOp(ctx, plain, op, key) }},
		{Name: "go-redis AutoPipeline", Do: func(ctx context.Context, op, key string) error { return benchcmp.RunOp(ctx, goAP, op, key) }},
		{Name: "rediskit", Do: func(ctx context.Context, op, key string) error { return benchcmp.RunOp(ctx, ours, op, key) }},
		{Name: "rediskit Config.AutoPipeline", Do: func(ctx context.Context, op, key string) error { return benchcmp.RunOp(ctx, oursAuto, op, key) }},
		{Name: "rediskit AutoPipeline()", Do: func(ctx context.Context, op, key string) error { return benchcmp.RunOp(ctx, oursAP, op, key) }},
		{Name: "rueidis", Do: rueidisDo(rue)},
		{Name: "ceiling", Do: ceiling.Do},
	}
	return clients, func() {
		for _, c := range closers {
			c()
		}
	}
}

// rueidisDo runs GET or SET through rueidis, a missing key's nil reply
// as redis.Nil.
func rueidisDo(rue rueidis.Client) func(ctx context.Context, op, key string) error {
	return func(ctx context.Context, op, key string) error {
		var err error
		if op == "SET" {
			err = rue.Do(ctx, rue.B().Set().Key(key).Value("v").Build()).Error()
		} else {
			err = rue.Do(ctx, rue.B().Get().Key(key).Build()).Error()
		}
		if rueidis.IsRedisNil(err) {
			return redis.Nil
		}
		return err
	}
}

// waitReplicaRead waits until c routes reads to the replica node.
func waitReplicaRead(ctx context.Context, c *Client, n *lab.Node) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		_ = c.Get(ctx, "bench:0").Err()
		for _, st := range c.Stats().Nodes {
			if st.Addr == n.Addr() && st.Reads > 0 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("no read reached the replica %s", n.Addr())
}

// BenchmarkAutoPipeline64 is BenchmarkAutoPipelineThroughput's master row
// at 64 goroutines alone, for comparing builds: GET and SET through plain
// go-redis, rediskit with Config.AutoPipeline, rediskit's AutoPipeline()
// and rueidis, 5 rounds of 1 s per client in turn.
//
//	go test -run '^$' -bench 'AutoPipeline64$' -benchtime 1x ./sentinel/
func BenchmarkAutoPipeline64(b *testing.B) {
	l := lab.New(b, lab.Sentinel(1))
	all, closeAll := throughputClients(b, l, "master")
	defer closeAll()
	var clients []benchcmp.Client
	for _, c := range all {
		switch c.Name {
		case "go-redis", "rediskit Config.AutoPipeline", "rediskit AutoPipeline()", "rueidis":
			clients = append(clients, c)
		}
	}
	for b.Loop() {
		table := benchcmp.Comparison{
			Rounds: 5, Turn: time.Second, Ops: []string{"GET", "SET"}, Goroutines: []int{64},
			Keys: apBenchKeys, Clients: clients, Tag: "master", Base: "go-redis", Versus: []string{"rueidis"},
		}.Run(b)
		b.Logf("medians of 5 rounds of 1 s per client\n%s", table)
	}
}
