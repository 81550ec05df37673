package exactlyonce_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/sentinel"
)

// A client whose writes are exactly-once: a write whose connection is
// lost is sent again with its token, and runs once.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Config{Proxy: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	c, err := sentinel.NewClient(sentinel.Config{
		Primary:     l.Node(0).Addr(),
		ExactlyOnce: &exactlyonce.Config{}, // every write that can be
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	fmt.Println(c.Incr(ctx, "orders").Val())
	l.Node(0).ResetConnections() // the client's connections are lost
	fmt.Println(c.Incr(ctx, "orders").Val())
	// Output:
	// 1
	// 2
}

// Exactly-once per call: a client with PerCall makes only the writes
// whose context asks exactly-once, and refuses, before sending, a write
// it cannot make so.
func Example_perCall() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Standalone())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	c, err := sentinel.NewClient(sentinel.Config{
		Primary:     l.Node(0).Addr(),
		ExactlyOnce: &exactlyonce.Config{PerCall: true},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	once := exactlyonce.With(ctx, true)
	fmt.Println(c.RPush(once, "payments", "p-1").Val())
	err = c.BLPop(once, time.Second, "jobs").Err()
	fmt.Println(errors.Is(err, exactlyonce.ErrUnsupported))
	// Output:
	// 1
	// true
}
