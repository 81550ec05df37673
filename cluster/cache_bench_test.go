package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/rueidis"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/lab"
)

// BenchmarkCacheThroughput compares cached reads on a lab cluster of 3
// masters (no replicas; every node behind the lab's in-process proxy,
// whose CPU the process's figures include), from 1, 8, 64 and 256
// goroutines, under benchcmp.CacheOps: GET of 64 keys spread over the
// slots, all existing ("hits"), the same with every tenth read of a key
// never read before ("hits90"), and only such keys ("misses"). Clients:
// rediskit with Config.Cache (clientcache.WithTTL), the same with
// AutoPipeline, rueidis's DoCache (which finds the cluster itself), and
// uncached rediskit (the miss path's cost). go-redis caches only for a
// standalone client. 3 rounds of 1 s per client; medians, ratios to
// rueidis DoCache and to uncached rediskit, CPU and allocations a read.
//
//	go test -run '^$' -bench CacheThroughput -benchtime 1x -v ./cluster/
func BenchmarkCacheThroughput(b *testing.B) {
	ctx := context.Background()
	l := lab.New(b, lab.Cluster(3, 0))
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprint("bench:", i)
	}
	newClient := func(ap bool) *Client {
		c, err := NewClient(Config{Addrs: l.ClusterAddrs(), PoolSize: 64, AutoPipeline: ap, Cache: &clientcache.Config{}})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = c.Close() })
		return c
	}
	ours, oursAP := newClient(false), newClient(true)
	rue, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: l.ClusterAddrs(), DisableRetry: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rue.Close()
	for _, k := range keys {
		if err := ours.Set(ctx, k, "value-of-"+k, 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
	cached := clientcache.WithTTL(ctx, time.Minute)
	var kOurs, kCached, kCachedAP, kRue benchcmp.ColdKeys
	get := func(c *Client, ctx context.Context, k *benchcmp.ColdKeys) func(context.Context, string, string) error {
		return func(_ context.Context, op, key string) error {
			if err := c.Get(ctx, k.Pick(op, key)).Err(); err != nil && !failure.IsNil(err) {
				return err
			}
			return nil
		}
	}
	clients := []benchcmp.Client{
		{Name: "rediskit", Do: get(ours, ctx, &kOurs)},
		{Name: "rediskit Cache", Do: get(ours, cached, &kCached)},
		{Name: "rediskit Cache AP", Do: get(oursAP, cached, &kCachedAP)},
		{Name: "rueidis DoCache", Do: func(ctx context.Context, op, key string) error {
			err := rue.DoCache(ctx, rue.B().Get().Key(kRue.Pick(op, key)).Cache(), time.Minute).Error()
			if rueidis.IsRedisNil(err) {
				return nil
			}
			return err
		}},
	}
	for b.Loop() {
		table := benchcmp.RunCached(b, "clustercache", keys, clients, "rueidis DoCache", "rediskit")
		st := ours.Stats().Cache
		b.Logf("%s: medians of 3 rounds of 1 s per client; rediskit cache: %d hits, %d misses, %d evictions\n%s",
			l.ServerVersion(), st.Hits, st.Misses, st.Evictions, table)
	}
}
