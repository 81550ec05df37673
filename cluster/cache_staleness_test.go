package cluster

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestCacheStaleness runs the staleness checker (testkit.StalenessRun) on
// rediskit's cache on a lab cluster, 16 keys over the three shards: no
// fault; the slots of a shard's keys migrated to another shard; a graceful
// CLUSTER FAILOVER of a shard; the cached client partitioned from a
// shard's master (its packets dropped, the writer unaffected); a shard's
// master killed. No read may be stale by more than HeartbeatTimeout, and
// through a failover by that plus how much later the cached client's map
// gave the shard's slots to the new master than the writer's (measured by
// the run): until then the demoted master invalidates only as it
// replicates. The writer is durable, so that no acknowledged write is lost
// with a killed master (a lost write would read as a stale one).
func TestCacheStaleness(t *testing.T) {
	ctx := testkit.Context(t, 180*time.Second)
	cfg := lab.Cluster(3, 1)
	cfg.Partitions = true
	l := lab.New(t, cfg)
	app, err := l.NewClientEndpoint("app")
	if err != nil {
		t.Fatal(err)
	}
	var cachedEvents, writerEvents testkit.Recorder[Event]
	c := newTestClient(t, l, func(o *Config) {
		o.Cache = &clientcache.Config{}
		o.NodeOptions = func(ro *redis.Options) { ro.Dialer = app.Dial }
		o.RefreshInterval = 300 * time.Millisecond
		o.ReadTimeout = 500 * time.Millisecond // reads in flight through the partition
		o.Observer = cachedEvents.Add
	})
	writer := newTestClient(t, l, func(o *Config) { o.Durable = true; o.Observer = writerEvents.Add })
	keys := testkit.StalenessKeys("stale:", 16)
	write := func(ctx context.Context, key string, v int64) error { return writer.Set(ctx, key, v, 0).Err() }
	read := func(ctx context.Context, key string) (string, error) {
		return c.Get(clientcache.WithTTL(ctx, time.Minute), key).Result()
	}
	// changedAt is when a client's map last gave slots to master.
	changedAt := func(r *testkit.Recorder[Event], master string) time.Time {
		var at time.Time
		for _, ev := range r.All() {
			if ev.Kind == EventMasterChanged && ev.Master == master {
				at = ev.Time
			}
		}
		return at
	}
	// shardOfKey is the lab shard serving key now, and its master.
	shardOfKey := func(key string) (int, *lab.Node) {
		m, err := l.SlotOwner(ctx, Slot(key))
		if err != nil {
			t.Fatal(err)
		}
		return labShardOf(t, l, m), m
	}
	var newMaster string // the master a failover scenario promoted
	for _, sc := range []struct {
		name     string
		d        time.Duration
		failover bool
		fault    func()
	}{
		{"no fault", 1500 * time.Millisecond, false, nil},
		{"slots migrated", 2 * time.Second, false, func() {
			from, _ := shardOfKey(keys[0])
			var slots []int
			for _, k := range keys {
				if s, _ := shardOfKey(k); s == from {
					slots = append(slots, Slot(k))
				}
			}
			to := l.ShardIDs()[0]
			if to == from {
				to = l.ShardIDs()[1]
			}
			if err := l.MigrateSlots(ctx, to, slots...); err != nil {
				t.Error(err)
			}
		}},
		{"graceful failover", 2 * time.Second, true, func() {
			shard, _ := shardOfKey(keys[0])
			nm, err := l.ClusterFailover(ctx, shard, lab.FailoverGraceful)
			if err != nil {
				t.Error(err)
				return
			}
			newMaster = nm.Addr()
		}},
		{"partitioned from a master", 2 * time.Second, false, func() {
			_, m := shardOfKey(keys[1])
			if err := l.Partition(lab.Drop, []lab.Endpoint{app}, []lab.Endpoint{m}); err != nil {
				t.Error(err)
			}
			time.Sleep(700 * time.Millisecond)
			if err := l.Heal(); err != nil {
				t.Error(err)
			}
		}},
		// Last: the killed master stays down (the lab stops it by PID).
		{"master killed", 5 * time.Second, true, func() {
			shard, m := shardOfKey(keys[1])
			if err := m.Kill(); err != nil {
				t.Error(err)
				return
			}
			nm, err := l.WaitPromotion(ctx, shard, m)
			if err != nil {
				t.Error(err)
				return
			}
			newMaster = nm.Addr()
		}},
	} {
		newMaster = ""
		// Readers pause between reads: 4 that never did took both CPUs
		// under -race, and starved the package tested beside this one.
		rep, err := testkit.StalenessRun{Keys: keys, Duration: sc.d, Readers: 4, ReadPause: 50 * time.Microsecond,
			Write: write, Read: read, Fault: sc.fault}.Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		limit := clientcache.DefaultHeartbeatTimeout
		if sc.failover && newMaster != "" {
			lag := testkit.SwitchLag(changedAt(&cachedEvents, newMaster), changedAt(&writerEvents, newMaster))
			limit += lag
			t.Logf("%s: the cached client's map moved the slots %v after the writer's", sc.name, lag)
		}
		rep.Check(t, sc.name, limit)
		if sc.name != "master killed" {
			if err := l.WaitSettled(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
}
