package multidb

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/lab"
)

// benchClients starts two standalone servers and returns our client over
// them and a plain go-redis client to the active one (no retries either),
// both connected.
func benchClients(b *testing.B) (*Client, *redis.Client) {
	b.Helper()
	ctx := context.Background()
	var nodes []*lab.Node
	for range 2 {
		l, err := lab.Start(ctx, lab.Standalone())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = l.Close() })
		nodes = append(nodes, l.Node(0))
	}
	ours, err := NewClient(Config{Databases: []Database{
		{Name: "primary", Weight: 10, Options: nodes[0].Options()},
		{Name: "standby", Weight: 5, Options: nodes[1].Options()},
	}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = ours.Close() })
	plain := redis.NewClient(clientOptions(nodes[0].Options()))
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
	"pipeline10": func(ctx context.Context, c redis.UniversalClient) error {
		_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for range 10 {
				p.Get(ctx, "bench")
			}
			return nil
		})
		return err
	},
}

var benchOrder = []string{"GET", "GET-miss", "SET", "pipeline10"}

// BenchmarkRouting runs each operation in parallel through our client (to
// the active database) and through a plain go-redis client to the same
// server, for ns/op and allocs/op.
func BenchmarkRouting(b *testing.B) {
	ours, plain := benchClients(b)
	for _, op := range benchOrder {
		benchcmp.Parallel(b, op, ours, plain, benchOps[op])
	}
}

// BenchmarkRoutingRatio interleaves our client and plain go-redis in the
// same goroutines (8 of them, alternating which goes first) so both see
// the same machine, and reports each one's time per operation and the
// throughput ratio (go-redis time / rediskit time; 1 means equal).
func BenchmarkRoutingRatio(b *testing.B) {
	ours, plain := benchClients(b)
	for _, op := range benchOrder {
		b.Run(op, func(b *testing.B) {
			benchcmp.Interleaved(b, ours, plain, benchOps[op])
		})
	}
}
