//go:build unix

package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/internal/testkit/errplace"
	"github.com/rediskit/rediskit/lab"
)

// The random fault test of the Cluster client: sentinel's TestRandomFaults
// for a cluster (the settings, the generator and the loop are
// internal/testkit's).

// faultOps are the three ways the writers write: a single RPUSH, a
// pipeline of RPUSHes to three slots (three shards at the start), and a
// MULTI/EXEC of two RPUSHes to one slot.
var faultOps = []string{"single", "pipeline", "multi"}

// faultWrite is what a writer tried to add in one command (one id) or
// one transaction (its ids: all or none), and what came of it.
type faultWrite struct {
	ids []string
	err error
}

// faultTally is what one mode's writes came to, op by op.
type faultTally struct {
	mu    sync.Mutex
	calls int
	// acked are the ids acknowledged; saidNotRun those whose error said
	// the write did not run.
	acked, saidNotRun []string
	// ackedBy counts the ids acknowledged by op.
	ackedBy map[string]int
	// kinds counts errors by "op: kind" (errorKind: the typed error and
	// whether it may have run); untyped those errors.As cannot place, by
	// "op: class", with an example of each.
	kinds, untyped map[string]int
	untypedExample map[string]string
	// late are the calls that returned more than 100 ms past their
	// deadline; worst the longest past it.
	late  int
	worst time.Duration
	// worstCall says which call that was: its op, when it began, its
	// error.
	worstCall string
	// secretLeaks are the errors that quote the password.
	secretLeaks int
}

// placedError reports whether errors.As places err (errplace.Place): one
// of the package's typed errors, or the command's own answer (not a
// refusal of the cluster's, which the package must wrap with the node and
// slot, nor a bare timeout, context or network error).
func placedError(err error) bool { return errplace.Place(err, typedOutcome).Placed }

// record adds the outcome of one call of op that began at began and took
// took, bounded by deadline.
func (ft *faultTally) record(op string, writes []faultWrite, began time.Time, took, deadline time.Duration, password string) {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	ft.calls++
	over := took - deadline
	if over > ft.worst {
		ft.worst = over
		var errs []error
		for _, w := range writes {
			errs = append(errs, w.err)
		}
		ft.worstCall = fmt.Sprintf("%s begun %s: %v", op, began.Format("15:04:05.000"), errors.Join(errs...))
	}
	if over > 100*time.Millisecond {
		ft.late++
	}
	for _, w := range writes {
		if w.err == nil {
			ft.acked = append(ft.acked, w.ids...)
			ft.ackedBy[op] += len(w.ids)
			continue
		}
		if strings.Contains(w.err.Error(), password) {
			ft.secretLeaks++
		}
		ft.kinds[op+": "+errorKind(w.err)]++
		if !placedError(w.err) {
			k := op + ": " + errorKind(w.err)
			ft.untyped[k]++
			if ft.untypedExample[k] == "" {
				ft.untypedExample[k] = fmt.Sprintf("%T: %v", w.err, w.err)
			}
			continue
		}
		if _, ran, typed := typedOutcome(w.err); typed && !ran {
			ft.saidNotRun = append(ft.saidNotRun, w.ids...)
		}
	}
}

// faultTags are hash tags for the writers' lists, count of them per
// shard, in shard order round robin: tags[i], tags[i+1] and tags[i+2]
// are on three shards at the start.
func faultTags(ctx context.Context, t *testing.T, l *lab.Lab, perShard int) []string {
	t.Helper()
	shards := l.ShardIDs()
	byShard := map[int][]string{}
	for i := 0; ; i++ {
		done := true
		for _, s := range shards {
			done = done && len(byShard[s]) >= perShard
		}
		if done {
			break
		}
		tag := fmt.Sprintf("{f%d}", i)
		owner, err := l.SlotOwner(ctx, Slot(tag))
		if err != nil {
			t.Fatal(err)
		}
		if len(byShard[owner.Shard()]) < perShard {
			byShard[owner.Shard()] = append(byShard[owner.Shard()], tag)
		}
	}
	var tags []string
	for i := range perShard {
		for _, s := range shards {
			tags = append(tags, byShard[s][i])
		}
	}
	return tags
}

// faultWriter writes unique ids through c with op until stop, each call
// bounded by deadline, into lists named tag:mode:op (and tag:mode:op2 for
// MULTI's second key), and records each call in ft.
func faultWriter(ctx context.Context, c *Client, mode, op string, g int, tags []string, deadline time.Duration, password string, ft *faultTally, stop *atomic.Bool) {
	list := func(i int, suffix string) string { return tags[i%len(tags)] + ":" + mode + ":" + op + suffix }
	for n := 0; !stop.Load(); n++ {
		id := fmt.Sprintf("%s:%s:%d:%d", mode, op, g, n)
		i := g + n
		octx, cancel := context.WithTimeout(ctx, deadline)
		began := time.Now()
		var writes []faultWrite
		switch op {
		case "single":
			writes = []faultWrite{{[]string{id}, c.RPush(octx, list(i, ""), id).Err()}}
		case "pipeline":
			cmds, _ := c.Pipelined(octx, func(p redis.Pipeliner) error {
				for k := range 3 {
					p.RPush(octx, list(i+k, ""), fmt.Sprintf("%s/%d", id, k))
				}
				return nil
			})
			for k, q := range cmds {
				writes = append(writes, faultWrite{[]string{fmt.Sprintf("%s/%d", id, k)}, q.Err()})
			}
		case "multi":
			cmds, err := c.TxPipelined(octx, func(p redis.Pipeliner) error {
				p.RPush(octx, list(i, ""), id+"/a")
				p.RPush(octx, list(i, "2"), id+"/b")
				return nil
			})
			// The transaction is one outcome: both ids or neither. Each
			// command's own error must be placed too.
			writes = []faultWrite{{[]string{id + "/a", id + "/b"}, err}}
			for _, q := range cmds {
				if q.Err() != nil && !placedError(q.Err()) {
					writes = append(writes, faultWrite{nil, q.Err()})
				}
			}
		}
		took := time.Since(began)
		cancel()
		ft.record(op, writes, began, took, deadline, password)
		time.Sleep(testkit.WriterPause(n))
	}
}

// TestRandomFaults runs writers through random faults on a cluster of
// three shards of a master and a replica, one fault at a time (each held
// for 0.3-2.5 s, then undone, then the cluster given time to agree):
// kills and stale restarts of masters and replicas (the nodes persist
// every write: appendonly yes, appendfsync always), a master killed and
// then the replica promoted in its place, SIGSTOP pauses, black holes,
// CLUSTER FAILOVER (default, FORCE, TAKEOVER), slot migrations (step by
// step, and at once), minority partitions (a master cut off from every
// other node, Drop and Refuse), and a shard added with a writers' slot
// and then removed. Two clients, the default mode and durable, write unique ids
// with single commands, pipelines and MULTI/EXEC, into lists of every
// shard. No write may run twice; no acknowledged durable write may be
// lost; every error is typed (errors.As places it) and one that says the
// write did not run is not in the lists; every call returns within its
// deadline and a margin; neither the logs nor the errors quote the
// password. REDISKIT_FAULT_SEED=<seed> replays a run's faults (the seed
// is logged); REDISKIT_FAULT_DURATION sets how long they go on (make
// test: 20 s; make faults: longer); REDISKIT_FAULT_ONLY=<text> keeps only
// the faults whose name holds it.
func TestRandomFaults(t *testing.T) {
	seed, duration := testkit.FaultSettings(t)
	t.Logf("seed %d (REDISKIT_FAULT_SEED=%d replays it), faults for %v", seed, seed, duration)
	defer func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: REDISKIT_FAULT_SEED=%d REDISKIT_FAULT_DURATION=%v go test -race -run '^TestRandomFaults$' ./cluster/", seed, seed, duration)
		}
	}()
	rng := testkit.FaultRand(seed)
	const password = "cl4ster-f4ult-s3cret"
	ctx := testkit.Context(t, duration+4*time.Minute)
	began := time.Now()
	l := lab.New(t, lab.Config{Shards: 3, Replicas: 1, Partitions: true, Password: password,
		ExtraConfig: []string{"appendonly yes", "appendfsync always"}})
	t.Logf("%s: a cluster of 3 shards of a master and a replica, started in %v", l.ServerVersion(), time.Since(began).Round(time.Millisecond))
	stalls := testkit.MeasureStalls(t)

	tags := faultTags(ctx, t, l, 2)
	var logs testkit.Buffer
	modes := []string{"default", "durable"}
	clients := map[string]*Client{}
	for _, mode := range modes {
		clients[mode] = newTestClient(t, l, func(o *Config) {
			o.Addrs = l.ClusterAddrs()
			o.Durable = mode == "durable"
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		})
	}
	const deadline = 2 * time.Second
	tallies := map[string]*faultTally{}
	var stop atomic.Bool
	var wg sync.WaitGroup
	for _, mode := range modes {
		ft := &faultTally{ackedBy: map[string]int{}, kinds: map[string]int{}, untyped: map[string]int{}, untypedExample: map[string]string{}}
		tallies[mode] = ft
		for _, op := range faultOps {
			for g := range 2 {
				wg.Go(func() { faultWriter(ctx, clients[mode], mode, op, g, tags, deadline, password, ft, &stop) })
			}
		}
	}

	run := testkit.RunFaults(t, rng, duration, testkit.OnlyFaults(t, clusterFaultMenu(ctx, l, tags)), func() error {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return l.ClusterReady(sctx)
	})
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("faults:\n%s\n%s", strings.Join(run.Lines, "\n"), run.Summary())

	for _, n := range l.Nodes() {
		if !n.Running() {
			if err := n.Restart(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.ClusterReady(ctx); err != nil {
		t.Fatal(err)
	}
	var lists []string
	for _, tag := range tags {
		for _, mode := range modes {
			for _, op := range faultOps {
				lists = append(lists, tag+":"+mode+":"+op)
			}
			lists = append(lists, tag+":"+mode+":multi2")
		}
	}
	seen := readLists(ctx, t, l, lists)
	margin := time.Second + stalls.Max()
	for _, mode := range modes {
		ft := tallies[mode]
		dups, lost := 0, 0
		lostBy := map[string]int{}
		for id, n := range seen {
			if strings.HasPrefix(id, mode+":") && n > 1 {
				dups += n - 1
			}
		}
		for _, id := range ft.acked {
			if seen[id] == 0 {
				lost++
				lostBy[strings.Split(id, ":")[1]]++
			}
		}
		t.Logf("%s: %d calls, %d ids acknowledged (%s), %d lost (%s), %d duplicated; %d calls more than 100 ms past their %v deadline, the longest %v; errors: %s",
			mode, ft.calls, len(ft.acked), kindsLine(ft.ackedBy), lost, kindsLine(lostBy), dups, ft.late, deadline, max(ft.worst, 0).Round(time.Millisecond), kindsLine(ft.kinds))
		if dups != 0 {
			t.Errorf("%s: %d writes ran twice", mode, dups)
		}
		if mode == "durable" && lost != 0 {
			t.Errorf("%s: %d acknowledged durable writes lost", mode, lost)
		}
		if ft.late > 0 {
			t.Logf("%s: the call longest past its deadline: %s; the longest stall of this process: %v", mode, ft.worstCall, stalls.Max().Round(time.Millisecond))
		}
		if ft.worst > margin {
			t.Errorf("%s: a call returned %v past its %v deadline (margin %v: 1 s and the longest stall of this process, %v)",
				mode, ft.worst.Round(time.Millisecond), deadline, margin.Round(time.Millisecond), stalls.Max().Round(time.Millisecond))
		}
		for _, id := range ft.saidNotRun {
			if seen[id] > 0 {
				t.Errorf("%s: write %s failed saying it did not run, and it is in its list", mode, id)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(ft.untyped)) {
			t.Errorf("%s: %d errors errors.As cannot place (%s), e.g. %s", mode, ft.untyped[k], k, ft.untypedExample[k])
		}
		if ft.secretLeaks > 0 {
			t.Errorf("%s: %d errors quote the data password", mode, ft.secretLeaks)
		}
		if len(ft.acked) == 0 {
			t.Errorf("%s: no write acknowledged", mode)
		}
	}
	if strings.Contains(logs.String(), password) {
		t.Error("the clients' logs quote the data password")
	}
}

// clusterFaultMenu lists the faults the cluster's random test draws from.
// Each Start makes its draws first (the same number whatever happens) and
// undoes what it did when it fails halfway.
func clusterFaultMenu(ctx context.Context, l *lab.Lab, tags []string) []testkit.Fault {
	bounded := func(d time.Duration) (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, d) }
	pickShard := func(r *rand.Rand) int { ids := l.ShardIDs(); return ids[r.IntN(len(ids))] }
	master := func(shard int) (*lab.Node, error) {
		sctx, cancel := bounded(10 * time.Second)
		defer cancel()
		return l.ShardMaster(sctx, shard)
	}
	var target, second *lab.Node
	var faults []testkit.Fault

	// Kills (restarted stale, from the AOF), pauses and black holes of a
	// shard's master, of one of its replicas, and of any node.
	pickers := []struct {
		name string
		pick func(r *rand.Rand) (*lab.Node, error)
	}{
		{"a master", func(r *rand.Rand) (*lab.Node, error) { return master(pickShard(r)) }},
		{"a replica", func(r *rand.Rand) (*lab.Node, error) {
			s := pickShard(r)
			k := r.IntN(64)
			m, err := master(s)
			if err != nil {
				return nil, err
			}
			reps := slices.DeleteFunc(l.ShardNodes(s), func(n *lab.Node) bool { return n == m })
			if len(reps) == 0 {
				return nil, fmt.Errorf("shard %d has no replica", s)
			}
			return reps[k%len(reps)], nil
		}},
		{"a node", func(r *rand.Rand) (*lab.Node, error) { ns := l.Nodes(); return ns[r.IntN(len(ns))], nil }},
	}
	for _, who := range pickers {
		faults = append(faults,
			testkit.NewFault("kill "+who.name,
				func(r *rand.Rand) (err error) {
					if target, err = who.pick(r); err != nil {
						return err
					}
					return target.Kill()
				},
				func() error { return target.Restart(ctx) }),
			testkit.NewFault("pause "+who.name,
				func(r *rand.Rand) (err error) {
					if target, err = who.pick(r); err != nil {
						return err
					}
					return target.Pause()
				},
				func() error { return target.Resume() }),
			testkit.NewFault("black-hole "+who.name,
				func(r *rand.Rand) (err error) {
					if target, err = who.pick(r); err != nil {
						return err
					}
					target.BlackHole()
					return nil
				},
				func() error { target.Restore(); return nil }),
		)
	}
	faults = append(faults, testkit.NewFault("double fault: kill a master, then the replica promoted in its place",
		func(r *rand.Rand) (err error) {
			s := pickShard(r)
			if target, err = master(s); err != nil {
				return err
			}
			if err := target.Kill(); err != nil {
				return err
			}
			sctx, cancel := bounded(15 * time.Second)
			defer cancel()
			if second, err = l.WaitPromotion(sctx, s, target); err != nil {
				return errors.Join(err, target.Restart(ctx))
			}
			if err := second.Kill(); err != nil {
				return errors.Join(err, target.Restart(ctx))
			}
			return nil
		},
		// The first master back first, stale: it must not take the slots
		// back from the second, down, with a newer epoch.
		func() error { return errors.Join(target.Restart(ctx), second.Restart(ctx)) }))

	for _, mode := range []lab.FailoverMode{lab.FailoverGraceful, lab.FailoverForce, lab.FailoverTakeover} {
		faults = append(faults, testkit.NewFault("CLUSTER FAILOVER "+mode.String(),
			func(r *rand.Rand) error {
				s := pickShard(r)
				sctx, cancel := bounded(15 * time.Second)
				defer cancel()
				_, err := l.ClusterFailover(sctx, s, mode)
				return err
			},
			func() error { return nil }))
	}

	// Slot migrations of a writers' slot to another shard: held midway
	// (some keys moved, ASK and TRYAGAIN for the rest) and then finished,
	// or at once.
	var migration *lab.SlotMigration
	migrate := func(r *rand.Rand) (slot, to int, err error) {
		tag := tags[r.IntN(len(tags))]
		k := r.IntN(64)
		slot = Slot(tag)
		sctx, cancel := bounded(10 * time.Second)
		defer cancel()
		owner, err := l.SlotOwner(sctx, slot)
		if err != nil {
			return 0, 0, err
		}
		others := slices.DeleteFunc(l.ShardIDs(), func(s int) bool { return s == owner.Shard() })
		return slot, others[k%len(others)], nil
	}
	faults = append(faults,
		testkit.NewFault("migrate a slot step by step",
			func(r *rand.Rand) error {
				slot, to, err := migrate(r)
				keys := 1 + r.IntN(8)
				if err != nil {
					return err
				}
				sctx, cancel := bounded(15 * time.Second)
				defer cancel()
				if migration, err = l.BeginSlotMigration(sctx, to, slot); err != nil {
					return err
				}
				if _, err := migration.MoveKeys(sctx, keys); err != nil {
					return errors.Join(err, migration.Finish(ctx))
				}
				return nil
			},
			func() error {
				sctx, cancel := bounded(30 * time.Second)
				defer cancel()
				return migration.Finish(sctx)
			}),
		testkit.NewFault("migrate a slot at once",
			func(r *rand.Rand) error {
				slot, to, err := migrate(r)
				if err != nil {
					return err
				}
				sctx, cancel := bounded(30 * time.Second)
				defer cancel()
				return l.MigrateSlots(sctx, to, slot)
			},
			func() error { return nil }),
	)

	// A master cut off from every other node (its replica included),
	// clients still reaching it: a minority master until the majority
	// promotes its replica.
	for _, mode := range []lab.CutMode{lab.Drop, lab.Refuse} {
		faults = append(faults, testkit.NewFault("cut a master off from the cluster ("+mode.String()+")",
			func(r *rand.Rand) (err error) {
				if target, err = master(pickShard(r)); err != nil {
					return err
				}
				var rest []lab.Endpoint
				for _, n := range l.Nodes() {
					if n != target {
						rest = append(rest, n)
					}
				}
				return l.Partition(mode, []lab.Endpoint{target}, rest)
			},
			l.Heal))
	}

	// A shard added and given a writers' slot, and then removed: its slot
	// and keys moved back, its nodes forgotten and stopped. (The shard
	// removed is the one added: removing one of the first three moves a
	// third of the slots, which on Valkey 8 under load (each SETSLOT
	// waits for the replica and an fsync of nodes.conf) takes minutes.)
	var added int
	faults = append(faults, testkit.NewFault("add a shard, then remove it",
		func(r *rand.Rand) (err error) {
			tag := tags[r.IntN(len(tags))]
			sctx, cancel := bounded(60 * time.Second)
			defer cancel()
			if added, err = l.AddShard(sctx); err != nil {
				return err
			}
			if err := l.MigrateSlots(sctx, added, Slot(tag)); err != nil {
				return errors.Join(err, l.RemoveShard(sctx, added))
			}
			return nil
		},
		func() error {
			sctx, cancel := bounded(60 * time.Second)
			defer cancel()
			return l.RemoveShard(sctx, added)
		}))
	return faults
}
