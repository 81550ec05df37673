package sentinel

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/lab"
)

// throughputClient is one client of BenchmarkAutoPipelineThroughput: a
// name and how to run one command.
type throughputClient struct {
	name string
	do   func(ctx context.Context, op, key string) error
}

// measureThroughput runs do from goroutines for d and returns commands per
// second.
func measureThroughput(ctx context.Context, goroutines int, d time.Duration, op string, do func(ctx context.Context, op, key string) error) (float64, error) {
	var n atomic.Int64
	var firstErr atomic.Value
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "bench:" + strconv.Itoa(g%64)
			for time.Now().Before(stop) {
				if err := do(ctx, op, key); err != nil && err != redis.Nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				n.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, _ := firstErr.Load().(error); err != nil {
		return 0, err
	}
	return float64(n.Load()) / d.Seconds(), nil
}

func runOp(ctx context.Context, c redis.Cmdable, op, key string) error {
	if op == "SET" {
		return c.Set(ctx, key, "v", 0).Err()
	}
	return c.Get(ctx, key).Err()
}

// BenchmarkAutoPipelineThroughput compares, in one run and on one lab
// master (no added latency), GET and SET throughput from 1, 8, 64 and 256
// goroutines: plain go-redis, go-redis's AutoPipeline on a plain client,
// rediskit's client without and with Config.AutoPipeline, rediskit's
// AutoPipeline(), and rueidis (which pipelines concurrent commands itself).
// Each round gives each client the same time in turn; the figure is the
// median of the rounds, reported as a ratio to plain go-redis.
//
//	go test -run '^$' -bench AutoPipelineThroughput -benchtime 1x -v ./sentinel/
func BenchmarkAutoPipelineThroughput(b *testing.B) {
	const rounds, turn = 3, 2 * time.Second
	ctx := context.Background()
	l := lab.New(b, lab.Sentinel(1))
	var table strings.Builder
	for _, target := range []string{"master", "replica"} {
		clients, closeAll := throughputClients(b, l, target)
		ops := []string{"GET", "SET"}
		if target == "replica" {
			ops = ops[:1] // writes go to the master whatever ReadFrom says
		}
		if table.Len() == 0 {
			fmt.Fprintf(&table, "| node | op | goroutines | %s |\n|---|---|---|%s\n", joinNames(clients), strings.Repeat("---|", len(clients)))
		}
		for _, op := range ops {
			for _, goroutines := range []int{1, 8, 64, 256} {
				perClient := make([][]float64, len(clients))
				for range rounds {
					for i, c := range clients {
						ops, err := measureThroughput(ctx, goroutines, turn, op, c.do)
						if err != nil {
							b.Fatalf("%s %s at %d goroutines: %v", c.name, op, goroutines, err)
						}
						perClient[i] = append(perClient[i], ops)
					}
				}
				var row strings.Builder
				base := median(perClient[0])
				for i := range clients {
					m := median(perClient[i])
					fmt.Fprintf(&row, " %.0f/s (%.2f×) |", m, m/base)
					b.ReportMetric(m/base, fmt.Sprintf("%s-%s-%s-%d-vs-go-redis", target, strings.ReplaceAll(clients[i].name, " ", "_"), op, goroutines))
				}
				fmt.Fprintf(&table, "| %s | %s | %d |%s\n", target, op, goroutines, row.String())
			}
		}
		closeAll()
	}
	b.Logf("median of %d rounds of %v per client\n%s", rounds, turn, table.String())
}

// throughputClients are the clients of BenchmarkAutoPipelineThroughput
// for target: "master" (the go-redis clients and rueidis on the master,
// rediskit reading from the master) or "replica" (them on the replica,
// rediskit with ReadFrom ReplicaPreferred and the round-robin selector, so
// every read is on that replica).
func throughputClients(b *testing.B, l *lab.Lab, target string) ([]throughputClient, func()) {
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
	rueDo := func(ctx context.Context, op, key string) error {
		var err error
		if op == "SET" {
			err = rue.Do(ctx, rue.B().Set().Key(key).Value("v").Build()).Error()
		} else {
			err = rue.Do(ctx, rue.B().Get().Key(key).Build()).Error()
		}
		if rueidis.IsRedisNil(err) {
			return nil
		}
		return err
	}
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
	clients := []throughputClient{
		{"go-redis", func(ctx context.Context, op, key string) error { return runOp(ctx, plain, op, key) }},
		{"go-redis AutoPipeline", func(ctx context.Context, op, key string) error { return runOp(ctx, goAP, op, key) }},
		{"rediskit", func(ctx context.Context, op, key string) error { return runOp(ctx, ours, op, key) }},
		{"rediskit Config.AutoPipeline", func(ctx context.Context, op, key string) error { return runOp(ctx, oursAuto, op, key) }},
		{"rediskit AutoPipeline()", func(ctx context.Context, op, key string) error { return runOp(ctx, oursAP, op, key) }},
		{"rueidis", rueDo},
	}
	return clients, func() {
		for _, c := range closers {
			c()
		}
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

func joinNames(cs []throughputClient) string {
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.name
	}
	return strings.Join(names, " | ")
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkAutoPipeline64 is BenchmarkAutoPipelineThroughput's master row
// at 64 goroutines alone, for comparing builds (the cost of the data
// path's reply bounds): GET and SET through plain go-redis, rediskit with
// Config.AutoPipeline and rediskit's AutoPipeline(), 5 rounds of 1 s per
// client in turn; it reports each one's median commands per second and
// its ratio to plain go-redis.
//
//	go test -run '^$' -bench 'AutoPipeline64$' -benchtime 1x ./sentinel/
func BenchmarkAutoPipeline64(b *testing.B) {
	const rounds, turn, goroutines = 5, time.Second, 64
	ctx := context.Background()
	l := lab.New(b, lab.Sentinel(1))
	all, closeAll := throughputClients(b, l, "master")
	defer closeAll()
	var clients []throughputClient
	for _, c := range all {
		switch c.name {
		case "go-redis", "rediskit Config.AutoPipeline", "rediskit AutoPipeline()":
			clients = append(clients, c)
		}
	}
	for b.Loop() {
		for _, op := range []string{"GET", "SET"} {
			perClient := make([][]float64, len(clients))
			for range rounds {
				for i, c := range clients {
					ops, err := measureThroughput(ctx, goroutines, turn, op, c.do)
					if err != nil {
						b.Fatalf("%s %s: %v", c.name, op, err)
					}
					perClient[i] = append(perClient[i], ops)
				}
			}
			base := median(perClient[0])
			for i, c := range clients {
				name := strings.ReplaceAll(c.name, " ", "_")
				b.ReportMetric(median(perClient[i]), fmt.Sprintf("%s-%s-ops/s", name, op))
				if i > 0 {
					b.ReportMetric(median(perClient[i])/base, fmt.Sprintf("%s-%s-vs-go-redis", name, op))
				}
			}
		}
	}
}
