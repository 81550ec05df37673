package cluster

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/lab"
)

// BenchmarkAutoPipelineThroughput compares, in one run and on one lab
// cluster of 3 masters (no replicas, no added latency; every node behind
// the lab's in-process proxy, whose CPU the process's figures include),
// GET and SET of 10,000 keys spread over the slots from 1, 8, 64 and 256
// goroutines: go-redis's ClusterClient, its AutoPipeline(), rediskit
// without and with Config.AutoPipeline, rueidis, and the ceiling of
// rueidis's shape (benchcmp.Stream to each master). Clients take turns
// within each of 3 rounds of 2 s; the figures are medians, with the
// ratios to go-redis, rueidis and go-redis's AutoPipeline and the
// process's CPU time and allocations per command. One sub-benchmark per
// count of goroutines: -bench 'AutoPipelineThroughput/8$' runs one.
//
//	go test -run '^$' -bench AutoPipelineThroughput -benchtime 1x -v ./cluster/
func BenchmarkAutoPipelineThroughput(b *testing.B) {
	ctx := context.Background()
	l := lab.New(b, lab.Cluster(3, 0))
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = fmt.Sprint("bench:", i)
	}
	plain := redis.NewClusterClient(&redis.ClusterOptions{Addrs: l.ClusterAddrs(), MaxRetries: -1, DisableIdentity: true, PoolSize: 64})
	defer plain.Close()
	goAP, err := plain.AutoPipeline()
	if err != nil {
		b.Fatal(err)
	}
	defer goAP.Close()
	ours, err := NewClient(Config{Addrs: l.ClusterAddrs(), PoolSize: 64})
	if err != nil {
		b.Fatal(err)
	}
	defer ours.Close()
	auto, err := NewClient(Config{Addrs: l.ClusterAddrs(), PoolSize: 64, AutoPipeline: true})
	if err != nil {
		b.Fatal(err)
	}
	defer auto.Close()
	rue, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: l.ClusterAddrs(), DisableCache: true, DisableRetry: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rue.Close()
	for _, k := range keys { // the keys exist, and every client knows the map
		if err := plain.Set(ctx, k, "v", 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
	// The ceiling of rueidis's shape on this machine: a pipelining
	// connection per master that does no work of its own, found by slot.
	slots, err := plain.ClusterSlots(ctx).Result()
	if err != nil {
		b.Fatal(err)
	}
	var bySlot [Slots]*benchcmp.Stream
	streams := map[string]*benchcmp.Stream{}
	for _, r := range slots {
		addr := r.Nodes[0].Addr
		if streams[addr] == nil {
			s, err := benchcmp.DialStream(ctx, addr)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			streams[addr] = s
		}
		for slot := r.Start; slot <= r.End; slot++ {
			bySlot[slot] = streams[addr]
		}
	}
	do := func(c redis.Cmdable) func(ctx context.Context, op, key string) error {
		return func(ctx context.Context, op, key string) error { return benchcmp.RunOp(ctx, c, op, key) }
	}
	clients := []benchcmp.Client{
		{Name: "go-redis", Do: do(plain)},
		{Name: "go-redis AutoPipeline", Do: do(goAP)},
		{Name: "rediskit", Do: do(ours)},
		{Name: "rediskit Config.AutoPipeline", Do: do(auto)},
		{Name: "rueidis", Do: func(ctx context.Context, op, key string) error {
			if op == "SET" {
				return rue.Do(ctx, rue.B().Set().Key(key).Value("v").Build()).Error()
			}
			return rue.Do(ctx, rue.B().Get().Key(key).Build()).Error()
		}},
		{Name: "ceiling", Do: func(ctx context.Context, op, key string) error { return bySlot[Slot(key)].Do(ctx, op, key) }},
	}
	for _, c := range clients {
		if err := c.Do(ctx, "GET", keys[0]); err != nil {
			b.Fatalf("%s: %v", c.Name, err)
		}
	}
	for _, goroutines := range []int{1, 8, 64, 256} {
		b.Run(strconv.Itoa(goroutines), func(b *testing.B) {
			for b.Loop() {
				table := benchcmp.Comparison{
					Rounds: 3, Turn: 2 * time.Second, Ops: []string{"GET", "SET"}, Goroutines: []int{goroutines},
					Keys: keys, Clients: clients, Tag: "cluster",
					Base: "go-redis", Versus: []string{"rueidis", "go-redis AutoPipeline", "ceiling"},
				}.Run(b)
				b.Logf("%s, 3 masters: medians of 3 rounds of 2 s per client\n%s", l.ServerVersion(), table)
			}
		})
	}
}
