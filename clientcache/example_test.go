package clientcache_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/sentinel"
)

// A client with a cache of at most 32 MiB; reads whose context comes from
// WithTTL are served from it, and a write by anyone ends the key's entry.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Standalone())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	c, err := sentinel.NewClient(sentinel.Config{
		Primary: l.Node(0).Addr(),
		Cache:   &clientcache.Config{MaxBytes: 32 << 20},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	cached := clientcache.WithTTL(ctx, time.Minute)
	_ = c.Set(ctx, "greeting", "hello", 0).Err()
	fmt.Println(c.Get(cached, "greeting").Val()) // from the server, then cached
	fmt.Println(c.Get(cached, "greeting").Val()) // from the cache, once tracking is up

	// Another client's write: the server invalidates the entry.
	other := l.Node(0).NewClient()
	defer other.Close()
	_ = other.Set(ctx, "greeting", "bonjour", 0).Err()
	for c.Get(cached, "greeting").Val() != "bonjour" && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	fmt.Println(c.Get(cached, "greeting").Val())
	// Output:
	// hello
	// hello
	// bonjour
}

// With MaxStale, a cached read whose server cannot be reached is answered
// from the cache, marked: the value is set, and the error is a
// *StaleError saying how old it is and why the read failed.
func Example_maxStale() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Standalone())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	c, err := sentinel.NewClient(sentinel.Config{
		Primary: l.Node(0).Addr(),
		Cache:   &clientcache.Config{MaxStale: time.Minute},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	cached := clientcache.WithTTL(ctx, time.Minute)
	_ = c.Set(ctx, "price:42", "9.99", 0).Err()
	for c.Stats().Cache.Hits == 0 && ctx.Err() == nil { // cached once tracking is up
		_ = c.Get(cached, "price:42").Err()
		time.Sleep(time.Millisecond)
	}

	_ = l.Node(0).Kill() // the server is gone
	var v string
	for ctx.Err() == nil {
		// Hits until the client sees the server gone (its tracking
		// connection lost), then the read fails and falls back.
		read, done := context.WithTimeout(cached, 500*time.Millisecond)
		v, err = c.Get(read, "price:42").Result()
		done()
		if err != nil {
			break
		}
	}
	var stale *clientcache.StaleError
	fmt.Println(v, errors.As(err, &stale))
	// Output:
	// 9.99 true
}
