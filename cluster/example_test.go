//go:build unix

package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/lab"
)

// A client of a three-shard cluster: one seed is enough; each command goes
// to the master of its key's slot.
func Example() {
	ctx, c, stop, err := exampleCluster()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	// Keys under one hash tag share a slot, so they can share a
	// transaction.
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{user:1}:name", "Ada", 0)
		p.Incr(ctx, "{user:1}:visits")
		return nil
	})
	fmt.Println(err, cluster.Slot("{user:1}:name") == cluster.Slot("{user:1}:visits"))
	v, err := c.Get(ctx, "{user:1}:name").Result()
	fmt.Println(v, err, len(c.Stats().Masters))
	// Output:
	// <nil> true
	// Ada <nil> 3
}

// SCAN through the client iterates every master, one after another: the
// ScanIterator sees the whole cluster's keys.
func Example_scan() {
	ctx, c, stop, err := exampleCluster()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	for i := range 100 {
		c.Set(ctx, fmt.Sprint("item:", i), i, 0)
	}
	keys := 0
	it := c.Scan(ctx, 0, "item:*", 20).Iterator()
	for it.Next(ctx) {
		keys++
	}
	fmt.Println(keys, it.Err())
	// Output:
	// 100 <nil>
}

// An Observer sees a shard fail over: the cluster moved its slots to the
// promoted replica.
func ExampleConfig_observer() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Cluster(3, 1))
	if err != nil {
		fmt.Println("lab:", err)
		return
	}
	defer l.Close()
	changed := make(chan cluster.Event, 16)
	c, err := cluster.NewClient(cluster.Config{Addrs: l.ClusterAddrs()[:1], Observer: func(ev cluster.Event) {
		if ev.Kind == cluster.EventMasterChanged {
			changed <- ev
		}
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	c.Ping(ctx) // the first map
	old, _ := l.ShardMaster(ctx, 0)
	promoted, err := l.ClusterFailover(ctx, 0, lab.FailoverGraceful)
	if err != nil {
		fmt.Println(err)
		return
	}
	select {
	case ev := <-changed:
		fmt.Println(ev.Kind, ev.OldMaster == old.Addr(), ev.Master == promoted.Addr(), ev.Slots > 0)
	case <-ctx.Done():
		fmt.Println("no event")
	}
	// Output:
	// master changed true true true
}

// A shard channel's subscription lives on its slot's master and follows
// it through failovers and migrations.
func ExampleClient_SSubscribe() {
	ctx, c, stop, err := exampleCluster()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	ps := c.SSubscribe(ctx, "{room:1}:chat")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		fmt.Println(err)
		return
	}
	fmt.Println(c.SPublish(ctx, "{room:1}:chat", "hello").Val())
	m, err := ps.ReceiveMessage(ctx)
	fmt.Println(m.Channel, m.Payload, err)
	// Output:
	// 1
	// {room:1}:chat hello <nil>
}

// exampleCluster starts a three-shard lab and a client of it, from one
// seed, and a context bounding the example; stop ends all three.
// A durable write waits for the replicas of its shard that could be
// promoted; this example cluster has none, so it is refused before it is
// sent, with a typed error saying re-running it later is safe.
func ExampleWithDurable() {
	ctx, c, stop, err := exampleCluster()
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()
	err = c.Set(cluster.WithDurable(ctx, true), "order:1", "paid", 0).Err()
	var nde *cluster.NotDurableError
	fmt.Println(errors.Is(err, cluster.ErrNotDurable), errors.As(err, &nde) && nde.NotSent, nde.Required)
	n, _ := c.Exists(ctx, "order:1").Result()
	fmt.Println(n)
	// Output:
	// true true 0
	// 0
}

func exampleCluster() (ctx context.Context, c *cluster.Client, stop func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	l, err := lab.Start(ctx, lab.Cluster(3, 0))
	if err != nil {
		cancel()
		return nil, nil, nil, fmt.Errorf("lab: %w", err)
	}
	c, err = cluster.NewClient(cluster.Config{Addrs: l.ClusterAddrs()[:1]})
	if err != nil {
		_ = l.Close()
		cancel()
		return nil, nil, nil, err
	}
	return ctx, c, func() { _ = c.Close(); _ = l.Close(); cancel() }, nil
}

// The split-brain hold: a master cut off from its replicas and the
// majority still answers, and would lose what it acknowledges once the
// cluster promotes a replica. The client holds its shard's writes from
// the first sign of it (EventMasterIsolated) until the cluster replaces it
// or the signs clear; a write still held after WriteHoldTimeout fails
// with a *NoMasterError naming the master, and was not sent. (Not run:
// it needs a partition; TestMinorityPartition makes one.)
func ExampleNoMasterError_isolated() {
	c, err := cluster.NewClient(cluster.Config{
		Addrs:            []string{"10.0.0.1:7000"},
		WriteHoldTimeout: 3 * time.Second,
		Observer: func(ev cluster.Event) {
			if ev.Kind == cluster.EventMasterIsolated || ev.Kind == cluster.EventIsolationEnded {
				fmt.Println(ev) // e.g. "master isolated master=10.0.0.1:7000 reason=..."
			}
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = c.Set(ctx, "{order:42}:status", "paid", 0).Err()
	var nme *cluster.NoMasterError
	if errors.As(err, &nme) && nme.Isolated != "" {
		// Not sent: safe to run again later, or to queue.
		fmt.Printf("held and refused: %s is cut off (%s)\n", nme.Isolated, nme.IsolatedReason)
	}
}

// A pipeline's commands succeed or fail each on its own. Each command's
// Err is nil, its own answer (redis.Nil, WRONGTYPE, a script's error), or
// one of the package's errors, which says whether the write may have run:
// never a bare timeout or a raw MOVED or CLUSTERDOWN. (Compiled, not run:
// it needs a cluster.)
func ExampleNodeError() {
	retry := func(ctx context.Context, c *cluster.Client, keys []string) error {
		cmds, _ := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range keys {
				p.Incr(ctx, k)
			}
			return nil
		})
		var again []string
		for i, cmd := range cmds {
			var (
				ne  *cluster.NodeError
				mce *cluster.MasterChangedError
				nme *cluster.NoMasterError
			)
			switch err := cmd.Err(); {
			case err == nil:
			case errors.As(err, &nme), errors.As(err, &ne) && !ne.MayHaveExecuted:
				again = append(again, keys[i]) // it did not run: safe to run again
			case errors.As(err, &ne), errors.As(err, &mce):
				return fmt.Errorf("%s may have been incremented: check before retrying: %w", keys[i], err)
			default:
				return err // the command's own answer (WRONGTYPE: not a counter)
			}
		}
		if len(again) > 0 {
			return fmt.Errorf("not run, to retry: %v", again)
		}
		return nil
	}
	_ = retry
}

// Coming from go-redis: the options given to redis.NewClusterClient,
// converted field by field; what rediskit does not do is refused with the
// reason.
func ExampleFromClusterOptions() {
	co := &redis.ClusterOptions{
		Addrs:        []string{"10.0.0.1:7000", "10.0.0.2:7000"},
		ReadOnly:     true, // ReadFrom: ReplicaPreferred
		MinIdleConns: 2,    // through NodeOptions, on every node's client
		MaxRetries:   3,    // refused: rediskit decides re-runs itself
	}
	_, err := cluster.FromClusterOptions(co)
	var ce *cluster.ClusterOptionsError
	if errors.As(err, &ce) {
		fmt.Println(ce.Refused[0].Field)
	}
	co.MaxRetries = -1 // go-redis's "no retries"
	cfg, err := cluster.FromClusterOptions(co)
	fmt.Println(cfg.ReadFrom, err)
	// Output:
	// MaxRetries
	// replicaPreferred <nil>
}
