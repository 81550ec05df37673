package guard_test

import (
	"context"
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/lab"
)

// BenchmarkDeadRedis measures how long one GET takes to fail against a
// dead Redis, with the guard's settings (one attempt, 100 ms timeouts, a
// 150 ms call limit) and with go-redis's defaults (3 retries with
// backoff, 5 dial attempts 100 ms apart), in the same run:
//
//   - refused: nothing listens (a stopped server). Every operation uses a
//     new client, so that go-redis's dial-error short cut (after PoolSize
//     failed dials it stops dialing for a while) does not hide the cost.
//   - blackhole: the client has a warm pool of 4 connections when the
//     network goes dark (connections accepted, nothing ever answered: a
//     partition, a stalled host). This is where retries cost: each one
//     takes another pooled connection and waits out another read timeout.
//     (On a brand-new connection go-redis does not retry: a timeout during
//     the connection's HELLO is final.)
//
// go-redis defaults against a black hole take about 20 s per operation
// (4 attempts of a 5 s read timeout); run it with -benchtime 1x.
func BenchmarkDeadRedis(b *testing.B) {
	l := lab.New(b, lab.Config{Proxy: true})
	hole := l.Node(0)
	refused := deadAddr(b)

	type client struct {
		raw   *redis.Client
		get   func(context.Context) error
		close func()
	}
	guardClient := func(addr string) func() client {
		return func() client {
			g, err := guard.Open(guard.ClientConfig{Addr: addr, KeyPrefix: "bench"})
			if err != nil {
				b.Fatal(err)
			}
			return client{raw: g.Client().(*redis.Client),
				get: func(ctx context.Context) error {
					return g.Call(ctx, "get", func(ctx context.Context, c redis.Cmdable) error { return c.Get(ctx, "k").Err() })
				},
				close: func() { _ = g.Close() }}
		}
	}
	goredisClient := func(opt redis.Options) func() client {
		return func() client {
			o := opt
			c := redis.NewClient(&o)
			return client{raw: c, get: func(ctx context.Context) error { return c.Get(ctx, "k").Err() }, close: func() { _ = c.Close() }}
		}
	}
	ms100 := 100 * time.Millisecond
	for _, tc := range []struct {
		name      string
		newClient func() client
		warm      bool
	}{
		{"refused/guard", guardClient(refused), false},
		{"refused/go-redis-defaults", goredisClient(redis.Options{Addr: refused}), false},
		{"blackhole/guard", guardClient(hole.Addr()), true},
		{"blackhole/go-redis-defaults-100ms-timeouts", goredisClient(redis.Options{Addr: hole.Addr(),
			DialTimeout: ms100, ReadTimeout: ms100, WriteTimeout: ms100}), true},
		{"blackhole/go-redis-defaults", goredisClient(redis.Options{Addr: hole.Addr()}), true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			ctx := context.Background()
			for range b.N {
				b.StopTimer()
				c := tc.newClient()
				if tc.warm {
					hole.Restore()
					warmPool(b, ctx, c.raw, 4)
					hole.BlackHole()
				}
				b.StartTimer()
				if err := c.get(ctx); err == nil {
					b.Fatal("a GET against a dead Redis succeeded")
				}
				b.StopTimer()
				c.close()
			}
		})
	}
	hole.Restore()
}

// warmPool leaves n idle connections in c's pool.
func warmPool(b *testing.B, ctx context.Context, c *redis.Client, n int) {
	conns := make([]*redis.Conn, n)
	for i := range conns {
		conns[i] = c.Conn()
		if err := conns[i].Ping(ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
	for _, cn := range conns {
		_ = cn.Close()
	}
	if idle := c.PoolStats().IdleConns; idle < uint32(n) {
		b.Fatalf("warm pool has %d idle connections, want %d", idle, n)
	}
}

// BenchmarkLimiterVsRawEvalSha compares Limiter.Allow with a raw EVALSHA
// of the same script on the same client, interleaved in one loop so that
// both see the same machine. It reports each side's time per operation
// and the throughput ratio (raw time / limiter time; 1 means no
// overhead).
func BenchmarkLimiterVsRawEvalSha(b *testing.B) {
	ctx := context.Background()
	l := lab.New(b, lab.Standalone())
	s := guard.ClientConfig{Addr: l.Node(0).Addr(), KeyPrefix: "bench"}
	g, err := guard.Open(s)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	lim, err := guard.NewLimiter(g, guard.LimiterConfig{Name: "login", Limit: math.MaxInt64 / 2, Window: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	c := g.Client()
	window := "3600000"
	raw := func(key string) error {
		return c.EvalSha(ctx, guard.LimitScriptSHA, []string{key}, window).Err()
	}
	if _, err := lim.Allow(ctx, "warm-up"); err != nil { // loads the script
		b.Fatal(err)
	}

	report := func(b *testing.B, limNS, rawNS, n int64) {
		b.ReportMetric(float64(limNS)/float64(n), "limiter-ns/op")
		b.ReportMetric(float64(rawNS)/float64(n), "raw-ns/op")
		b.ReportMetric(float64(rawNS)/float64(limNS), "throughput-ratio")
	}
	b.Run("sequential", func(b *testing.B) {
		var limNS, rawNS, n int64
		for b.Loop() {
			// Alternate the order, so neither side always runs second.
			t0 := time.Now()
			if n%2 == 0 {
				allow(b, lim, "alice")
				t1 := time.Now()
				rawCall(b, raw, "bench:raw:alice")
				limNS += int64(t1.Sub(t0))
				rawNS += int64(time.Since(t1))
			} else {
				rawCall(b, raw, "bench:raw:alice")
				t1 := time.Now()
				allow(b, lim, "alice")
				rawNS += int64(t1.Sub(t0))
				limNS += int64(time.Since(t1))
			}
			n++
		}
		report(b, limNS, rawNS, n)
	})
	b.Run("parallel", func(b *testing.B) {
		var limNS, rawNS, n atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			for i := 0; pb.Next(); i++ {
				t0 := time.Now()
				if i%2 == 0 {
					allow(b, lim, "bob")
					t1 := time.Now()
					rawCall(b, raw, "bench:raw:bob")
					limNS.Add(int64(t1.Sub(t0)))
					rawNS.Add(int64(time.Since(t1)))
				} else {
					rawCall(b, raw, "bench:raw:bob")
					t1 := time.Now()
					allow(b, lim, "bob")
					rawNS.Add(int64(t1.Sub(t0)))
					limNS.Add(int64(time.Since(t1)))
				}
				n.Add(1)
			}
		})
		report(b, limNS.Load(), rawNS.Load(), n.Load())
	})
}

func allow(b *testing.B, lim *guard.Limiter, id string) {
	if _, err := lim.Allow(context.Background(), id); err != nil {
		b.Error(err)
	}
}

func rawCall(b *testing.B, raw func(string) error, key string) {
	if err := raw(key); err != nil {
		b.Error(err)
	}
}
