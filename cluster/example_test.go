//go:build unix

package cluster_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/lab"
)

// A client of a three-shard cluster: one seed is enough; each command goes
// to the master of its key's slot.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Cluster(3, 0))
	if err != nil {
		fmt.Println("lab:", err)
		return
	}
	defer l.Close()

	c, err := cluster.NewClient(cluster.Options{Addrs: l.ClusterAddrs()[:1]})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()
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
