//go:build unix

package lab_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
)

// A failover test's skeleton: start a master with one replica behind three
// sentinels, write, fail over, and check the new master has the value.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	l, err := lab.Start(ctx, lab.Sentinel(1))
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer l.Close()

	master := l.Node(0).NewClient()
	defer master.Close()
	if err := master.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		fmt.Println("set:", err)
		return
	}
	// Make sure the replica has the write before promoting it.
	if err := master.Do(ctx, "WAIT", 1, 1000).Err(); err != nil {
		fmt.Println("wait:", err)
		return
	}

	res, err := l.Failover(ctx)
	if err != nil {
		fmt.Println("failover:", err)
		return
	}
	fmt.Printf("failover %s -> %s, every sentinel agrees\n", res.OldMaster.Name(), res.NewMaster.Name())

	promoted := res.NewMaster.NewClient()
	defer promoted.Close()
	v, err := promoted.Get(ctx, "greeting").Result()
	fmt.Println(v, err)
	// Output:
	// failover node0 -> node1, every sentinel agrees
	// hello <nil>
}

// Latency injection: the node's proxy adds the round trip to every
// connection, including Sentinel's and the replicas'.
func ExampleNode_SetLatency() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	l, err := lab.Start(ctx, lab.Config{Proxy: true})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer l.Close()

	l.Node(0).SetLatency(30 * time.Millisecond)
	c := l.Node(0).NewClient()
	defer c.Close()
	_ = c.Ping(ctx) // connect
	start := time.Now()
	_ = c.Ping(ctx)
	fmt.Println(time.Since(start) >= 30*time.Millisecond)
	// Output: true
}

// A partition: the master on one side, its replica and the test's client
// endpoint on the other. Under Refuse the connections across are reset at
// once (Drop would silence them instead); Heal lets everything through
// again and replication resumes.
func ExampleLab_Partition() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	l, err := lab.Start(ctx, lab.Config{Replicas: 1, Partitions: true})
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer l.Close()
	master, replica := l.Node(0), l.Node(1)
	app, err := l.NewClientEndpoint("app") // connects from an address of its own
	if err != nil {
		fmt.Println("endpoint:", err)
		return
	}

	if err := l.Partition(lab.Refuse, []lab.Endpoint{master}, []lab.Endpoint{replica, app}); err != nil {
		fmt.Println("partition:", err)
		return
	}
	toMaster, toReplica := app.NewClient(master), app.NewClient(replica)
	defer toMaster.Close()
	defer toReplica.Close()
	fmt.Println("app reaches the master:", toMaster.Ping(ctx).Err() == nil)
	fmt.Println("app reaches the replica:", toReplica.Ping(ctx).Err() == nil)
	// Clients without an endpoint connect from 127.0.0.1, which no
	// partition cuts, and the lab's admin commands bypass the proxies.
	plain := master.NewClient()
	defer plain.Close()
	fmt.Println("a plain client reaches the master:", plain.Ping(ctx).Err() == nil)

	if err := l.Heal(); err != nil {
		fmt.Println("heal:", err)
		return
	}
	if err := l.WaitSettled(ctx); err != nil { // the replica links up again
		fmt.Println("settle:", err)
		return
	}
	again := app.NewClient(master)
	defer again.Close()
	fmt.Println("after Heal, app reaches the master:", again.Ping(ctx).Err() == nil)
	// Output:
	// app reaches the master: false
	// app reaches the replica: true
	// a plain client reaches the master: true
	// after Heal, app reaches the master: true
}

// A Redis Cluster test's skeleton: three shards of a master and a replica,
// a write through a go-redis cluster client, then the master serving it is
// killed and the cluster promotes its replica.
func ExampleCluster() {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	l, err := lab.Start(ctx, lab.Cluster(3, 1))
	if err != nil {
		fmt.Println("start:", err)
		return
	}
	defer l.Close()

	cc := redis.NewClusterClient(l.ClusterOptions())
	defer cc.Close()
	if err := cc.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		fmt.Println("set:", err)
		return
	}
	slot, _ := l.Node(0).Do(ctx, "CLUSTER", "KEYSLOT", "greeting").Int()
	old, err := l.SlotOwner(ctx, slot)
	if err != nil {
		fmt.Println("owner:", err)
		return
	}
	// Make sure the replica has the write before the master dies: WAIT
	// counts the writes of its own connection, so write once more there.
	rc := old.NewClient()
	defer rc.Close()
	conn := rc.Conn()
	defer conn.Close()
	_ = conn.Set(ctx, "greeting", "hello", 0).Err()
	if n, err := conn.Do(ctx, "WAIT", 1, 1000).Int(); err != nil || n != 1 {
		fmt.Println("wait:", n, err)
		return
	}
	_ = old.Kill()
	promoted, err := l.WaitPromotion(ctx, old.Shard(), old)
	if err != nil {
		fmt.Println("promotion:", err)
		return
	}
	fmt.Println("promoted a replica of the same shard:", promoted.Shard() == old.Shard() && promoted != old)
	v, err := promoted.Do(ctx, "GET", "greeting").Text()
	fmt.Println(v, err)
	// Output:
	// promoted a replica of the same shard: true
	// hello <nil>
}
