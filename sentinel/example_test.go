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

// Durable writes that also wait for the append-only files: the master and
// every counted replica run appendonly yes, and the server has WAITAOF
// (Redis 7.2 or newer, Valkey). Where it does not, the write is refused
// before it is sent.
func ExampleConfig_durableAOF() {
	var cfg sentinel.Config // MasterName, SentinelAddrs, ...
	cfg.Durable = true      // every write confirmed by the replicas (WAIT) ...
	cfg.DurableAOF = true   // ... and fsynced to the AOFs (WAITAOF 1 N)
	c, err := sentinel.NewClient(cfg)
	if err != nil {
		return
	}
	defer c.Close()

	ctx := context.Background()
	err = c.Incr(ctx, "orders:next").Err()
	var nde *sentinel.NotDurableError
	switch {
	case errors.Is(err, sentinel.ErrAOFUnavailable):
		// No WAITAOF or no AOF on the master: nothing ran. Turn appendonly
		// on, or drop DurableAOF; re-running later is safe.
	case errors.As(err, &nde) && !nde.NotSent:
		// It ran, but too few AOFs have it (nde.Acked of nde.Required
		// replicas, nde.LocalFsynced for the master): check before
		// re-running.
	}
}

// Durable writes and their scope. The default (DurableEveryKnownReplica)
// counts every replica any sentinel knows, down or not: no failure that
// follows can promote a replica without the write, and while a known
// replica is down the write is refused before it is sent.
// DurablePromotable keeps writing while a replica is down, and loses what
// it confirmed then if that replica is later promoted (a double fault).
func ExampleDurableScope() {
	var cfg sentinel.Config // MasterName, SentinelAddrs, ...
	cfg.Durable = true
	// cfg.DurableScope = sentinel.DurablePromotable // the opt-in for availability
	c, err := sentinel.NewClient(cfg)
	if err != nil {
		return
	}
	defer c.Close()

	ctx := context.Background()
	err = c.Incr(ctx, "orders:next").Err()
	var nde *sentinel.NotDurableError
	switch {
	case errors.As(err, &nde) && nde.NotSent:
		// A counted replica cannot confirm (nde.Unconfirmable): nothing
		// ran. Re-running after nde.RetryAdvice is safe.
	case errors.As(err, &nde):
		// It ran on the master, but fewer than nde.Required replicas
		// confirmed it: check before re-running.
	}
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
