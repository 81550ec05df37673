package lab

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

func clusterCtx(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// TestClusterStarts starts a 3×1 cluster: every node agrees, the slots are
// split evenly over the three shards, what the cluster hands clients is
// the proxies' addresses, and a go-redis cluster client writes and reads
// through them.
func TestClusterStarts(t *testing.T) {
	ctx := clusterCtx(t, 60*time.Second)
	began := time.Now()
	l := New(t, Cluster(3, 1))
	t.Logf("3×1 cluster ready in %v", time.Since(began))
	if got := l.ShardIDs(); fmt.Sprint(got) != "[0 1 2]" {
		t.Fatalf("ShardIDs = %v", got)
	}
	proxied := map[string]bool{}
	for _, n := range l.Nodes() {
		proxied[n.Addr()] = true
	}
	for _, n := range l.Nodes() {
		shards, err := n.ClusterShards(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(shards) != 3 {
			t.Fatalf("%s sees %d shards", n.Name(), len(shards))
		}
		for _, s := range shards {
			for _, sn := range s.Nodes {
				if addr := fmt.Sprintf("%s:%d", sn.IP, sn.Port); !proxied[addr] {
					t.Errorf("%s hands out %s, not a proxy address", n.Name(), addr)
				}
			}
		}
	}
	for s := range 3 {
		m, err := l.ShardMaster(ctx, s)
		if err != nil || m != l.ShardNodes(s)[0] {
			t.Fatalf("shard %d master %v, %v", s, m, err)
		}
	}
	cc := redis.NewClusterClient(l.ClusterOptions())
	defer cc.Close()
	for i := range 100 {
		if err := cc.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := cc.Get(ctx, "k42").Int(); err != nil || v != 42 {
		t.Fatalf("GET k42: %d, %v", v, err)
	}
	began = time.Now()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("closed in %v", time.Since(began))
}

// TestClusterFailoverModes promotes a replica with each form of CLUSTER
// FAILOVER: every node agrees on the new master, and data written before
// is there.
func TestClusterFailoverModes(t *testing.T) {
	ctx := clusterCtx(t, 90*time.Second)
	l := New(t, Cluster(3, 1))
	cc := redis.NewClusterClient(l.ClusterOptions())
	defer cc.Close()
	for _, mode := range []FailoverMode{FailoverGraceful, FailoverForce, FailoverTakeover} {
		old, err := l.ShardMaster(ctx, 1)
		if err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		next, err := l.ClusterFailover(ctx, 1, mode)
		if err != nil {
			t.Fatalf("%v: %v", mode, err)
		}
		t.Logf("%v: %s -> %s agreed in %v", mode, old.Name(), next.Name(), time.Since(began))
		if next == old || next.Shard() != 1 {
			t.Fatalf("%v: new master %s (shard %d), old %s", mode, next.Name(), next.Shard(), old.Name())
		}
		if m, err := l.ShardMaster(ctx, 1); err != nil || m != next {
			t.Fatalf("%v: ShardMaster %v, %v", mode, m, err)
		}
		if r, err := old.Role(ctx); err != nil || r.Role != "slave" {
			t.Fatalf("%v: old master's role %q, %v", mode, r.Role, err)
		}
	}
}

// TestClusterKillAndPauseMaster kills a master, then pauses the next one:
// each time the cluster promotes the shard's replica by itself; the killed
// node restarted rejoins as a replica.
func TestClusterKillAndPauseMaster(t *testing.T) {
	ctx := clusterCtx(t, 90*time.Second)
	l := New(t, Cluster(3, 1))
	old := l.ShardNodes(0)[0]
	if err := old.Kill(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	next, err := l.WaitPromotion(ctx, 0, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s: %s promoted, agreed after %v", old.Name(), next.Name(), time.Since(began))
	if err := old.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.ClusterReady(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := old.Role(ctx); err != nil || r.Role != "slave" {
		t.Fatalf("restarted old master: role %q, %v", r.Role, err)
	}

	paused := l.ShardNodes(2)[0]
	if err := paused.Pause(); err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	next, err = l.WaitPromotion(ctx, 2, paused)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("paused %s: %s promoted, agreed after %v", paused.Name(), next.Name(), time.Since(began))
	if err := paused.Resume(); err != nil {
		t.Fatal(err)
	}
	if err := l.ClusterReady(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestClusterSlotMigration moves a slot step by step: while it is held
// mid-migration, a moved key is answered with ASK naming the target's
// proxy (and served there after ASKING), a key not yet moved is still
// served by the source; after Finish, the source answers MOVED.
func TestClusterSlotMigration(t *testing.T) {
	ctx := clusterCtx(t, 60*time.Second)
	l := New(t, Cluster(3, 0))
	slot, err := l.Node(0).Do(ctx, "CLUSTER", "KEYSLOT", "{m}a").Int()
	if err != nil {
		t.Fatal(err)
	}
	src, err := l.SlotOwner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"{m}a", "{m}b"} {
		if err := src.Do(ctx, "SET", k, "v-"+k).Err(); err != nil {
			t.Fatal(err)
		}
	}
	to := (src.Shard() + 1) % 3
	m, err := l.BeginSlotMigration(ctx, to, slot)
	if err != nil {
		t.Fatal(err)
	}
	if moved, err := m.MoveKeys(ctx, 1); err != nil || moved != 1 {
		t.Fatalf("MoveKeys(1): %d, %v", moved, err)
	}
	dest := m.Dest()
	var movedKey, leftKey string
	for _, k := range []string{"{m}a", "{m}b"} {
		if n, _ := src.Do(ctx, "EXISTS", k).Int(); n == 1 {
			leftKey = k
		} else {
			movedKey = k
		}
	}
	err = src.NewClient().Get(ctx, movedKey).Err()
	if want := fmt.Sprintf("ASK %d %s", slot, dest.Addr()); err == nil || err.Error() != want {
		t.Fatalf("GET %s mid-migration on the source: %v, want %q", movedKey, err, want)
	}
	dc := dest.NewClient()
	defer dc.Close()
	pipe := dc.Pipeline()
	pipe.Do(ctx, "ASKING")
	get := pipe.Get(ctx, movedKey)
	if _, err := pipe.Exec(ctx); err != nil || get.Val() != "v-"+movedKey {
		t.Fatalf("ASKING + GET on the target: %q, %v", get.Val(), err)
	}
	if v, err := src.Do(ctx, "GET", leftKey).Text(); err != nil || v != "v-"+leftKey {
		t.Fatalf("GET %s (not moved yet) on the source: %q, %v", leftKey, v, err)
	}
	if err := m.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	err = src.Do(ctx, "GET", leftKey).Err()
	if want := fmt.Sprintf("MOVED %d %s", slot, dest.Addr()); err == nil || err.Error() != want {
		t.Fatalf("GET after the migration on the source: %v, want %q", err, want)
	}
	if owner, err := l.SlotOwner(ctx, slot); err != nil || owner != dest {
		t.Fatalf("slot %d owner %v, %v; want %s", slot, owner, err, dest.Name())
	}
}

// TestClusterAddRemoveShard adds a shard, gives it slots with keys in
// them, then removes it: its slots and keys go to the other shards, every
// node forgets its nodes, and every key is still served.
func TestClusterAddRemoveShard(t *testing.T) {
	ctx := clusterCtx(t, 90*time.Second)
	l := New(t, Cluster(2, 1))
	cc := redis.NewClusterClient(l.ClusterOptions())
	defer cc.Close()
	// Keys in slots 0-99 (which move to the new shard) and elsewhere.
	var keys []string
	for i := 0; len(keys) < 40; i++ {
		k := fmt.Sprint("k", i)
		slot, err := l.Node(0).Do(ctx, "CLUSTER", "KEYSLOT", k).Int()
		if err != nil {
			t.Fatal(err)
		}
		if slot < 100 || i%50 == 0 {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if err := cc.Set(ctx, k, "v-"+k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	began := time.Now()
	id, err := l.AddShard(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("shard %d added in %v", id, time.Since(began))
	if id != 2 || len(l.ShardNodes(id)) != 2 || len(l.Nodes()) != 6 {
		t.Fatalf("AddShard: id %d, %d nodes of it, %d in all", id, len(l.ShardNodes(id)), len(l.Nodes()))
	}
	slots := make([]int, 0, 100)
	for s := range 100 {
		slots = append(slots, s) // shard 0's first slots
	}
	if err := l.MigrateSlots(ctx, id, slots...); err != nil {
		t.Fatal(err)
	}
	newMaster, err := l.ShardMaster(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := newMaster.Do(ctx, "DBSIZE").Int(); err != nil || n == 0 {
		t.Fatalf("the new shard holds %d keys (%v), want those of slots 0-99", n, err)
	}
	began = time.Now()
	if err := l.RemoveShard(ctx, id); err != nil {
		t.Fatal(err)
	}
	t.Logf("shard %d removed in %v", id, time.Since(began))
	if got := fmt.Sprint(l.ShardIDs()); got != "[0 1]" || len(l.Nodes()) != 4 {
		t.Fatalf("after RemoveShard: shards %s, %d nodes", got, len(l.Nodes()))
	}
	for _, n := range l.Nodes() {
		shards, err := n.ClusterShards(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range shards {
			for _, sn := range s.Nodes {
				if l.nodeByID(sn.ID) == nil {
					t.Errorf("%s still knows the removed node %s", n.Name(), sn.ID)
				}
			}
		}
	}
	cc2 := redis.NewClusterClient(l.ClusterOptions())
	defer cc2.Close()
	for _, k := range keys {
		if v, err := cc2.Get(ctx, k).Result(); err != nil || v != "v-"+k {
			t.Fatalf("GET %s: %q, %v", k, v, err)
		}
	}
}

// TestClusterWithOptions starts clusters with an ACL user, with a password
// only, and over TLS with client certificates (cluster bus and replication
// on TLS too): each is ready, and a go-redis cluster client through the
// lab's options writes and reads; a slot migrates with the credentials.
func TestClusterWithOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"acl", Config{Username: "app", Password: "s3cret pass"}},
		{"password", Config{Password: "only-pass"}},
		{"tls", Config{TLS: true, TLSClientAuth: true, ExtraConfig: []string{"maxmemory-policy noeviction"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := clusterCtx(t, 60*time.Second)
			cfg := tc.cfg
			cfg.Shards, cfg.Replicas = 2, 1
			l := New(t, cfg)
			cc := redis.NewClusterClient(l.ClusterOptions())
			defer cc.Close()
			for i := range 20 {
				if err := cc.Set(ctx, fmt.Sprint("{t}k", i), i, 0).Err(); err != nil {
					t.Fatal(err)
				}
			}
			slot, err := l.Node(0).Do(ctx, "CLUSTER", "KEYSLOT", "{t}k").Int()
			if err != nil {
				t.Fatal(err)
			}
			owner, err := l.SlotOwner(ctx, slot)
			if err != nil {
				t.Fatal(err)
			}
			if err := l.MigrateSlots(ctx, 1-owner.Shard(), slot); err != nil {
				t.Fatal(err)
			}
			if v, err := cc.Get(ctx, "{t}k7").Int(); err != nil || v != 7 {
				t.Fatalf("GET after the migration: %d, %v", v, err)
			}
			u := l.Redacted()
			if !strings.Contains(u, "addr=") || (tc.cfg.Password != "" && strings.Contains(u, tc.cfg.Password)) {
				t.Fatalf("Redacted() = %s: want every seed, no password", u)
			}
		})
	}
}

// TestClusterPartitionMasterInMinority cuts a master and the test's client
// off from the rest (Drop: a silent partition): the majority promotes the
// shard's replica, the old master answers the client CLUSTERDOWN once it
// has not reached a majority for the node timeout, and after Heal every
// node agrees again, the old master a replica of the new one.
func TestClusterPartitionMasterInMinority(t *testing.T) {
	ctx := clusterCtx(t, 90*time.Second)
	l := New(t, Config{Shards: 3, Replicas: 1, Partitions: true})
	app, err := l.NewClientEndpoint("app")
	if err != nil {
		t.Fatal(err)
	}
	old := l.ShardNodes(0)[0]
	rc := app.NewClient(old)
	defer rc.Close()
	key := keyOn(ctx, t, l, old)
	if err := rc.Set(ctx, key, "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	var rest []Endpoint
	for _, n := range l.Nodes() {
		if n != old {
			rest = append(rest, n)
		}
	}
	cut := time.Now()
	if err := l.Partition(Drop, []Endpoint{old, app}, rest); err != nil {
		t.Fatal(err)
	}
	next, err := l.WaitPromotion(ctx, 0, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("majority promoted %s after %v", next.Name(), time.Since(cut))
	var downAfter time.Duration
	for {
		err := rc.Get(ctx, key).Err()
		if err != nil && strings.HasPrefix(err.Error(), "CLUSTERDOWN") {
			downAfter = time.Since(cut)
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the old master in the minority still answers: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("old master answers CLUSTERDOWN %v after the cut (node timeout %v)", downAfter, l.Config().ClusterNodeTimeout)
	if downAfter < l.Config().ClusterNodeTimeout {
		t.Errorf("CLUSTERDOWN after %v, before the node timeout %v", downAfter, l.Config().ClusterNodeTimeout)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := l.ClusterReady(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err := l.ShardMaster(ctx, 0); err != nil || m != next {
		t.Fatalf("after Heal, shard 0's master %v (%v), want %s", m, err, next.Name())
	}
	if r, err := old.Role(ctx); err != nil || r.Role != "slave" {
		t.Fatalf("after Heal, the old master's role %q, %v", r.Role, err)
	}
}

// TestClusterPartitionReplicaFromMaster cuts one replica from its master
// only: its link goes down while the rest of the cluster still serves, and
// after Heal it syncs again and every node agrees.
func TestClusterPartitionReplicaFromMaster(t *testing.T) {
	ctx := clusterCtx(t, 60*time.Second)
	l := New(t, Config{Shards: 3, Replicas: 1, Partitions: true})
	master, replica := l.ShardNodes(1)[0], l.ShardNodes(1)[1]
	if err := l.Partition(Refuse, []Endpoint{master}, []Endpoint{replica}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := replica.Role(ctx)
		if err == nil && r.LinkState != "connected" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica's link still %q (%v) with its master cut off", r.LinkState, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	cc := redis.NewClusterClient(l.ClusterOptions())
	defer cc.Close()
	if err := cc.Set(ctx, "x", "1", 0).Err(); err != nil {
		t.Fatalf("the cluster serves no write with one replica cut off: %v", err)
	}
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := l.ClusterReady(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err := l.ShardMaster(ctx, 1); err != nil || m != master {
		t.Fatalf("shard 1's master %v (%v), want %s unchanged", m, err, master.Name())
	}
}

// keyOn returns a key whose slot master serves.
func keyOn(ctx context.Context, t *testing.T, l *Lab, master *Node) string {
	t.Helper()
	for i := 0; ; i++ {
		k := fmt.Sprint("key", i)
		slot, err := master.Do(ctx, "CLUSTER", "KEYSLOT", k).Int()
		if err != nil {
			t.Fatal(err)
		}
		if owner, err := l.SlotOwner(ctx, slot); err != nil || owner == master {
			if err != nil {
				t.Fatal(err)
			}
			return k
		}
	}
}

// TestClusterTLSPartitions starts a TLS cluster with Partitions (every node
// on an address of its own, each in the certificate), adds a shard, and
// checks a client endpoint's TLS client reaches a master through its
// proxy.
func TestClusterTLSPartitions(t *testing.T) {
	ctx := clusterCtx(t, 60*time.Second)
	l := New(t, Config{Shards: 2, Replicas: 1, Partitions: true, TLS: true})
	if _, err := l.AddShard(ctx); err != nil {
		t.Fatal(err)
	}
	app, err := l.NewClientEndpoint("app")
	if err != nil {
		t.Fatal(err)
	}
	if ip := app.IP().As4(); ip[3] < hostBase+clusterHostSpan {
		t.Fatalf("client endpoint at %s, among the nodes' addresses", app.IP())
	}
	for _, n := range l.Nodes() {
		rc := app.NewClient(n)
		err := rc.Ping(ctx).Err()
		_ = rc.Close()
		if err != nil {
			t.Fatalf("%s (%s) over TLS from the app endpoint: %v", n.Name(), n.IP(), err)
		}
	}
	cc := redis.NewClusterClient(app.ClusterOptions())
	defer cc.Close()
	if err := cc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("cluster client from the app endpoint: %v", err)
	}
	if _, err := l.Master(ctx); err == nil {
		t.Fatal("Master on a cluster: no error")
	}
}
