package sentinel_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/sentinel"
)

// A client for a Sentinel deployment (here a local lab: a master, one
// replica, three sentinels) that reads from the replica and writes to the
// master.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Sentinel(1))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	c, err := sentinel.NewClient(sentinel.Config{
		MasterName:    l.MasterName(),
		SentinelAddrs: l.SentinelAddrs(),
		ReadFrom:      sentinel.ReplicaPreferred,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	// A write goes to the master; durable waits until the replica has it.
	if err := c.Set(sentinel.WithDurable(ctx, true), "greeting", "hello", 0).Err(); err != nil {
		fmt.Println(err)
		return
	}
	// A read may go to the replica; read-your-own-write flows pin the master.
	v, err := c.Get(sentinel.WithReadFrom(ctx, sentinel.Master), "greeting").Result()
	fmt.Println(v, err)
	fmt.Println(c.Master() == l.Node(0).Addr())
	// Output:
	// hello <nil>
	// true
}

// Handling a write whose outcome is unknown after a failover.
func ExampleMasterChangedError() {
	var c *sentinel.Client // from NewClient
	ctx := context.Background()
	run := func() error { return c.LPush(ctx, "queue:emails", "job:981").Err() }

	err := run()
	var mce *sentinel.MasterChangedError
	if errors.As(err, &mce) && mce.MayHaveExecuted {
		// The push may have run on the old master (and survived on the new
		// one) or not: look before pushing again. The look is a read of our
		// own write, so it must go to the master (a replica may not have the
		// job yet). LPOS answers nil (redis.Nil) when the job is not there.
		_, lerr := c.LPos(sentinel.WithReadFrom(ctx, sentinel.Master), "queue:emails", "job:981", redis.LPosArgs{}).Result()
		switch {
		case errors.Is(lerr, redis.Nil):
			err = run() // not there: it did not run (or was lost), run it again
		case lerr == nil:
			err = nil // there: it ran, do not push it twice
		default:
			err = lerr // cannot tell: the decision waits
		}
	}
	_ = err
}

// A staged trace of the way to the master, for a person to read.
func ExampleDiagnose() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Config{Replicas: 1, Sentinels: 1, Password: "s3cret"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()

	d, err := sentinel.Diagnose(ctx, sentinel.Config{
		MasterName:    l.MasterName(),
		SentinelAddrs: l.SentinelAddrs(),
		Password:      "wrong",
	})
	for _, s := range d.Steps {
		fmt.Println(s.Stage, s.Err != nil)
	}
	var se *sentinel.StageError
	fmt.Println(errors.As(err, &se), se.Stage, se.Server == l.Node(0).Addr())
	// Output:
	// SENTINEL false
	// TCP false
	// AUTH true
	// true AUTH true
}
