package sentinel

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/lab"
)

// BenchmarkExactlyOnceCost measures what exactly-once writes cost beside
// plain ones, on one master on loopback: SET, INCR and RPUSH at 1, 8 and
// 64 goroutines, without and with auto-pipelining, 3 rounds of 1 s per
// client in turn; ops/s ratios to the plain client, CPU per command,
// allocations, p50 and p99 latency (medians of the rounds).
//
//	go test -run '^$' -bench 'ExactlyOnceCost' -benchtime 1x -v ./sentinel/
//
// With REDISKIT_BENCH_SERVER_CPU=n the master is moved to CPU n, so that,
// run under taskset -c 0 (the client, and everything the lab starts, on
// CPU 0), the server has a core of its own as it has in production:
//
//	REDISKIT_BENCH_SERVER_CPU=1 taskset -c 0 go test -run '^$' -bench 'ExactlyOnceCost' -benchtime 1x -v ./sentinel/
func BenchmarkExactlyOnceCost(b *testing.B) {
	l := lab.New(b, lab.Sentinel(0))
	ctx := context.Background()
	placement := "client and server sharing the machine's CPUs"
	if cpu := os.Getenv("REDISKIT_BENCH_SERVER_CPU"); cpu != "" {
		n, err := strconv.Atoi(cpu)
		if err != nil {
			b.Fatalf("REDISKIT_BENCH_SERVER_CPU=%q: %v", cpu, err)
		}
		if err := pinToCPU(l.Node(0).PID(), n); err != nil {
			b.Fatal(err)
		}
		placement = fmt.Sprintf("the master alone on CPU %d, the client where taskset put it", n)
	}
	mk := func(once, auto bool) *Client {
		cfg := Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), PoolSize: 64, AutoPipeline: auto}
		if once {
			cfg.ExactlyOnce = &exactlyonce.Config{}
		}
		c, err := NewClient(cfg)
		if err != nil {
			b.Fatal(err)
		}
		if err := c.Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		return c
	}
	// Each op on keys of its own (an INCR of SET's "v" fails), looked up
	// without allocating.
	opKeys := map[string]map[string]string{"INCR": {}, "RPUSH": {}}
	for op, m := range opKeys {
		for _, k := range apBenchKeys {
			m[k] = k + ":" + op
		}
	}
	var clients []benchcmp.Client
	for _, v := range []struct {
		name       string
		once, auto bool
	}{{"plain", false, false}, {"exactly-once", true, false}, {"plain auto-pipelined", false, true}, {"exactly-once auto-pipelined", true, true}} {
		c := mk(v.once, v.auto)
		defer c.Close()
		clients = append(clients, benchcmp.Client{Name: v.name, Do: func(ctx context.Context, op, key string) error {
			if m := opKeys[op]; m != nil {
				key = m[key]
			}
			return benchcmp.RunOp(ctx, c, op, key)
		}})
	}
	for b.Loop() {
		table := benchcmp.Comparison{
			Rounds: 3, Turn: time.Second, Ops: []string{"SET", "INCR", "RPUSH"}, Goroutines: []int{1, 8, 64},
			Keys: apBenchKeys, Clients: clients, Tag: "once", Base: "plain", Versus: []string{"plain auto-pipelined"},
			Latency: true,
		}.Run(b)
		b.Logf("%s, %s, medians of 3 rounds of 1 s per client\n%s", l.ServerVersion(), placement, table)
		// RPUSH grows its lists: start each run afresh.
		if err := l.Node(0).NewClient().FlushAll(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
}
