package guard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/guard/httpguard"
	"github.com/rediskit/rediskit/lab"
)

// ClientConfig for a client that fails fast, and the key prefix every
// component applies. String never shows the password.
func ExampleOpen() {
	s := guard.ClientConfig{Addr: "127.0.0.1:6379", Password: "s3cret", KeyPrefix: "shop", PoolSize: 20}
	g, err := guard.Open(s) // does not connect yet
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	fmt.Println(s)
	fmt.Println(g.Key("price", "sku-1"))
	// Output:
	// guard.ClientConfig{Addr: "127.0.0.1:6379", Username: "", Password: "xxxxx", DB: 0, TLS: false, KeyPrefix: "shop", PoolSize: 20, DialTimeout: 0s, ReadTimeout: 0s, WriteTimeout: 0s, CallLimit: 0s}
	// shop:price:sku-1
}

// ClientConfig from a connection URL (package redisurl); the key prefix is
// set separately, since a URL does not carry one.
func ExampleClientConfigFromURL() {
	s, err := guard.ClientConfigFromURL("redis://app:s3cret@10.0.0.7:6380/2?readTimeout=250ms")
	if err != nil {
		fmt.Println(err)
		return
	}
	s.KeyPrefix = "shop"
	fmt.Println(s)
	_, err = guard.ClientConfigFromURL("redis+sentinel://10.0.0.1,10.0.0.2/mymaster")
	fmt.Println(err != nil)
	// Output:
	// guard.ClientConfig{Addr: "10.0.0.7:6380", Username: "app", Password: "xxxxx", DB: 2, TLS: false, KeyPrefix: "shop", PoolSize: 0, DialTimeout: 0s, ReadTimeout: 250ms, WriteTimeout: 0s, CallLimit: 0s}
	// true
}

// A guarded call: at most CallLimit, never retried; a missing key is
// redis.Nil, a failure a *RedisError.
func ExampleGuard_Call() {
	ctx := context.Background()
	l, g, err := startRedis(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	defer g.Close()

	var v string
	err = g.Call(ctx, "greeting get", func(ctx context.Context, c redis.Cmdable) error {
		var err error
		v, err = c.Get(ctx, g.Key("greeting")).Result()
		return err
	})
	fmt.Printf("%q %v\n", v, err)

	_ = l.Node(0).Kill()
	err = g.Call(ctx, "greeting get", func(ctx context.Context, c redis.Cmdable) error {
		return c.Get(ctx, g.Key("greeting")).Err()
	})
	var re *guard.RedisError
	fmt.Println(errors.Is(err, guard.ErrUnavailable), errors.As(err, &re) && re.Kind == guard.FailureUnreachable)
	// Output:
	// "" redis: nil
	// true true
}

// A fail-open read-through cache: the first lookup loads, the second is
// served by Redis.
func ExampleCache() {
	ctx := context.Background()
	l, g, err := startRedis(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	defer g.Close()

	prices, err := guard.NewCache(g, guard.CacheConfig[int]{
		Name: "price",
		Load: func(ctx context.Context, sku string) (int, error) {
			return 1250, nil // SELECT price FROM products WHERE sku = $1
		},
		TTL: time.Minute,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		r, err := prices.Lookup(ctx, "sku-1")
		fmt.Println(r.Value, r.Source, err)
	}
	fmt.Println(prices.Key("sku-1"))
	// Output:
	// 1250 loader <nil>
	// 1250 cache <nil>
	// shop:price:sku-1
}

// A fail-closed limiter: 5 attempts a minute, the sixth gets 429 with
// Retry-After.
func ExampleLimiter() {
	ctx := context.Background()
	l, g, err := startRedis(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	defer g.Close()

	logins, err := guard.NewLimiter(g, guard.LimiterConfig{Name: "login", Limit: 5, Window: time.Minute})
	if err != nil {
		fmt.Println(err)
		return
	}
	for i := 1; i <= 6; i++ {
		a, err := logins.Allow(ctx, "alice")
		fmt.Printf("attempt %d: remaining %d, status %d, Retry-After %q\n", i, a.Remaining, httpguard.StatusCode(err), httpguard.RetryAfter(err))
	}
	// Output:
	// attempt 1: remaining 4, status 200, Retry-After ""
	// attempt 2: remaining 3, status 200, Retry-After ""
	// attempt 3: remaining 2, status 200, Retry-After ""
	// attempt 4: remaining 1, status 200, Retry-After ""
	// attempt 5: remaining 0, status 200, Retry-After ""
	// attempt 6: remaining 0, status 429, Retry-After "60"
}

// An admission gate: one payment attempt per order; the double click gets
// 409.
func ExampleGate() {
	ctx := context.Background()
	l, g, err := startRedis(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	defer g.Close()

	payments, err := guard.NewGate(g, guard.GateConfig{Name: "payment", TTL: 30 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 2 {
		err := payments.Admit(ctx, "order-1")
		w := httptest.NewRecorder()
		httpguard.WriteError(w, err)
		fmt.Printf("%d %q\n", httpguard.StatusCode(err), w.Body.String())
	}
	// Output:
	// 200 ""
	// 409 "payment: an attempt is already in progress\n"
}

// A write probe tells a primary from a replica that answers PING.
func ExampleChecker() {
	ctx := context.Background()
	l, err := lab.Start(ctx, lab.Replicated(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	for _, n := range l.Nodes() {
		g, err := guard.Open(guard.ClientConfig{Addr: n.Addr(), KeyPrefix: "shop"})
		if err != nil {
			fmt.Println(err)
			return
		}
		c, err := guard.NewChecker(g, guard.HealthConfig{WriteProbe: true})
		if err != nil {
			fmt.Println(err)
			return
		}
		r, err := c.Check(ctx)
		fmt.Println(n.Name(), r.State, "ping ok:", r.PingOK, err)
		_ = g.Close()
	}
	// Output:
	// node0 writable ping ok: true <nil>
	// node1 read-only ping ok: true <nil>
}

// startRedis starts a standalone lab Redis and opens a Guard on it with
// the default settings and the key prefix "shop".
func startRedis(ctx context.Context) (*lab.Lab, *guard.Guard, error) {
	l, err := lab.Start(ctx, lab.Standalone())
	if err != nil {
		return nil, nil, err
	}
	g, err := guard.Open(guard.ClientConfig{Addr: l.Node(0).Addr(), KeyPrefix: "shop"})
	if err != nil {
		_ = l.Close()
		return nil, nil, err
	}
	return l, g, nil
}
