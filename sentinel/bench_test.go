package sentinel

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/lab"
)

// benchClients starts a lab and returns our client and a plain go-redis
// client to the same master (no retries either), both connected.
func benchClients(b *testing.B) (*Client, *redis.Client) {
	b.Helper()
	return benchClientsWith(b, Config{})
}

// benchClientsWith is benchClients with our client's Config (its
// MasterName and SentinelAddrs are the lab's).
func benchClientsWith(b *testing.B, cfg Config) (*Client, *redis.Client) {
	b.Helper()
	return benchLabClients(b, lab.Sentinel(1), func(l *lab.Lab) Config {
		cfg.MasterName, cfg.SentinelAddrs = l.MasterName(), l.SentinelAddrs()
		return cfg
	})
}

// benchStandaloneClients is benchClientsWith for a standalone primary
// (Config.Primary, no Sentinel) and a plain go-redis client to it.
func benchStandaloneClients(b *testing.B) (*Client, *redis.Client) {
	b.Helper()
	return benchLabClients(b, lab.Config{}, func(l *lab.Lab) Config { return Config{Primary: l.Node(0).Addr()} })
}

// benchLabClients starts the lab labCfg describes, and returns our client
// (with the Config cfg makes for the lab) and a plain go-redis client to
// node0, both connected.
func benchLabClients(b *testing.B, labCfg lab.Config, cfg func(*lab.Lab) Config) (*Client, *redis.Client) {
	b.Helper()
	ctx := context.Background()
	l, err := lab.Start(ctx, labCfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = l.Close() })
	ours, err := NewClient(cfg(l))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ours.Close() })
	plain := redis.NewClient(&redis.Options{Addr: l.Node(0).Addr(), MaxRetries: -1, DialerRetries: 1, DisableIdentity: true})
	b.Cleanup(func() { _ = plain.Close() })
	for _, c := range []redis.UniversalClient{ours, plain} {
		if err := c.Set(ctx, "bench", "value", 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
	return ours, plain
}

var benchOps = map[string]benchcmp.Op{
	"GET":      func(ctx context.Context, c redis.UniversalClient) error { return c.Get(ctx, "bench").Err() },
	"SET":      func(ctx context.Context, c redis.UniversalClient) error { return c.Set(ctx, "bench", "value", 0).Err() },
	"GET-miss": benchcmp.GetMiss,
}

// BenchmarkRouting runs GET (of a key that exists, and of one that does
// not) and SET in parallel through our client (to the master) and through
// a plain go-redis client to the same master.
func BenchmarkRouting(b *testing.B) {
	ours, plain := benchClients(b)
	for _, op := range []string{"GET", "GET-miss", "SET"} {
		benchcmp.Parallel(b, op, ours, plain, benchOps[op])
	}
}

// BenchmarkRoutingRatio interleaves our client and plain go-redis in the
// same goroutines (8 of them, alternating per operation) so both see the
// same machine, and reports each one's time per operation and the
// throughput ratio (go-redis time / rediskit time; 1 means equal).
func BenchmarkRoutingRatio(b *testing.B) {
	ours, plain := benchClients(b)
	for _, op := range []string{"GET", "GET-miss", "SET"} {
		b.Run(op, func(b *testing.B) {
			benchcmp.Interleaved(b, ours, plain, benchOps[op])
		})
	}
}

// BenchmarkStandaloneRoutingRatio is BenchmarkRoutingRatio for a
// standalone primary (Config.Primary) against a plain go-redis client to
// the same server.
//
//	go test -run '^$' -bench StandaloneRoutingRatio -benchtime 20000x -count 3 ./sentinel/
func BenchmarkStandaloneRoutingRatio(b *testing.B) {
	ours, plain := benchStandaloneClients(b)
	for _, op := range []string{"GET", "GET-miss", "SET"} {
		b.Run(op, func(b *testing.B) {
			benchcmp.Interleaved(b, ours, plain, benchOps[op])
		})
	}
}

// BenchmarkAutoPipelineLone measures what Config.AutoPipeline costs a
// caller alone: one goroutine, alternating a rediskit client with
// AutoPipeline and a plain go-redis client to the same master, operation
// by operation (the ratio is go-redis time / rediskit time).
//
//	go test -run '^$' -bench AutoPipelineLone -benchtime 20000x -count 3 ./sentinel/
func BenchmarkAutoPipelineLone(b *testing.B) {
	ours, plain := benchClientsWith(b, Config{AutoPipeline: true})
	for _, op := range []string{"GET", "SET"} {
		b.Run(op, func(b *testing.B) {
			benchcmp.InterleavedWith(b, 1, ours, plain, benchOps[op])
		})
	}
}

// BenchmarkDurableWrite measures what durable mode costs: SET acknowledged
// by the master alone, and SET followed by WAIT for both replicas (same
// round trip), on a lab with a master and two replicas, each node 6 ms
// away (so replication crosses a link, as in production; the lab proxy's
// delays are only accurate to about a millisecond).
func BenchmarkDurableWrite(b *testing.B) {
	ctx := context.Background()
	cfg := lab.Sentinel(2)
	cfg.Nodes = []lab.NodeConfig{{Latency: 6 * time.Millisecond}, {Latency: 6 * time.Millisecond}, {Latency: 6 * time.Millisecond}}
	l, err := lab.Start(ctx, cfg)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	c, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs()})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	for deadline := time.Now().Add(5 * time.Second); len(c.Stats().Replicas) < 2; {
		if time.Now().After(deadline) {
			b.Fatal("replicas not seen")
		}
		_ = c.Ping(ctx)
		time.Sleep(20 * time.Millisecond)
	}
	for _, mode := range []struct {
		name    string
		durable bool
	}{{"acknowledged", false}, {"durable", true}} {
		b.Run(mode.name, func(b *testing.B) {
			wctx := WithDurable(ctx, mode.durable)
			b.ReportAllocs()
			for b.Loop() {
				if err := c.Set(wctx, "k", "v", 0).Err(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
