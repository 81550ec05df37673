package benchcmp

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Op is one operation under benchmark.
type Op func(context.Context, redis.UniversalClient) error

// GetMiss is a GET of a key that does not exist: a cache miss. Its reply
// is redis.Nil, which a routing layer must tell from a failure at no
// extra cost.
func GetMiss(ctx context.Context, c redis.UniversalClient) error {
	if err := c.Get(ctx, "rediskit:bench:missing").Err(); err != redis.Nil {
		return fmt.Errorf("GET of a missing key: %v, want redis.Nil", err)
	}
	return nil
}

// AllocsAtMost fails t when do through ours allocates more than extra
// objects a call above do through plain (testing.AllocsPerRun, after one
// call through each, so that both have connected). what names the
// operation in the failure.
func AllocsAtMost(t *testing.T, ctx context.Context, what string, ours, plain redis.UniversalClient, extra float64, do Op) {
	t.Helper()
	run := func(c redis.UniversalClient) func() {
		return func() {
			if err := do(ctx, c); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
	}
	run(ours)()
	run(plain)()
	// testing.AllocsPerRun counts every allocation in the process while it
	// runs: another goroutine's (a client's periodic checks, the lab's
	// proxies, the race detector's) land on whichever client is being
	// measured, more of them the busier the machine. They can only add, so
	// the least of several short measurements is the calls' own count.
	least := func(c redis.UniversalClient) float64 {
		best := math.Inf(1)
		for range 5 {
			best = min(best, testing.AllocsPerRun(400, run(c)))
		}
		return best
	}
	if o, p := least(ours), least(plain); o > p+extra {
		t.Errorf("%s: %v allocations a call, go-redis %v", what, o, p)
	}
}

// Parallel runs do through each client with b.RunParallel, as the
// sub-benchmarks name/rediskit and name/go-redis, reporting allocations.
func Parallel(b *testing.B, name string, ours, plain redis.UniversalClient, do Op) {
	for _, target := range []struct {
		name   string
		client redis.UniversalClient
	}{{"rediskit", ours}, {"go-redis", plain}} {
		b.Run(name+"/"+target.name, func(b *testing.B) {
			ctx := context.Background()
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

// Workers is how many goroutines Interleaved runs.
const Workers = 8

// Interleaved runs do b.N times on each client from Workers goroutines,
// alternating which client goes first, and reports each one's time per
// operation ("rediskit-ns/op", "go-redis-ns/op") and the throughput ratio
// (go-redis time / rediskit time; 1 means equal, below 1 rediskit is
// slower).
func Interleaved(b *testing.B, ours, plain redis.UniversalClient, do Op) {
	b.Helper()
	InterleavedWith(b, Workers, ours, plain, do)
}

// InterleavedWith is Interleaved from workers goroutines (1: a lone
// caller, as an application with no concurrency).
func InterleavedWith(b *testing.B, workers int, ours, plain redis.UniversalClient, do Op) {
	b.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var oursTotal, plainTotal time.Duration
	var wg sync.WaitGroup
	per := b.N/workers + 1
	b.ResetTimer()
	for range workers {
		wg.Go(func() {
			var o, p time.Duration
			for i := range per {
				first, second := ours, plain
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
}
