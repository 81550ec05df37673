package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestDurableReplicas: the count of the package documentation, from a
// master's ROLE and CLUSTER SHARDS and the merged map's replicas.
func TestDurableReplicas(t *testing.T) {
	const m, r1, r2, r3 = "127.0.0.1:7000", "127.0.0.1:7001", "127.0.0.1:7002", "127.0.0.1:7003"
	node := func(id, addr, role, health string) redis.Node {
		host, port, _ := strings.Cut(addr, ":")
		var p int64
		_, _ = fmt.Sscan(port, &p)
		return redis.Node{ID: id, Endpoint: host, IP: host, Port: p, Role: role, Health: health}
	}
	master := func(replicas ...redis.Node) []redis.ClusterShard {
		return []redis.ClusterShard{
			{Nodes: append([]redis.Node{node("m", m, "master", "online")}, replicas...)},
			{Nodes: []redis.Node{node("o", "127.0.0.1:8000", "master", "online"), node("or", "127.0.0.1:8001", "replica", "online")}},
		}
	}
	role := func(connected ...string) redisinfo.Role {
		r := redisinfo.Role{Role: "master"}
		for _, a := range connected {
			r.Replicas = append(r.Replicas, redisinfo.ReplicaOffset{Addr: a})
		}
		return r
	}
	for _, tc := range []struct {
		name                   string
		role                   redisinfo.Role
		shards                 []redis.ClusterShard
		mapped                 []string
		counted, unconfirmable []string
		err                    string
	}{
		{name: "every replica connected", role: role(r1, r2),
			shards: master(node("a", r1, "replica", "online"), node("b", r2, "replica", "online")), mapped: []string{r1, r2},
			counted: []string{r1, r2}},
		{name: "a replica down, not yet failed: counted, unconfirmable", role: role(r1),
			shards: master(node("a", r1, "replica", "online"), node("b", r2, "replica", "online")), mapped: []string{r1},
			counted: []string{r1, r2}, unconfirmable: []string{r2}},
		{name: "a replica flagged failed: left out", role: role(r1),
			shards: master(node("a", r1, "replica", "online"), node("b", r2, "replica", "fail")), mapped: []string{r1},
			counted: []string{r1}},
		{name: "Redis 7.2's failed spelling", role: role(r1),
			shards:  master(node("a", r1, "replica", "online"), node("b", r2, "replica", "failed")),
			counted: []string{r1}},
		{name: "a loading replica counts", role: role(r1),
			shards:  master(node("a", r1, "replica", "online"), node("b", r2, "replica", "loading")),
			counted: []string{r1, r2}, unconfirmable: []string{r2}},
		{name: "connected but failed per the master: still counted (WAIT counts it)", role: role(r1, r2),
			shards:  master(node("a", r1, "replica", "online"), node("b", r2, "replica", "fail")),
			counted: []string{r1, r2}},
		{name: "a replica the master has not heard of, healthy in the map", role: role(r1),
			shards: master(node("a", r1, "replica", "online")), mapped: []string{r1, r3},
			counted: []string{r1, r3}, unconfirmable: []string{r3}},
		{name: "no replica", role: role(), shards: master()},
		{name: "another shard's replicas are not counted", role: role(r1),
			shards: master(node("a", r1, "replica", "online")), counted: []string{r1}},
		{name: "demoted", role: redisinfo.Role{Role: "slave"}, shards: master(), err: "not a master"},
		{name: "no own shard", role: role(), shards: master()[1:], err: "does not list itself"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			counted, unconfirmable, err := durableReplicas(m, "m", tc.role, tc.shards, tc.mapped, false)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !slices.Equal(counted, tc.counted) || !slices.Equal(unconfirmable, tc.unconfirmable) {
				t.Errorf("counted %v unconfirmable %v err %v; want %v and %v", counted, unconfirmable, err, tc.counted, tc.unconfirmable)
			}
		})
	}
	// By address when the map has no ID for the master (a shard made
	// from a MOVED).
	if counted, _, err := durableReplicas(m, "", role(r1), master(node("a", r1, "replica", "online")), nil, false); err != nil || !slices.Equal(counted, []string{r1}) {
		t.Errorf("by address: %v, %v", counted, err)
	}
}

// TestConfirmCounts reads WAIT and WAITAOF replies as durableVerdict does
// (routing.ConfirmCounts).
func TestConfirmCounts(t *testing.T) {
	ctx := context.Background()
	wait := func(n int64, err error) redis.Cmder {
		c := redis.NewIntCmd(ctx, "wait", 1, 1)
		c.SetVal(n)
		c.SetErr(err)
		return c
	}
	waitaof := func(v ...int64) redis.Cmder {
		c := redis.NewIntSliceCmd(ctx, "waitaof", 1, 1, 1)
		c.SetVal(v)
		return c
	}
	boom := errors.New("boom")
	for _, tc := range []struct {
		name    string
		confirm []redis.Cmder
		acked   int
		local   bool
		err     error
	}{
		{"WAIT 2", []redis.Cmder{wait(2, nil)}, 2, true, nil},
		{"WAIT failed", []redis.Cmder{wait(0, boom)}, 0, false, boom},
		{"WAITAOF fewer than WAIT", []redis.Cmder{wait(2, nil), waitaof(1, 1)}, 1, true, nil},
		{"WAITAOF more than WAIT", []redis.Cmder{wait(1, nil), waitaof(1, 2)}, 1, true, nil},
		{"master did not fsync", []redis.Cmder{wait(2, nil), waitaof(0, 2)}, 2, false, nil},
		{"short WAITAOF", []redis.Cmder{wait(2, nil), waitaof(1)}, 0, false, nil},
	} {
		acked, local, err := routing.ConfirmCounts(tc.confirm)
		if acked != tc.acked || local != tc.local || !errors.Is(err, tc.err) {
			t.Errorf("%s: %d %v %v; want %d %v %v", tc.name, acked, local, err, tc.acked, tc.local, tc.err)
		}
	}
}

// TestNotDurableErrorSays: each kind of NotDurableError says what
// happened, whether the write ran and what to do, and matches
// ErrNotDurable and its cause.
func TestNotDurableErrorSays(t *testing.T) {
	aof := fmt.Errorf("%w: it has no WAITAOF", ErrAOFUnavailable)
	for _, tc := range []struct {
		e    *NotDurableError
		want []string
	}{
		{&NotDurableError{Master: "m:1", Slot: 7, NotSent: true}, []string{"m:1", "slot 7", "no replica", "not sent"}},
		{&NotDurableError{Master: "m:1", Slot: 7, NotSent: true, Required: 2, Replicas: []string{"a:1", "b:1"}, Unconfirmable: []string{"b:1"}},
			[]string{"2 replicas [a:1 b:1]", "[b:1] cannot", "not sent"}},
		{&NotDurableError{Master: "m:1", Slot: 7, NotSent: true, AOF: true, Cause: aof}, []string{"WAITAOF", "not sent"}},
		{&NotDurableError{Master: "m:1", Slot: 7, MayHaveExecuted: true, Required: 2, Acked: 1, Replicas: []string{"a:1", "b:1"}, Timeout: time.Second},
			[]string{"1 of 2 replicas [a:1 b:1]", "within 1s", "executed", "check before re-running"}},
		{&NotDurableError{Master: "m:1", Slot: 7, MayHaveExecuted: true, AOF: true, Required: 1, Replicas: []string{"a:1"}},
			[]string{"did not fsync", "0 of 1", "check before re-running"}},
	} {
		msg := tc.e.Error()
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q lacks %q", msg, w)
			}
		}
		err := fmt.Errorf("wrapped: %w", tc.e)
		var nde *NotDurableError
		if !errors.Is(err, ErrNotDurable) || !errors.As(err, &nde) || !isNotDurable(err) {
			t.Errorf("%v: not matched as a NotDurableError", err)
		}
		if tc.e.Cause != nil && !errors.Is(err, ErrAOFUnavailable) {
			t.Errorf("%v does not unwrap to its cause", err)
		}
	}
}

// TestDurableOptions: DurableTimeout's default follows ReadTimeout, and
// one whose WAIT reply could not come within ReadTimeout is refused with a
// *ConfigError naming the field (the rule itself: routing.DurableTimeout).
func TestDurableOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Config
		want time.Duration
		err  string
	}{
		{"default", Config{}, DefaultDurableTimeout, ""},
		{"short read timeout", Config{ReadTimeout: time.Second}, 500 * time.Millisecond, ""},
		{"short read timeout, AOF", Config{ReadTimeout: 900 * time.Millisecond, DurableAOF: true}, 300 * time.Millisecond, ""},
		{"set", Config{DurableTimeout: 200 * time.Millisecond}, 200 * time.Millisecond, ""},
		{"set close to the read timeout", Config{ReadTimeout: time.Second, DurableTimeout: 800 * time.Millisecond}, 800 * time.Millisecond, ""},
		{"negative", Config{DurableTimeout: -1}, 0, "cannot be negative"},
		{"too long for the read timeout", Config{ReadTimeout: time.Second, DurableTimeout: time.Second}, 0, "must be shorter than ReadTimeout"},
		{"too long for WAIT and WAITAOF", Config{ReadTimeout: time.Second, DurableTimeout: 500 * time.Millisecond, DurableAOF: true}, 0, "shorter than half of ReadTimeout"},
	} {
		tc.o.Addrs = []string{"127.0.0.1:1"}
		o, err := tc.o.withDefaults()
		var ce *ConfigError
		switch {
		case tc.err != "" && (!errors.As(err, &ce) || ce.Field != "DurableTimeout" || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want a *ConfigError for DurableTimeout saying %q", tc.name, err, tc.err)
		case tc.err == "" && (err != nil || o.DurableTimeout != tc.want):
			t.Errorf("%s: %v, %v; want %v", tc.name, o.DurableTimeout, err, tc.want)
		}
	}
}

// durableTally is what a workload's writes came to, with the durable
// refusals apart and the latency of the acknowledged writes.
type durableTally struct {
	partitionTally
	notSent, notConfirmed int
	p50, p99              time.Duration
}

func tallyDurable(ops []writeOp, seen map[string]int, refused time.Time, cutTags []string) durableTally {
	tl := durableTally{partitionTally: tallyPartition(ops, seen, refused, cutTags)}
	var lat []time.Duration
	for _, op := range ops {
		var nde *NotDurableError
		switch {
		case op.err == nil:
			lat = append(lat, op.end.Sub(op.began))
		case errors.As(op.err, &nde) && nde.NotSent:
			tl.notSent++
		case errors.As(op.err, &nde):
			tl.notConfirmed++
		}
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		tl.p50, tl.p99 = lat[len(lat)/2], lat[len(lat)*99/100]
	}
	return tl
}

// waitDurableWrite pushes to list through c until a durable write is
// acknowledged, within d, and returns how many failed as not durable.
// The probes' ids are in no workload's tally.
func waitDurableWrite(ctx context.Context, t *testing.T, c *Client, list string, d time.Duration) int {
	t.Helper()
	refusals := 0
	testkit.WaitFor(t, d, "a durable write to "+list, func() bool {
		// Each id its own: a probe that ran and was not confirmed is
		// in the list too, and no workload id must look written twice.
		err := c.RPush(WithDurable(ctx, true), list, fmt.Sprintf("probe:%d:%d", time.Now().UnixNano(), refusals)).Err()
		if isNotDurable(err) {
			refusals++
		}
		if err != nil {
			time.Sleep(10 * time.Millisecond)
		}
		return err == nil
	})
	return refusals
}

// logDurable logs the durable and the plain client's figures side by
// side, in a form for BENCHMARKS.md.
func logDurable(t *testing.T, what string, durable, plain durableTally) {
	t.Helper()
	for _, r := range []struct {
		name string
		tl   durableTally
	}{{"durable", durable}, {"not durable", plain}} {
		t.Logf("| %s | %s | acknowledged %d | lost %d | duplicates %d | refused unsent %d | ran, not confirmed %d | p50 %v | p99 %v | errors: %s |",
			what, r.name, r.tl.acked, r.tl.lost, r.tl.dups, r.tl.notSent, r.tl.notConfirmed,
			r.tl.p50.Round(10*time.Microsecond), r.tl.p99.Round(10*time.Microsecond), kindsLine(r.tl.kinds))
	}
}

// checkDurable fails the test unless the durable client lost nothing it
// acknowledged, wrote nothing twice, typed every error and said truly
// which writes did not run.
func checkDurable(t *testing.T, what string, tl durableTally) {
	t.Helper()
	if tl.lost != 0 {
		t.Errorf("%s: %d acknowledged durable writes lost", what, tl.lost)
	}
	if tl.dups != 0 {
		t.Errorf("%s: %d ids written twice", what, tl.dups)
	}
	if len(tl.untyped) > 0 {
		t.Errorf("%s: %d errors of no type of the package, the first: %v", what, len(tl.untyped), tl.untyped[0])
	}
	for _, id := range tl.ranButSaidNot {
		t.Errorf("%s: write %s failed saying it did not run, and it is in its list", what, id)
	}
	if tl.acked == 0 {
		t.Errorf("%s: no durable write acknowledged", what)
	}
}

// tagsOnShards returns per shards hash tags each, and the lists of a
// suffix under them.
func tagsOnShards(ctx context.Context, t *testing.T, l *lab.Lab, per int) (tags []string, byShard map[int][]string) {
	t.Helper()
	byShard = map[int][]string{}
	for i := 0; len(tags) < per*len(l.ShardIDs()); i++ {
		tag := fmt.Sprintf("{d%d}", i)
		owner, err := l.SlotOwner(ctx, Slot(tag))
		if err != nil {
			t.Fatal(err)
		}
		if len(byShard[owner.Shard()]) == per {
			continue
		}
		byShard[owner.Shard()] = append(byShard[owner.Shard()], tag)
		tags = append(tags, tag)
	}
	return tags, byShard
}

func suffixed(tags []string, suffix string) []string {
	out := make([]string, len(tags))
	for i, tag := range tags {
		out[i] = tag + suffix
	}
	return out
}

// sideBySide starts partitionWriters through a durable client (lists
// tag+"dur") and a plain one (tag+"pl"), until stop, and lets them run
// half a second; it returns the durable client.
func sideBySide(ctx context.Context, t *testing.T, l *lab.Lab, tags []string, stop *atomic.Bool) (*Client, <-chan []writeOp, <-chan []writeOp) {
	t.Helper()
	durable := newTestClient(t, l, func(o *Config) { o.Durable = true })
	plain := newTestClient(t, l, nil)
	dDone := partitionWriters(ctx, durable, "dur", suffixed(tags, "dur"), stop)
	pDone := partitionWriters(ctx, plain, "pl", suffixed(tags, "pl"), stop)
	time.Sleep(500 * time.Millisecond)
	return durable, dDone, pDone
}

// TestDurableThroughFailovers runs durable writes and plain ones side by
// side (two clients, lists of their own on every shard) through a CLUSTER
// FAILOVER of one shard and a SIGKILL of another's master, on a cluster of
// one replica per master and of two: no acknowledged durable write is
// lost, none written twice, every error typed. With one replica the
// killed shard's promoted master has none left: its durable writes are
// refused unsent. With two they resume on it.
func TestDurableThroughFailovers(t *testing.T) {
	for _, replicas := range []int{1, 2} {
		t.Run(fmt.Sprintf("replicas=%d", replicas), func(t *testing.T) {
			ctx := testkit.Context(t, 180*time.Second)
			l := lab.New(t, lab.Cluster(3, replicas))
			t.Logf("server %s", l.ServerVersion())
			tags, byShard := tagsOnShards(ctx, t, l, 2)
			var stop atomic.Bool
			durable, dDone, pDone := sideBySide(ctx, t, l, tags, &stop)

			next, _, promoted := failoverThenKill(ctx, t, l, time.Second)
			// With two replicas the other one follows the new master and
			// durable writes resume there: wait for one.
			probeRefusals := 0 // counted in Stats.WritesNotDurable too
			if replicas == 2 {
				probeRefusals = waitDurableWrite(ctx, t, durable, byShard[2][0]+"dur", 20*time.Second)
				t.Logf("durable writes resumed on %s %v after the promotion was agreed", next.Name(), time.Since(promoted).Round(time.Millisecond))
			} else {
				time.Sleep(2 * time.Second)
			}
			stop.Store(true)
			dOps, pOps := <-dDone, <-pDone
			seen := readLists(ctx, t, l, append(suffixed(tags, "dur"), suffixed(tags, "pl")...))
			var far time.Time // no "refused" moment here: every lost write counts
			dTally, pTally := tallyDurable(dOps, seen, far, nil), tallyDurable(pOps, seen, far, nil)
			logDurable(t, fmt.Sprintf("3 shards × %d replicas, CLUSTER FAILOVER + SIGKILL (%s)", replicas, l.ServerVersion()), dTally, pTally)
			checkDurable(t, "durable", dTally)
			if replicas == 1 {
				// The killed shard's new master has no replica: every durable
				// write to it begun once the client had seen the promotion
				// (a refresh later) is refused unsent.
				seenBy := promoted.Add(time.Second)
				for _, op := range dOps {
					if op.began.Before(seenBy) || !slices.ContainsFunc(byShard[2], func(tag string) bool { return strings.HasPrefix(op.list, tag) }) {
						continue
					}
					var nde *NotDurableError
					if !errors.As(op.err, &nde) || !nde.NotSent {
						t.Errorf("durable write %s to the replica-less shard %v after the promotion: %v; want refused unsent", op.id, op.began.Sub(promoted), op.err)
						break
					}
				}
			}
			if st, saw := durable.Stats(), dTally.notSent+dTally.notConfirmed+probeRefusals; st.WritesNotDurable != uint64(saw) {
				t.Errorf("Stats.WritesNotDurable %d, the workload and the probe saw %d", st.WritesNotDurable, saw)
			}
		})
	}
}

// TestDurableMinorityPartition: the TestMinorityPartition shape (a master
// cut off from every other node, its replica included, while clients
// still reach it; its replica promoted; healed) with durable writes and
// plain ones side by side: the plain client may lose what the minority
// master acknowledged, the durable one loses nothing, and its durable
// writes resume on the cut shard's new master once the old one has
// rejoined as its replica.
func TestDurableMinorityPartition(t *testing.T) {
	ctx := testkit.Context(t, 180*time.Second)
	l := lab.New(t, lab.Config{Shards: 3, Replicas: 1, Partitions: true})
	t.Logf("server %s", l.ServerVersion())
	cut := l.ShardNodes(0)[0]
	tags, byShard := tagsOnShards(ctx, t, l, 2)
	cutTags := byShard[cut.Shard()]
	var stop atomic.Bool
	durable, dDone, pDone := sideBySide(ctx, t, l, tags, &stop)

	mr := cutMinority(ctx, t, l, cut)
	refused, healed := mr.refused, mr.healed
	waitDurableWrite(ctx, t, durable, cutTags[0]+"dur", 30*time.Second)
	t.Logf("durable writes on the cut shard resumed %v after the heal", time.Since(healed).Round(time.Millisecond))
	stop.Store(true)
	dOps, pOps := <-dDone, <-pDone
	seen := readLists(ctx, t, l, append(suffixed(tags, "dur"), suffixed(tags, "pl")...))
	dTally, pTally := tallyDurable(dOps, seen, refused, cutTags), tallyDurable(pOps, seen, refused, cutTags)
	logDurable(t, fmt.Sprintf("3 shards × 1 replica, minority partition (%s)", l.ServerVersion()), dTally, pTally)
	t.Logf("not durable: lost %d of which %d on the other shards", pTally.lost, pTally.lostElsewhere)
	checkDurable(t, "durable", dTally)
}

// TestDurableBlackHoledReplica: a replica silent to everyone (its client
// proxy swallowing, cut off from every node). A replica down and not yet
// flagged FAIL still counts (it could be alive and win an election when
// it returns): no durable write of its shard is acknowledged before the
// node timeout has passed since the cut, the earliest the cluster can
// flag it; they fail typed (run and not confirmed while the master still
// streams to it, then refused unsent). The other shards' durable writes
// go on unaffected. With one replica per master the shard has none left
// once the replica is flagged and dropped: refused unsent throughout;
// with two, durable writes resume on the other replica. Restored and
// healed, the shard's durable writes resume.
func TestDurableBlackHoledReplica(t *testing.T) {
	for _, replicas := range []int{1, 2} {
		t.Run(fmt.Sprintf("replicas=%d", replicas), func(t *testing.T) {
			ctx := testkit.Context(t, 120*time.Second)
			l := lab.New(t, lab.Config{Shards: 3, Replicas: replicas, Partitions: true})
			t.Logf("server %s", l.ServerVersion())
			tags, byShard := tagsOnShards(ctx, t, l, 1)
			c := newTestClient(t, l, func(o *Config) { o.Durable = true })
			for _, tag := range tags {
				if err := c.RPush(ctx, tag+"bh", "before").Err(); err != nil {
					t.Fatalf("durable write before the fault: %v", err)
				}
			}
			rep := l.ShardNodes(0)[1]
			if rep.Shard() != 0 {
				t.Fatalf("%s is not of shard 0", rep.Name())
			}
			hitTag := byShard[0][0]
			rep.BlackHole()
			isolate(t, l, rep)
			holed := time.Now()
			type tally struct {
				ok, notSent, notConfirmed, other int
				firstOK                          time.Duration // since the cut, of the first acknowledged write's start
			}
			var hit, rest tally
			var firstOther error
			for time.Since(holed) < 8*time.Second {
				for _, tag := range tags {
					began := time.Now()
					err := c.RPush(ctx, tag+"bh", "x").Err()
					tl := &rest
					if tag == hitTag {
						tl = &hit
					}
					var nde *NotDurableError
					switch {
					case err == nil:
						if tl.ok == 0 {
							tl.firstOK = began.Sub(holed)
						}
						tl.ok++
					case errors.As(err, &nde) && nde.NotSent:
						tl.notSent++
					case errors.As(err, &nde):
						tl.notConfirmed++
					default:
						tl.other++
						if firstOther == nil {
							firstOther = err
						}
					}
				}
			}
			nodeTimeout := l.Config().ClusterNodeTimeout
			t.Logf("replica %s black-holed (node timeout %v): its shard: ok %d (the first begun %v after the cut), refused unsent %d, ran not confirmed %d, other %d; the other shards: ok %d, refused unsent %d, ran not confirmed %d, other %d; counted now %v",
				rep.Name(), nodeTimeout, hit.ok, hit.firstOK.Round(time.Millisecond), hit.notSent, hit.notConfirmed, hit.other,
				rest.ok, rest.notSent, rest.notConfirmed, rest.other, c.Stats().DurableReplicas)
			if hit.other != 0 || hit.notSent+hit.notConfirmed == 0 {
				t.Errorf("durable writes of the black-holed replica's shard: %+v; want NotDurableErrors only (first other: %v)", hit, firstOther)
			}
			if hit.ok > 0 && hit.firstOK < nodeTimeout {
				t.Errorf("a durable write of the shard begun %v after the cut was acknowledged, before the node timeout %v: the replica, down and not flagged, was not counted", hit.firstOK, nodeTimeout)
			}
			switch {
			case replicas == 1 && hit.ok != 0:
				t.Errorf("%d durable writes acknowledged on a shard whose one replica is cut off", hit.ok)
			case replicas == 2 && hit.ok == 0:
				t.Errorf("no durable write of the shard acknowledged by its other replica once the cut one was flagged")
			}
			if rest.ok == 0 || rest.notSent+rest.notConfirmed+rest.other != 0 {
				t.Errorf("durable writes of the other shards: %+v; want all acknowledged (first other: %v)", rest, firstOther)
			}
			rep.Restore()
			if err := l.Heal(); err != nil {
				t.Fatal(err)
			}
			healed := time.Now()
			waitDurableWrite(ctx, t, c, hitTag+"bh", 30*time.Second)
			t.Logf("durable writes of the shard acknowledged %v after the heal", time.Since(healed).Round(time.Millisecond))
		})
	}
}

// TestDurablePipelinesAndTransactions: a durable pipeline across shards
// confirms each master's part, a transaction and Watch are confirmed on
// their connection, and auto-pipelined durable writes share one WAIT per
// batch (fewer WAITs than writes on the master), each acknowledged.
// WithDurable(false) turns a call's durability off.
func TestDurablePipelinesAndTransactions(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	c := newTestClient(t, l, func(o *Config) { o.Durable = true })
	waitsOn := func(nodes ...*lab.Node) int {
		var sum int
		for _, n := range nodes {
			info, err := n.Info(ctx, "commandstats")
			if err != nil {
				t.Fatal(err)
			}
			var calls int
			if v, ok := info["cmdstat_wait"]; ok {
				_, _ = fmt.Sscanf(v, "calls=%d", &calls)
			}
			sum += calls
		}
		return sum
	}
	var masters []*lab.Node
	for _, shard := range l.ShardIDs() {
		m, err := l.ShardMaster(ctx, shard)
		if err != nil {
			t.Fatal(err)
		}
		masters = append(masters, m)
	}
	// WAITs sent by the work since the last call.
	last := waitsOn(masters...)
	sent := func() int { n := waitsOn(masters...); d := n - last; last = n; return d }
	if err := c.Set(ctx, "{one}", 1, 0).Err(); err != nil {
		t.Fatalf("durable SET: %v", err)
	}
	if n := sent(); n != 1 {
		t.Errorf("a durable SET sent %d WAITs, want 1", n)
	}
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 12 {
			p.Incr(ctx, fmt.Sprintf("{p%d}n", i))
			p.Get(ctx, fmt.Sprintf("{p%d}n", i))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("durable pipeline: %v", err)
	}
	for _, q := range cmds {
		if q.Err() != nil {
			t.Errorf("%v: %v", q.Args(), q.Err())
		}
	}
	if n := sent(); n != len(masters) {
		t.Errorf("a durable pipeline over %d masters sent %d WAITs, want one per master", len(masters), n)
	}
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "{tx}a")
		p.Incr(ctx, "{tx}b")
		return nil
	}); err != nil {
		t.Fatalf("durable transaction: %v", err)
	}
	if err := c.Watch(ctx, func(tx *redis.Tx) error {
		_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Incr(ctx, "{tx}a"); return nil })
		return err
	}, "{tx}a"); err != nil {
		t.Fatalf("durable Watch: %v", err)
	}
	if n := sent(); n != 2 {
		t.Errorf("a durable transaction and a durable Watch sent %d WAITs, want 2", n)
	}
	if v, err := c.Get(ctx, "{tx}a").Int(); err != nil || v != 2 {
		t.Errorf("{tx}a = %d, %v; want 2", v, err)
	}

	// Auto-pipelined: count the WAITs on the key's master.
	ac := newTestClient(t, l, func(o *Config) { o.Durable, o.AutoPipeline = true, true })
	owner, err := l.SlotOwner(ctx, Slot("{ap}"))
	if err != nil {
		t.Fatal(err)
	}
	waits := func() int { return waitsOn(owner) }
	if err := ac.Set(ctx, "{ap}warm", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := waits()
	const writers, each = 32, 20
	errs := make(chan error, writers)
	for g := range writers {
		go func() {
			for i := range each {
				if err := ac.RPush(ctx, "{ap}list", fmt.Sprintf("%d:%d", g, i)).Err(); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range writers {
		if err := <-errs; err != nil {
			t.Errorf("auto-pipelined durable write: %v", err)
		}
	}
	got := waits() - before
	n, err := c.LLen(ctx, "{ap}list").Result()
	t.Logf("auto-pipelined durable writes: %d acknowledged (list length %d, %v) with %d WAITs on %s", writers*each, n, err, got, owner.Name())
	if n != writers*each {
		t.Errorf("list length %d, want %d", n, writers*each)
	}
	if got <= 0 || got >= writers*each {
		t.Errorf("%d WAITs for %d auto-pipelined durable writes: want fewer than one a write", got, writers*each)
	}

	// Per call: WithDurable(false) sends no WAIT.
	before = waits()
	if err := ac.Set(WithDurable(ctx, false), "{ap}plain", 1, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got := waits() - before; got != 0 {
		t.Errorf("a write WithDurable(false) sent %d WAITs", got)
	}
}

// TestDurableAOF: with appendonly on every node, DurableAOF writes are
// confirmed by WAITAOF (Redis and Valkey 7.2 and newer); a server without
// WAITAOF refuses them unsent, saying so (ErrAOFUnavailable); a master
// whose AOF is turned off fails the next write as not confirmed, then
// refuses them unsent until it is back.
func TestDurableAOF(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	cfg := lab.Cluster(3, 1)
	cfg.ExtraConfig = []string{"appendonly yes", "appendfsync always"}
	l := lab.New(t, cfg)
	c := newTestClient(t, l, func(o *Config) { o.Durable, o.DurableAOF = true, true })
	owner, err := l.SlotOwner(ctx, Slot("{aof}"))
	if err != nil {
		t.Fatal(err)
	}
	err = c.Set(ctx, "{aof}k", 1, 0).Err()
	if !l.ServerVersion().AtLeast(7, 2) {
		var nde *NotDurableError
		t.Logf("%s has no WAITAOF: %v", l.ServerVersion(), err)
		if !errors.As(err, &nde) || !nde.NotSent || !errors.Is(err, ErrAOFUnavailable) {
			t.Fatalf("DurableAOF write on %s: %v; want refused unsent with ErrAOFUnavailable", l.ServerVersion(), err)
		}
		if v, err := owner.Do(ctx, "EXISTS", "{aof}k").Int(); err != nil || v != 0 {
			t.Errorf("the refused write ran: EXISTS %d, %v", v, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("DurableAOF write: %v", err)
	}
	var lat []time.Duration
	for i := range 40 {
		began := time.Now()
		if err := c.Set(ctx, "{aof}k", i, 0).Err(); err != nil {
			t.Fatalf("DurableAOF write %d: %v", i, err)
		}
		lat = append(lat, time.Since(began))
	}
	slices.Sort(lat)
	t.Logf("DurableAOF writes on %s: p50 %v, max %v", l.ServerVersion(), lat[len(lat)/2], lat[len(lat)-1])
	if err := owner.Do(ctx, "CONFIG", "SET", "appendonly", "no").Err(); err != nil {
		t.Fatal(err)
	}
	first := c.Set(ctx, "{aof}k", "off", 0).Err()
	second := c.Set(ctx, "{aof}k", "off2", 0).Err()
	t.Logf("with the master's AOF off: %v; then %v", first, second)
	var nde *NotDurableError
	if !errors.As(first, &nde) || nde.NotSent {
		t.Errorf("first DurableAOF write after the AOF was turned off: %v; want run and not confirmed", first)
	}
	if !errors.As(second, &nde) || !nde.NotSent || !errors.Is(second, ErrAOFUnavailable) {
		t.Errorf("second DurableAOF write: %v; want refused unsent with ErrAOFUnavailable", second)
	}
	if err := owner.Do(ctx, "CONFIG", "SET", "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "DurableAOF writes to resume", func() bool {
		time.Sleep(50 * time.Millisecond)
		return c.Set(ctx, "{aof}k", "on", 0).Err() == nil
	})
}
