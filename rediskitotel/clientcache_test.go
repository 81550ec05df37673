package rediskitotel

import (
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/sentinel"
)

// TestClientCacheMetrics: a Sentinel (standalone) client's and a multidb
// client's cache counters reach the meter, and a client without a cache
// reports none.
func TestClientCacheMetrics(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	m, reader := newMetrics(t)
	l := lab.New(t, lab.Standalone())
	addr := l.Node(0).Addr()
	sc, err := sentinel.NewClient(sentinel.Config{Primary: addr, Cache: &clientcache.Config{}})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	mc, err := multidb.NewClient(multidb.Config{
		Databases:           []multidb.Database{{Name: "only", Weight: 1, Options: &redis.Options{Addr: addr}}},
		HealthCheckInterval: time.Hour,
		Cache:               &clientcache.Config{},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer mc.Close()
	if _, err := m.RegisterSentinel(sc); err != nil {
		t.Fatal(err)
	}
	if _, err := m.RegisterMultiDB(mc); err != nil {
		t.Fatal(err)
	}
	cached := clientcache.WithTTL(ctx, time.Minute)
	for i, c := range []redis.Cmdable{sc, mc} {
		key := []string{"k-sentinel", "k-multidb"}[i] // the same server: a write would end the other's entry
		if err := c.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 10*time.Second, "cache hits", func() bool {
			for range 5 {
				if err := c.Get(cached, key).Err(); err != nil {
					t.Fatal(err)
				}
			}
			got := collect(t, reader)
			return sum(got["rediskit.sentinel.cache.hits"]) > 0 && c == redis.Cmdable(sc) ||
				sum(got["rediskit.multidb.cache.hits"]) > 0 && c == redis.Cmdable(mc)
		})
	}
	got := collect(t, reader)
	for _, name := range []string{"rediskit.sentinel.cache.misses", "rediskit.sentinel.cache.fills", "rediskit.sentinel.cache.entries",
		"rediskit.multidb.cache.misses", "rediskit.multidb.cache.fills", "rediskit.multidb.cache.entries"} {
		if sum(got[name]) <= 0 {
			t.Errorf("%s: %v, want > 0", name, got[name])
		}
	}
	causes := map[string]bool{}
	for _, p := range got["rediskit.sentinel.cache.flushes"] {
		if v, ok := p.attrs.Value("cause"); ok {
			causes[v.AsString()] = true
		}
	}
	if len(causes) != 4 || len(got["rediskit.sentinel.cache.stale"]) != 1 {
		t.Errorf("flushes by cause %v, stale %v: want the four causes, and a stale counter", causes, got["rediskit.sentinel.cache.stale"])
	}
	if len(got["rediskit.cluster.cache.hits"]) != 0 {
		t.Error("a cluster cache metric with no cluster client")
	}
}
