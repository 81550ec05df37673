package multidb

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

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

var benchOps = map[string]func(ctx context.Context, c redis.UniversalClient) error{
	"GET": func(ctx context.Context, c redis.UniversalClient) error { return c.Get(ctx, "bench").Err() },
	"SET": func(ctx context.Context, c redis.UniversalClient) error { return c.Set(ctx, "bench", "value", 0).Err() },
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

var benchOrder = []string{"GET", "SET", "pipeline10"}

// BenchmarkRouting runs each operation in parallel through our client (to
// the active database) and through a plain go-redis client to the same
// server, for ns/op and allocs/op.
func BenchmarkRouting(b *testing.B) {
	ours, plain := benchClients(b)
	for _, op := range benchOrder {
		for _, target := range []struct {
			name   string
			client redis.UniversalClient
		}{{"rediskit", ours}, {"go-redis", plain}} {
			b.Run(op+"/"+target.name, func(b *testing.B) {
				ctx := context.Background()
				do := benchOps[op]
				b.ReportAllocs()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						if err := do(ctx, target.client); err != nil {
							b.Error(err)
							return
						}
					}
				})
			})
		}
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
			ctx := context.Background()
			do := benchOps[op]
			const workers = 8
			var mu sync.Mutex
			var oursTotal, plainTotal time.Duration
			var wg sync.WaitGroup
			per := b.N/workers + 1
			b.ResetTimer()
			for range workers {
				wg.Go(func() {
					var o, p time.Duration
					for i := range per {
						first, second := redis.UniversalClient(ours), redis.UniversalClient(plain)
						if i%2 == 1 {
							first, second = second, first
						}
						t0 := time.Now()
						err1 := do(ctx, first)
						t1 := time.Now()
						err2 := do(ctx, second)
						t2 := time.Now()
						if err1 != nil || err2 != nil {
							b.Error(err1, err2)
							return
						}
						if i%2 == 0 {
							o, p = o+t1.Sub(t0), p+t2.Sub(t1)
						} else {
							p, o = p+t1.Sub(t0), o+t2.Sub(t1)
						}
					}
					mu.Lock()
					oursTotal, plainTotal = oursTotal+o, plainTotal+p
					mu.Unlock()
				})
			}
			wg.Wait()
			n := float64(per * workers)
			b.ReportMetric(float64(oursTotal.Nanoseconds())/n, "rediskit-ns/op")
			b.ReportMetric(float64(plainTotal.Nanoseconds())/n, "go-redis-ns/op")
			b.ReportMetric(float64(plainTotal)/float64(oursTotal), "throughput-ratio")
		})
	}
}
