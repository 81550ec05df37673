//go:build unix

package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/lab"
)

// One 3×1 cluster lab for the drill and the ring on a cluster URL.
func TestClusterDrillAndRing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l := lab.New(t, lab.Cluster(3, 1))
	t.Logf("server %v, URL %s", l.ServerVersion(), l.Redacted())
	t.Run("drill", func(t *testing.T) { testClusterDrill(t, ctx, l) })
	t.Run("ring", func(t *testing.T) { testClusterRing(t, ctx, l) })
}

func testClusterDrill(t *testing.T, ctx context.Context, l *lab.Lab) {
	url := l.URL()
	out := mustRun(t, ctx, nil, exitUsage, "drill", url, "--failover", "--shard", "3", "--duration", "1s")
	contains(t, out, "--shard 3: the cluster has 3 shards")
	out = mustRun(t, ctx, nil, exitUsage, "drill", "redis://"+l.Node(0).Addr(), "--shard", "1", "--duration", "1s")
	contains(t, out, "--shard needs a cluster URL")

	// The masters in address order, as the drill numbers the shards.
	var masters []string
	for _, s := range l.ShardIDs() {
		masters = append(masters, l.ShardNodes(s)[0].Addr())
	}
	slices.Sort(masters)

	stdout, stderr, code := rediskitSplit(t, ctx, nil, "drill", url, "--failover", "--shard", "1", "--keep-keys",
		"--duration", "4s", "--rate", "400", "--json")
	var rep drillJSON
	decodeJSON(t, stdout+stderr, stdout, &rep)
	t.Logf("drill: exit %d, error %q, duration %.3fs, writes %+v, reads %+v, failover %+v, verification %+v, events %+v; stderr %q",
		code, rep.Error, rep.DurationS, rep.Writes, rep.Reads, rep.Failover, rep.Verification, rep.Events, stderr)
	if !rep.Lab || rep.Shard == nil || *rep.Shard != 1 || rep.ShardMaster != masters[1] ||
		rep.KeyPrefix != "rediskit:drill:{"+rep.RunID+"}:" || rep.DeletedKeys != 0 {
		t.Fatalf("report header %+v (masters %v)", rep, masters)
	}
	opsKey, readKey := rep.KeyPrefix+"ops", rep.KeyPrefix+"read"

	// The failover: CLUSTER FAILOVER went to the shard's one replica, which
	// the cluster promoted and the client followed; the keys' slot is
	// served by it now.
	fo := rep.Failover
	if fo == nil || fo.Error != "" || fo.OldMaster != masters[1] || fo.Replica == "" || fo.NewMaster != fo.Replica ||
		fo.SwitchedAfterS <= 0 || fo.RequestedAtS < 4.0/3 || fo.RequestedAtS >= rep.DurationS/2 {
		t.Fatalf("failover %+v (load %.3fs)", fo, rep.DurationS)
	}
	checkByNode(t, "writes", rep.Writes, fo.OldMaster, fo.NewMaster)
	owner, err := l.SlotOwner(ctx, cluster.Slot(opsKey))
	if err != nil || owner.Addr() != fo.NewMaster {
		t.Fatalf("slot %d of %s: owner %v, %v; want %s", cluster.Slot(opsKey), opsKey, owner, err, fo.NewMaster)
	}
	kinds := map[string]int{}
	for _, ev := range rep.Events {
		kinds[ev.Event]++
	}
	if kinds["failover requested"] != 1 || !slices.ContainsFunc(rep.Events, func(ev drillEvent) bool {
		return ev.Event == "master changed" && strings.Contains(ev.Detail, "old="+fo.OldMaster)
	}) {
		t.Errorf("events %+v", rep.Events)
	}

	// The report against the op list as it is in the cluster: every id in
	// it is a write of the drill, acknowledged or failed, once.
	v := rep.Verification
	if v == nil || v.Acknowledged != rep.Writes.Succeeded || rep.Writes.Succeeded == 0 || rep.Reads.Succeeded == 0 {
		t.Fatalf("verification %+v, writes %+v, reads %+v", v, rep.Writes, rep.Reads)
	}
	cc := redis.NewClusterClient(l.ClusterOptions())
	defer cc.Close()
	list, err := cc.LRange(ctx, opsKey, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	dups := 0
	for _, id := range list {
		if seen[id]++; seen[id] == 2 {
			dups++
		}
	}
	t.Logf("%s in the cluster: %d entries, %d distinct, %d duplicated", opsKey, len(list), len(seen), dups)
	if len(list) != v.Present || dups != v.Duplicates || len(seen) != v.Acknowledged-v.Lost+v.FailedButFound {
		t.Errorf("the list has %d entries, %d distinct, %d duplicated; the report %+v", len(list), len(seen), dups, v)
	}
	// A graceful CLUSTER FAILOVER: nothing applied twice, nothing
	// acknowledged lost, and the drill exits 0.
	if v.Duplicates != 0 || v.Lost != 0 || code != exitOK || !rep.OK {
		t.Errorf("lost %d, duplicates %d, exit %d, ok %v, error %q", v.Lost, v.Duplicates, code, rep.OK, rep.Error)
	}
	if n, err := cc.Del(ctx, opsKey).Result(); err != nil || n != 1 {
		t.Errorf("DEL %s: %d, %v (--keep-keys kept it)", opsKey, n, err)
	}
	if n, err := cc.Del(ctx, readKey).Result(); err != nil || n != 1 {
		t.Errorf("DEL %s: %d, %v (--keep-keys kept it)", readKey, n, err)
	}
}

func testClusterRing(t *testing.T, ctx context.Context, l *lab.Lab) {
	url, key := l.URL(), "cli-cluster-ring"
	join := func() *running {
		return startRediskit(t, ctx, nil, false, "ring", "join", url, "--key", key, "--items", "20")
	}
	a := join()
	a.waitForLast(t, "owns 20 of 20 items (1 node(s) on the ring)")
	b := join()
	b.waitForLast(t, "(2 node(s) on the ring)")
	a.waitForLast(t, "(2 node(s) on the ring)")

	var rj ringJSON
	runJSON(t, ctx, nil, exitOK, &rj, "ring", "print", url, "--key", key)
	if rj.Key != key || len(rj.Nodes) != 2 || len(rj.Replicas) != 32 {
		t.Fatalf("ring %+v", rj)
	}
	// The ring is one key, on the master of its slot.
	owner, err := l.SlotOwner(ctx, cluster.Slot(key))
	if err != nil {
		t.Fatal(err)
	}
	if n, err := owner.Do(ctx, "ZCARD", key).Int(); err != nil || n != 32 {
		t.Errorf("ZCARD %s on %s: %d, %v; want 32", key, owner.Addr(), n, err)
	}
	var oj ownersJSON
	runJSON(t, ctx, nil, exitOK, &oj, "ring", "owner", url, "--key", key, "1", "2", "3")
	for _, o := range oj.Owners {
		if !slices.ContainsFunc(rj.Nodes, func(n ringNodeJSON) bool { return n.ID == o.Owner }) {
			t.Errorf("item %s owned by %q, not a node of the ring %+v", o.Item, o.Owner, rj.Nodes)
		}
	}
	b.interrupt(t)
	a.waitForLast(t, "owns 20 of 20 items (1 node(s) on the ring)")
	a.interrupt(t)
}
