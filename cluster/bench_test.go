package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// benchClusterClients starts a 3-shard lab cluster and returns our client
// and a go-redis ClusterClient of it (no retries either), both with the
// map read and the keys written.
func benchClusterClients(tb testing.TB) (*Client, *redis.ClusterClient) {
	tb.Helper()
	return benchClusterClientsWith(tb, Config{})
}

// benchClusterClientsWith is benchClusterClients with our client's Config
// (its Addrs are the lab's).
func benchClusterClientsWith(tb testing.TB, cfg Config) (*Client, *redis.ClusterClient) {
	tb.Helper()
	ctx := context.Background()
	l, err := lab.Start(ctx, lab.Cluster(3, 0))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	cfg.Addrs = l.ClusterAddrs()
	ours, err := NewClient(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = ours.Close() })
	plain := redis.NewClusterClient(&redis.ClusterOptions{Addrs: l.ClusterAddrs(), MaxRetries: -1, DialerRetries: 1, DisableIdentity: true})
	tb.Cleanup(func() { _ = plain.Close() })
	for _, c := range []redis.UniversalClient{ours, plain} {
		for i := range 100 {
			if err := c.Set(ctx, fmt.Sprint("bench", i), "value", 0).Err(); err != nil {
				tb.Fatal(err)
			}
		}
	}
	return ours, plain
}

var benchOps = map[string]benchcmp.Op{
	"GET": func(ctx context.Context, c redis.UniversalClient) error { return c.Get(ctx, "bench7").Err() },
	"SET": func(ctx context.Context, c redis.UniversalClient) error {
		return c.Set(ctx, "bench7", "value", 0).Err()
	},
	// A pipeline of 100 commands over the three shards.
	"pipeline-100": func(ctx context.Context, c redis.UniversalClient) error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range 100 {
				p.Get(ctx, benchKeys[i])
			}
			return nil
		})
		return err
	},
}

var benchKeys = func() (k [100]string) {
	for i := range k {
		k[i] = fmt.Sprint("bench", i)
	}
	return k
}()

// BenchmarkRouting runs GET, SET and a 100-command pipeline in parallel
// through our client and through go-redis's ClusterClient, against the
// same lab cluster.
func BenchmarkRouting(b *testing.B) {
	ours, plain := benchClusterClients(b)
	for _, op := range []string{"GET", "SET", "pipeline-100"} {
		benchcmp.Parallel(b, op, ours, plain, benchOps[op])
	}
}

// BenchmarkRoutingRatio interleaves our client and go-redis's ClusterClient
// in the same 8 goroutines and reports the throughput ratio (go-redis time
// / rediskit time; 1 means equal).
func BenchmarkRoutingRatio(b *testing.B) {
	ours, plain := benchClusterClients(b)
	for _, op := range []string{"GET", "SET", "pipeline-100"} {
		b.Run(op, func(b *testing.B) {
			benchcmp.Interleaved(b, ours, plain, benchOps[op])
		})
	}
}

// BenchmarkAutoPipelineLone measures what Config.AutoPipeline costs a
// caller alone on a cluster: one goroutine, alternating a rediskit client
// with AutoPipeline and go-redis's ClusterClient, operation by operation
// (the ratio is go-redis time / rediskit time), as sentinel's benchmark of
// the same name does on one master.
//
//	go test -run '^$' -bench AutoPipelineLone -benchtime 20000x -count 3 ./cluster/
func BenchmarkAutoPipelineLone(b *testing.B) {
	ours, plain := benchClusterClientsWith(b, Config{AutoPipeline: true})
	for _, op := range []string{"GET", "SET"} {
		b.Run(op, func(b *testing.B) {
			benchcmp.InterleavedWith(b, 1, ours, plain, benchOps[op])
		})
	}
}

// TestAllocationsMatchGoRedis: routing a command through the map costs at
// most one allocation more than go-redis's ClusterClient.
func TestAllocationsMatchGoRedis(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	ours, plain := benchClusterClients(t)
	for _, op := range []string{"GET", "SET"} {
		benchcmp.AllocsAtMost(t, ctx, op, ours, plain, 1, benchOps[op])
	}
}
