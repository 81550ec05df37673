package sentinel

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// stalenessRun runs the staleness checker (testkit.StalenessRun) on 16
// keys for d.
func stalenessRun(ctx context.Context, d time.Duration, readers int,
	write func(ctx context.Context, key string, v int64) error,
	read func(ctx context.Context, key string) (string, error),
	fault func()) (testkit.StalenessReport, error) {
	return testkit.StalenessRun{Keys: testkit.StalenessKeys("stale:", 16), Duration: d, Readers: readers,
		Write: write, Read: read, Fault: fault}.Run(ctx)
}

// testReadPause is the pause between a staleness test's reads (see
// testkit.StalenessRun.ReadPause): 4 readers under -race that never
// paused took both CPUs for the whole test, and starved the package
// tested beside it.
const testReadPause = 50 * time.Microsecond

// TestCacheStaleness runs the staleness checker on rediskit's cache on a
// Sentinel lab: no fault, the tracking connection killed, the cached
// client partitioned from the master (its packets dropped while the writer
// still writes there), a failover, the master killed. No read may be stale
// by more than HeartbeatTimeout: by construction for writes on the node an
// entry came from (see package cachestore). Through a failover the client
// ends the old master's entries when it sees the switch, and the writer's
// writes go to the new master once its own client has: the bound there is
// HeartbeatTimeout plus how much later the cached client switched than the
// writer's (measured by the run). The writer is durable, so that no write
// acknowledged is lost with a killed master (a lost write would read as a
// stale one).
func TestCacheStaleness(t *testing.T) {
	ctx := testkit.Context(t, 180*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: lab.DefaultSentinels, Partitions: true})
	app, err := l.NewClientEndpoint("app")
	if err != nil {
		t.Fatal(err)
	}
	c, cacheEvents := newTestClient(t, l, func(cfg *Config) {
		cfg.Cache = &clientcache.Config{}
		cfg.Dialer = app.Dial
		cfg.ReadTimeout = 500 * time.Millisecond // reads in flight through the partition
	})
	writer, writerEvents := newTestClient(t, l, func(cfg *Config) { cfg.Durable = true })
	bound := clientcache.DefaultHeartbeatTimeout
	write := func(ctx context.Context, key string, v int64) error { return writer.Set(ctx, key, v, 0).Err() }
	read := func(ctx context.Context, key string) (string, error) {
		return c.Get(clientcache.WithTTL(ctx, time.Minute), key).Result()
	}
	// switchedAt is when a client last switched masters.
	switchedAt := func(e *eventLog) time.Time {
		var at time.Time
		for _, ev := range e.all() {
			if ev.Kind == EventMasterChanged && ev.OldMaster != "" {
				at = ev.Time
			}
		}
		return at
	}
	master := func() *lab.Node {
		m, err := l.Master(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, sc := range []struct {
		name     string
		d        time.Duration
		failover bool // the writes move to another master
		fault    func()
	}{
		{"no fault", 1500 * time.Millisecond, false, nil},
		{"tracking connection killed", 1500 * time.Millisecond, false, func() {
			if err := master().Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
				t.Error(err)
			}
		}},
		{"partitioned from the master", 2 * time.Second, false, func() {
			if err := l.Partition(lab.Drop, []lab.Endpoint{app}, []lab.Endpoint{master()}); err != nil {
				t.Error(err)
			}
			time.Sleep(700 * time.Millisecond)
			if err := l.Heal(); err != nil {
				t.Error(err)
			}
		}},
		{"failover", 1500 * time.Millisecond, true, func() {
			if _, err := l.Failover(ctx); err != nil {
				t.Error(err)
			}
		}},
		// Last: the killed master stays down (the lab stops it by PID).
		{"master killed", 4 * time.Second, true, func() {
			if err := master().Kill(); err != nil {
				t.Error(err)
			}
		}},
	} {
		rep, err := testkit.StalenessRun{Keys: testkit.StalenessKeys("stale:", 16), Duration: sc.d, Readers: 4,
			ReadPause: testReadPause, Write: write, Read: read, Fault: sc.fault}.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		limit := bound
		if sc.failover {
			// The cached client cannot end the old master's entries
			// before it sees the switch; the writer writes to the new
			// master once its own client has. The later the first
			// after the second, the longer the window.
			lag := testkit.SwitchLag(switchedAt(cacheEvents), switchedAt(writerEvents))
			limit += lag
			t.Logf("%s: the cached client switched %v after the writer's", sc.name, lag)
		}
		rep.Check(t, sc.name, limit)
		if sc.name != "master killed" {
			if err := l.WaitSettled(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// BenchmarkCacheStaleness runs the staleness checker on rediskit's cache,
// rueidis's (DoCache, RESP3 tracking on its own connections) and go-redis
// v9.23's (ClientSideCacheConfig, RESP3, a standalone client made for the
// master of the moment: go-redis caches for no other client type), in
// turn on one Sentinel lab, 3 s a run (5 s when the master is killed), 8
// readers, a write a millisecond through a durable rediskit client without
// cache: no fault; every connection of the caching client killed (CLIENT
// KILL ID, found by client name); the caching client partitioned from the
// master for 1 s (its packets dropped, the writer unaffected); a failover;
// the master killed (SIGKILL, then restarted as a replica). It reports
// reads, stale reads and the worst staleness per client and scenario.
//
//	go test -run '^$' -bench CacheStaleness -benchtime 1x -v ./sentinel/
func BenchmarkCacheStaleness(b *testing.B) {
	ctx := context.Background()
	l := lab.New(b, lab.Config{Replicas: 1, Sentinels: lab.DefaultSentinels, Partitions: true})
	writer, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), Durable: true})
	if err != nil {
		b.Fatal(err)
	}
	defer writer.Close()
	endpoint := func(name string) *lab.ClientEndpoint {
		e, err := l.NewClientEndpoint(name)
		if err != nil {
			b.Fatal(err)
		}
		return e
	}
	master := func() *lab.Node {
		m, err := l.Master(ctx)
		if err != nil {
			b.Fatal(err)
		}
		return m
	}
	rkEnd, rueEnd, grEnd := endpoint("rk"), endpoint("rue"), endpoint("gr")
	ours, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), Dialer: rkEnd.Dial,
		ClientName: "rk-cache", ReadTimeout: 500 * time.Millisecond, Cache: &clientcache.Config{}})
	if err != nil {
		b.Fatal(err)
	}
	defer ours.Close()
	rue, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: l.SentinelAddrs(), ClientName: "rueidis-cache",
		Sentinel: rueidis.SentinelOption{MasterSet: l.MasterName()}, DisableRetry: true,
		DialCtxFn: func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return rueEnd.Dial(ctx, "tcp", addr)
		}})
	if err != nil {
		b.Fatal(err)
	}
	defer rue.Close()
	// go-redis's cache is for a standalone client: one made for the master
	// of the moment at each run's start, as its user would configure it.
	var gr *redis.Client
	newGoRedis := func() {
		o := grEnd.Options(master())
		o.Protocol, o.ClientName, o.ReadTimeout = 3, "goredis-cache", 500*time.Millisecond
		o.ClientSideCacheConfig = &redis.CacheConfig{MaxMemoryBytes: 64 << 20}
		gr = redis.NewClient(o)
	}
	clients := []struct {
		name, clientName string
		end              *lab.ClientEndpoint
		before, after    func()
		read             func(ctx context.Context, key string) (string, error)
	}{
		{"rediskit", "rk-cache", rkEnd, nil, nil, func(ctx context.Context, key string) (string, error) {
			return ours.Get(clientcache.WithTTL(ctx, time.Minute), key).Result()
		}},
		{"rueidis DoCache", "rueidis-cache", rueEnd, nil, nil, func(ctx context.Context, key string) (string, error) {
			s, err := rue.DoCache(ctx, rue.B().Get().Key(key).Cache(), time.Minute).ToString()
			if rueidis.IsRedisNil(err) {
				return "", redis.Nil
			}
			return s, err
		}},
		{"go-redis cache", "goredis-cache", grEnd, newGoRedis, func() { _ = gr.Close() }, func(ctx context.Context, key string) (string, error) {
			return gr.Get(ctx, key).Result()
		}},
	}
	write := func(ctx context.Context, key string, v int64) error { return writer.Set(ctx, key, v, 0).Err() }
	killNamed := func(name string) {
		m := master()
		list, err := m.Do(ctx, "CLIENT", "LIST").Text()
		if err != nil {
			b.Error(err)
			return
		}
		for line := range strings.SplitSeq(list, "\n") {
			if !strings.Contains(line, " name="+name+" ") {
				continue
			}
			id, _, _ := strings.Cut(strings.TrimPrefix(line, "id="), " ")
			_ = m.Do(ctx, "CLIENT", "KILL", "ID", id).Err()
		}
	}
	for b.Loop() {
		var table strings.Builder
		table.WriteString("| scenario | client | reads | stale | stale % | worst |\n|---|---|---|---|---|---|\n")
		for _, sc := range []string{"no fault", "connections killed", "partitioned 1 s", "failover", "master killed"} {
			for _, cl := range clients {
				var fault func()
				var killed *lab.Node
				d := 3 * time.Second
				switch sc {
				case "connections killed":
					fault = func() { killNamed(cl.clientName) }
				case "partitioned 1 s":
					fault = func() {
						if err := l.Partition(lab.Drop, []lab.Endpoint{cl.end}, []lab.Endpoint{master()}); err != nil {
							b.Error(err)
						}
						time.Sleep(time.Second)
						if err := l.Heal(); err != nil {
							b.Error(err)
						}
					}
				case "failover":
					fault = func() {
						if _, err := l.Failover(ctx); err != nil {
							b.Error(err)
						}
					}
				case "master killed":
					d = 5 * time.Second
					fault = func() {
						killed = master()
						if err := killed.Kill(); err != nil {
							b.Error(err)
						}
					}
				}
				if cl.before != nil {
					cl.before()
				}
				rep, err := stalenessRun(ctx, d, 8, write, cl.read, fault)
				if cl.after != nil {
					cl.after()
				}
				if err != nil {
					b.Fatal(err)
				}
				fmt.Fprintf(&table, "| %s | %s | %d | %d | %.2f | %v |\n", sc, cl.name, rep.Reads, rep.Stale,
					100*float64(rep.Stale)/float64(max(rep.Reads, 1)), rep.Worst.Round(10*time.Microsecond))
				if killed != nil {
					if err := killed.Restart(ctx); err != nil {
						b.Fatal(err)
					}
				}
				if err := l.WaitSettled(ctx); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.Logf("%s, 3 s a run (5 s for the kill), 8 readers, a durable write a millisecond\n%s", l.ServerVersion(), table.String())
	}
}

// BenchmarkCacheThroughput compares cached reads, in one run on one lab
// master, from 1, 8, 64 and 256 goroutines: GET of 64 keys that all exist
// ("hits": after the first round every read of a cached client is a hit),
// the same with every tenth read of a key never read before ("hits90":
// a miss, filled, and in time evicted), and only such keys ("misses": the
// miss path, which reserves, sends and fills). Clients: rediskit with
// Config.Cache (clientcache.WithTTL), the same with AutoPipeline, rueidis's
// DoCache, go-redis v9.23's cache (a standalone client, RESP3), and,
// uncached, rediskit and go-redis.
// 3 rounds of 1 s per client; medians, ratios to rueidis DoCache and to
// uncached rediskit (the miss path's cost), CPU and allocations a read.
//
//	go test -run '^$' -bench CacheThroughput -benchtime 1x -v ./sentinel/
func BenchmarkCacheThroughput(b *testing.B) {
	ctx := context.Background()
	l := lab.New(b, lab.Sentinel(0))
	master, err := l.Master(ctx)
	if err != nil {
		b.Fatal(err)
	}
	plain := redis.NewClient(&redis.Options{Addr: master.Addr(), MaxRetries: -1, PoolSize: 64})
	defer plain.Close()
	grCache := redis.NewClient(&redis.Options{Addr: master.Addr(), MaxRetries: -1, PoolSize: 64, Protocol: 3,
		ClientSideCacheConfig: &redis.CacheConfig{MaxMemoryBytes: clientcache.DefaultMaxBytes}})
	defer grCache.Close()
	ours, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), PoolSize: 64,
		Cache: &clientcache.Config{}})
	if err != nil {
		b.Fatal(err)
	}
	defer ours.Close()
	// The same with auto-pipelining: its misses share round trips, as
	// rueidis's always do.
	oursAP, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), PoolSize: 64,
		AutoPipeline: true, Cache: &clientcache.Config{}})
	if err != nil {
		b.Fatal(err)
	}
	defer oursAP.Close()
	rue, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{master.Addr()}, DisableRetry: true})
	if err != nil {
		b.Fatal(err)
	}
	defer rue.Close()
	for _, k := range apBenchKeys {
		if err := plain.Set(ctx, k, "value-of-"+k, 0).Err(); err != nil {
			b.Fatal(err)
		}
	}
	// Each client picks its keys (benchcmp.CacheOps) with its own count.
	cached := clientcache.WithTTL(ctx, time.Minute)
	var cPlain, cOurs, cCached, cCachedAP, cRue, cGr benchcmp.ColdKeys
	clients := []benchcmp.Client{
		{Name: "go-redis", Do: func(ctx context.Context, op, key string) error {
			return ignoreNil(plain.Get(ctx, cPlain.Pick(op, key)).Err())
		}},
		{Name: "rediskit", Do: func(ctx context.Context, op, key string) error {
			return ignoreNil(ours.Get(ctx, cOurs.Pick(op, key)).Err())
		}},
		{Name: "rediskit Cache", Do: func(_ context.Context, op, key string) error {
			return ignoreNil(ours.Get(cached, cCached.Pick(op, key)).Err())
		}},
		{Name: "rediskit Cache AP", Do: func(_ context.Context, op, key string) error {
			return ignoreNil(oursAP.Get(cached, cCachedAP.Pick(op, key)).Err())
		}},
		{Name: "rueidis DoCache", Do: func(ctx context.Context, op, key string) error {
			err := rue.DoCache(ctx, rue.B().Get().Key(cRue.Pick(op, key)).Cache(), time.Minute).Error()
			if rueidis.IsRedisNil(err) {
				return nil
			}
			return err
		}},
		{Name: "go-redis cache", Do: func(ctx context.Context, op, key string) error {
			return ignoreNil(grCache.Get(ctx, cGr.Pick(op, key)).Err())
		}},
	}
	for b.Loop() {
		table := benchcmp.RunCached(b, "cache", apBenchKeys, clients, "rueidis DoCache", "rediskit")
		st := ours.Stats().Cache
		b.Logf("%s: medians of 3 rounds of 1 s per client; rediskit cache: %d hits, %d misses, %d evictions\n%s",
			l.ServerVersion(), st.Hits, st.Misses, st.Evictions, table)
	}
}

// BenchmarkCacheMissPath measures what the miss path costs over the same
// client uncached, alone in its process: BenchmarkCacheThroughput's
// "misses" row holds rueidis's and go-redis's caches in the same heap,
// whose marking the garbage collector charges to whichever client
// allocates (a third of that run's CPU is the collector's), so there the
// allocating miss path pays for the peers' caches too. Here one client
// with Config.Cache (and one with AutoPipeline too) reads only keys never
// read before, with and without clientcache.WithTTL, from 1, 8, 64 and 256
// goroutines; its store fills in the first round and evicts from then on.
// Then, once those clients are closed and their stores dropped, the same
// for rueidis: DoCache against Do on one client.
//
//	go test -run '^$' -bench CacheMissPath -benchtime 1x -v ./sentinel/
func BenchmarkCacheMissPath(b *testing.B) {
	ctx := context.Background()
	l := lab.New(b, lab.Sentinel(0))
	master, err := l.Master(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var keys benchcmp.ColdKeys // one count: every read a key never read before, by any client
	cold := func() string { return keys.Pick("misses", "") }
	compare := func(base string, versus []string, clients []benchcmp.Client) string {
		return benchcmp.Comparison{
			Rounds: 3, Turn: time.Second, Ops: []string{"misses"}, Goroutines: []int{1, 8, 64, 256},
			Keys: apBenchKeys, Clients: clients, Tag: "cachemiss", Base: base, Versus: versus,
		}.Run(b)
	}
	for b.Loop() {
		newClient := func(ap bool) *Client {
			c, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), PoolSize: 64,
				AutoPipeline: ap, Cache: &clientcache.Config{}})
			if err != nil {
				b.Fatal(err)
			}
			return c
		}
		ours, oursAP := newClient(false), newClient(true)
		cached := clientcache.WithTTL(ctx, time.Minute)
		read := func(c *Client, ctx context.Context) func(context.Context, string, string) error {
			return func(context.Context, string, string) error { return ignoreNil(c.Get(ctx, cold()).Err()) }
		}
		table := compare("rediskit", []string{"rediskit AP"}, []benchcmp.Client{
			{Name: "rediskit", Do: read(ours, ctx)},
			{Name: "rediskit Cache", Do: read(ours, cached)},
			{Name: "rediskit AP", Do: read(oursAP, ctx)},
			{Name: "rediskit Cache AP", Do: read(oursAP, cached)},
		})
		st, stAP := ours.Stats().Cache, oursAP.Stats().Cache
		_, _ = ours.Close(), oursAP.Close()

		rue, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{master.Addr()}, DisableRetry: true})
		if err != nil {
			b.Fatal(err)
		}
		rueErr := func(err error) error {
			if rueidis.IsRedisNil(err) {
				return nil
			}
			return err
		}
		rueTable := compare("rueidis Do", nil, []benchcmp.Client{
			{Name: "rueidis Do", Do: func(ctx context.Context, _, _ string) error {
				return rueErr(rue.Do(ctx, rue.B().Get().Key(cold()).Build()).Error())
			}},
			{Name: "rueidis DoCache", Do: func(ctx context.Context, _, _ string) error {
				return rueErr(rue.DoCache(ctx, rue.B().Get().Key(cold()).Cache(), time.Minute).Error())
			}},
		})
		rue.Close()
		b.Logf("%s: medians of 3 rounds of 1 s per client; rediskit's misses %d and %d, evictions %d and %d, entries %d and %d\n%s\n%s",
			l.ServerVersion(), st.Misses, stAP.Misses, st.Evictions, stAP.Evictions, st.Entries, stAP.Entries, table, rueTable)
	}
}

// ignoreNil is err, or nil for redis.Nil (a key never written).
func ignoreNil(err error) error {
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}
