package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/internal/testkit/errplace"
	"github.com/rediskit/rediskit/lab"
)

// TestErrorsPlacedUnderFaults runs pipelines, transactions, Watch and
// single writes (under deadlines of their own, some cancelled) while
// a master's link is slowed past the callers' deadlines, another is
// black-holed, a slot migrates, and a master is killed mid-pipeline and
// replaced: every error a call returns, and each command's of its
// pipeline, is one of the package's typed errors or the command's answer,
// and no write said not to have run is found.
func TestErrorsPlacedUnderFaults(t *testing.T) {
	ctx := testkit.Context(t, 120*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	c := newTestClient(t, l, func(o *Config) { o.WriteHoldTimeout = 2 * time.Second })
	// A tag on each shard.
	var tags []string
	seen := map[int]bool{}
	for i := 0; len(tags) < 3; i++ {
		tag := fmt.Sprint("t", i)
		owner, err := l.SlotOwner(ctx, Slot(tag))
		if err != nil {
			t.Fatal(err)
		}
		if !seen[owner.Shard()] {
			seen[owner.Shard()] = true
			tags = append(tags, tag)
		}
	}
	owner := func(tag string) *lab.Node {
		n, err := l.SlotOwner(ctx, Slot(tag))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	pause := func(d time.Duration) {
		select {
		case <-time.After(d):
		case <-ctx.Done():
		}
	}
	w := errplace.NewWorkload(c, typedOutcome, tags)
	const deadline = 400 * time.Millisecond
	w.Start(ctx, 4, deadline)
	defer w.Stop()
	pause(300 * time.Millisecond)

	// A master's link slowed past every caller's deadline.
	stalled := owner(tags[0])
	stalled.SetLatency(2 * deadline)
	pause(1500 * time.Millisecond)
	stalled.SetLatency(0)
	pause(300 * time.Millisecond)

	// A black-holed master, for less than the node timeout.
	holed := owner(tags[1])
	holed.BlackHole()
	pause(700 * time.Millisecond)
	holed.Restore()
	pause(300 * time.Millisecond)

	// A slot migrating, half its keys moved (ASK, TRYAGAIN), then done.
	if err := l.ClusterReady(ctx); err != nil {
		t.Fatal(err)
	}
	from := owner(tags[2])
	to := (from.Shard() + 1) % len(l.ShardIDs())
	m, err := l.BeginSlotMigration(ctx, l.ShardIDs()[to], Slot(tags[2]))
	if err != nil {
		t.Fatal(err)
	}
	pause(300 * time.Millisecond)
	if _, err := m.MoveKeys(ctx, 1); err != nil {
		t.Fatal(err)
	}
	pause(500 * time.Millisecond)
	if err := m.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	pause(300 * time.Millisecond)

	// A master killed mid-pipeline, replaced by its replica.
	killed := owner(tags[1])
	if err := killed.Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := l.WaitPromotion(ctx, killed.Shard(), killed); err != nil {
		t.Fatal(err)
	}
	pause(500 * time.Millisecond)
	w.Stop()
	if err := killed.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.ClusterReady(ctx); err != nil {
		t.Fatal(err)
	}
	w.Check(ctx, t)
}

// TestErrorsPlacedClusterDown: calls of every kind that stall their
// master past their deadlines fail typed, and those that ran once it was
// free said they may have. With a shard down and no replica to take
// over, the cluster answers CLUSTERDOWN to everything; pipelines,
// transactions, Watch and single commands fail, after WriteHoldTimeout or
// the caller's deadline, with a *NodeError that wraps the refusal and
// says nothing ran. A transaction refused with ASK mid-migration
// (EXECABORT) fails so too, and ran nowhere.
func TestErrorsPlacedClusterDown(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, func(o *Config) { o.WriteHoldTimeout = 300 * time.Millisecond })
	notRun := false

	// Writes that stall their master past their callers' deadlines, then
	// run (no replica: however long a loaded machine makes the stall, no
	// failover takes their slot away).
	errplace.StallCalls(ctx, t, c, typedOutcome, "stall", 100*time.Millisecond).CheckRan(ctx, t, c, true)

	// EXECABORT: a transaction on a migrating slot whose one key moved
	// is refused at every attempt (ASK from the source; after ASKING,
	// TRYAGAIN from the target, which lacks the other key).
	const a, b = "{abort}a", "{abort}b"
	if err := c.MSet(ctx, a, 1, b, 1).Err(); err != nil {
		t.Fatal(err)
	}
	src, err := l.SlotOwner(ctx, Slot(a))
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.BeginSlotMigration(ctx, l.ShardIDs()[(src.Shard()+1)%3], Slot(a))
	if err != nil {
		t.Fatal(err)
	}
	if moved, err := m.MoveKeys(ctx, 1); err != nil || moved != 1 {
		t.Fatalf("moved %d keys: %v", moved, err)
	}
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, a)
		p.Incr(ctx, b)
		return nil
	})
	p := errplace.Require(t, "a transaction refused mid-migration", err, typedOutcome, &notRun)
	t.Logf("a transaction refused mid-migration: %s: %v", p, err)
	for _, q := range cmds {
		errplace.Require(t, "its "+q.Name(), q.Err(), typedOutcome, &notRun)
	}
	if err := m.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := c.MGet(ctx, a, b).Result(); err != nil || fmt.Sprint(v) != "[1 1]" {
		t.Fatalf("after the refused transaction: %v, %v; want [1 1]", v, err)
	}

	// CLUSTERDOWN: a master killed, no replica; {up} on a live one.
	live, err := l.SlotOwner(ctx, Slot("{up}"))
	if err != nil {
		t.Fatal(err)
	}
	var down *lab.Node
	for _, id := range l.ShardIDs() {
		if n := l.ShardNodes(id)[0]; n.Shard() != live.Shard() {
			down = n
		}
	}
	if err := down.Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "the cluster to answer CLUSTERDOWN", func() bool {
		return failure.ClusterDown(live.Do(ctx, "GET", "x").Err())
	})
	clusterDown := 0 // errors that wrap the refusal
	tally := errplace.NewTally(typedOutcome)
	for _, d := range []time.Duration{30 * time.Second, 100 * time.Millisecond} { // the hold ends first, then the caller's deadline
		cctx, cancel := context.WithTimeout(ctx, d)
		cmds, err := c.Pipelined(cctx, func(p redis.Pipeliner) error {
			for i := range 6 {
				p.Set(cctx, fmt.Sprint("k", i), i, 0)
				p.Get(cctx, fmt.Sprint("k", i))
			}
			return nil
		})
		tally.AddCmds("pipeline", cmds, err)
		cmds, err = c.TxPipelined(cctx, func(p redis.Pipeliner) error {
			p.Set(cctx, "{up}a", 1, 0)
			p.Incr(cctx, "{up}b")
			return nil
		})
		tally.AddCmds("transaction", cmds, err)
		// Past the hold, each says it did not run; the caller's deadline
		// may end one while a send is on the wire: placed, either way.
		want := &notRun
		if d < time.Second {
			want = nil
		}
		errplace.Require(t, "a transaction", err, typedOutcome, want)
		err = c.Watch(cctx, func(tx *redis.Tx) error { return tx.Set(cctx, "{up}a", 2, 0).Err() }, "{up}a")
		tally.Add("watch", err)
		errplace.Require(t, "Watch", err, typedOutcome, want)
		err = c.Set(cctx, "{up}a", 3, 0).Err()
		tally.Add("set", err)
		errplace.Require(t, "SET", err, typedOutcome, want)
		if failure.ClusterDown(err) {
			clusterDown++
		}
		cancel()
	}
	if clusterDown == 0 {
		t.Error("no SET on the live shard failed with CLUSTERDOWN: the test did not provoke it")
	}
	t.Logf("with CLUSTERDOWN: %s", tally.Line())
	tally.Check(t)
	if err := down.Restart(ctx); err != nil {
		t.Fatal(err)
	}
}
