//go:build unix

package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
)

// Reads from the nearest fresh replica of each shard; a read that must see
// the caller's own write goes to the master.
func ExampleConfig_readFrom() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	l, err := lab.Start(ctx, lab.Cluster(3, 1))
	if err != nil {
		fmt.Println("lab:", err)
		return
	}
	defer l.Close()
	c, err := cluster.NewClient(cluster.Config{
		Addrs:    l.ClusterAddrs()[:1],
		ReadFrom: cluster.Replica, // never the master; ReplicaPreferred falls back to it
		Replica: replica.Config{
			MaxStaleness: 5 * time.Second, // replicas further behind serve no read
			// On loopback every RTT is tens of microseconds: a noise floor
			// for the "3 x the master's RTT" rule. Leave it 0 on a network.
			ExclusionMargin: time.Millisecond,
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	c.Set(ctx, "{user:1}:name", "Ada", 0)
	own, err := c.Get(cluster.WithReadFrom(ctx, cluster.Master), "{user:1}:name").Result()
	fmt.Println(own, err)
	// Let the replicas catch up, so the replica read below sees the write.
	_ = c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error { return m.Do(ctx, "WAIT", 1, 1000).Err() })
	v, err := c.Get(ctx, "{user:1}:name").Result() // waits for the first probe round
	st := c.Stats()
	var onReplicas uint64
	for _, n := range st.Nodes {
		if !slices.Contains(st.Masters, n.Addr) {
			onReplicas += n.Reads
		}
	}
	fmt.Println(v, err, onReplicas)
	// Output:
	// Ada <nil>
	// Ada <nil> 1
}
