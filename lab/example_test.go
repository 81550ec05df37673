//go:build unix

package lab_test

import (
	"context"
	"fmt"
	"time"

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
