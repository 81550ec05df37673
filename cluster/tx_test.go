package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestTransactionsRetriedAsCommands: a transaction refused before it ran
// is retried as a single command is (the random fault test found them
// failing where single commands waited). Mid-migration, with its keys
// moved to the target, the source's ASK is followed (ASKING, then the
// transaction, on one connection of the target); with its keys split
// between the two (TRYAGAIN), and while another shard is down
// (CLUSTERDOWN from every node), it waits within WriteHoldTimeout and
// then runs once.
func TestTransactionsRetriedAsCommands(t *testing.T) {
	ctx := testkit.Context(t, 120*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, nil)
	tx := func(ctx context.Context, tag, v string) error {
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.RPush(ctx, tag+"a", v)
			p.RPush(ctx, tag+"b", v)
			return nil
		})
		return err
	}
	check := func(tag string, want ...string) {
		t.Helper()
		for _, k := range []string{tag + "a", tag + "b"} {
			if got, err := c.LRange(ctx, k, 0, -1).Result(); err != nil || !slices.Equal(got, want) {
				t.Errorf("%s = %v (%v), want %v", k, got, err, want)
			}
		}
	}
	// begin starts moving tag's slot to the next shard, moving keys of its
	// keys (0: all).
	begin := func(tag string, keys int) *lab.SlotMigration {
		t.Helper()
		if err := tx(ctx, tag, "1"); err != nil {
			t.Fatal(err)
		}
		owner, err := l.SlotOwner(ctx, Slot(tag))
		if err != nil {
			t.Fatal(err)
		}
		m, err := l.BeginSlotMigration(ctx, (owner.Shard()+1)%3, Slot(tag))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.MoveKeys(ctx, keys); err != nil {
			t.Fatal(err)
		}
		return m
	}
	slowest := slowestPing(ctx, t, l.ShardNodes(0)[0])
	// A retry comes within the longest backoff (200 ms) of the change, and
	// costs a few round trips.
	margin := 200*time.Millisecond + max(100*time.Millisecond, 20*slowest)

	// ASK: both keys on the target.
	m := begin("{txask}", 0)
	asks := c.Stats().Ask
	if err := tx(ctx, "{txask}", "2"); err != nil {
		t.Errorf("a transaction whose keys moved, mid-migration: %v", err)
	}
	if c.Stats().Ask == asks {
		t.Errorf("no ASK followed")
	}
	if err := m.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	check("{txask}", "1", "2")

	// held runs the transaction on tag while undo is delayed by 300 ms, and
	// checks that it waited for undo and ran once after it.
	held := func(what, tag string, undo func()) {
		t.Helper()
		done := make(chan error, 1)
		began := time.Now()
		go func() { done <- tx(ctx, tag, "2") }()
		time.Sleep(300 * time.Millisecond)
		select {
		case err := <-done:
			t.Fatalf("%s: the transaction returned before it could run, after %v: %v", what, time.Since(began), err)
		default:
		}
		undo()
		undone := time.Now()
		err := <-done
		late := time.Since(undone)
		t.Logf("%s: the transaction returned %v after the refusals ended (%v after it began): %v; margin %v", what,
			late.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), err, margin)
		if err != nil {
			t.Errorf("%s: %v, want it run once the refusals end", what, err)
		}
		if late > margin {
			t.Errorf("%s: returned %v after the refusals ended, more than %v", what, late, margin)
		}
		check(tag, "1", "2")
	}

	// TRYAGAIN: one key moved, the other not.
	m = begin("{txtry}", 1)
	held("mid-migration with its keys split", "{txtry}", func() {
		if err := m.Finish(ctx); err != nil {
			t.Fatal(err)
		}
	})

	// CLUSTERDOWN: another shard's master, without a replica, down. The
	// healthy shard's master refuses the queued commands until the cluster
	// is whole again.
	if err := tx(ctx, "{txdown}", "1"); err != nil {
		t.Fatal(err)
	}
	owner, err := l.SlotOwner(ctx, Slot("{txdown}"))
	if err != nil {
		t.Fatal(err)
	}
	victim, err := l.ShardMaster(ctx, (owner.Shard()+1)%3)
	if err != nil {
		t.Fatal(err)
	}
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the cluster to be down", func() bool {
		text, err := owner.Do(ctx, "CLUSTER", "INFO").Text()
		return err == nil && lab.ParseInfo(text)["cluster_state"] == "fail"
	})
	held("while another shard is down", "{txdown}", func() {
		if err := victim.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 20*time.Second, "the cluster to be up", func() bool {
			text, err := owner.Do(ctx, "CLUSTER", "INFO").Text()
			return err == nil && lab.ParseInfo(text)["cluster_state"] == "ok"
		})
	})
}
