package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// scanAll iterates SCAN from cursor 0 through c until it ends, and counts
// the keys returned.
func scanAll(ctx context.Context, t *testing.T, c redis.UniversalClient, match string) map[string]int {
	t.Helper()
	seen := map[string]int{}
	it := c.Scan(ctx, 0, match, 50).Iterator()
	for it.Next(ctx) {
		seen[it.Val()]++
	}
	if err := it.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	return seen
}

// TestScanCoversEveryMaster: SCAN through the client, as go-redis's
// ScanIterator drives it, returns the keys of every master; go-redis's
// ClusterClient in the same cluster returns one node's.
func TestScanCoversEveryMaster(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, nil)
	const n = 900
	for i := range n {
		if err := c.Set(ctx, fmt.Sprint("scan:", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	seen := scanAll(ctx, t, c, "scan:*")
	for i := range n {
		if seen[fmt.Sprint("scan:", i)] == 0 {
			t.Fatalf("scan:%d not returned (%d of %d keys seen)", i, len(seen), n)
		}
	}
	if len(seen) != n {
		t.Fatalf("%d keys, want %d", len(seen), n)
	}
	gr := redis.NewClusterClient(l.ClusterOptions())
	defer func() { _ = gr.Close() }()
	t.Logf("SCAN through the iterator: rediskit %d of %d keys, go-redis ClusterClient %d", len(seen), n, len(scanAll(ctx, t, gr, "scan:*")))
}

// TestScanCursorPinned: an HSCAN cursor carries the node that issued it,
// continues there, in a pipeline too; after the shard fails over (and for
// SCAN, after a master fails over) the old cursor fails with ErrCursorLost
// before anything is sent, and a new iteration works on the new master. A
// cursor naming a node the client never met is refused too.
func TestScanCursorPinned(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	c := newTestClient(t, l, nil)
	const key, fields = "{pin}:hash", 2000 // past the listpack: many pages
	var pairs []any
	for i := range fields {
		pairs = append(pairs, fmt.Sprint("f", i), i)
	}
	if err := c.HSet(ctx, key, pairs...).Err(); err != nil {
		t.Fatal(err)
	}
	page, cursor, err := c.HScan(ctx, key, 0, "", 100).Result()
	if err != nil || cursor == 0 || len(page) == 0 {
		t.Fatalf("first page: %d elements, cursor %d, %v", len(page), cursor, err)
	}
	if tag, _ := routing.UntagCursor(cursor, routing.NodeTagShift, routing.NodeTagBits); tag == 0 {
		t.Fatalf("cursor %d carries no node", cursor)
	}
	// A pipeline continues it where it came from.
	var pc *redis.ScanCmd
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "other")
		pc = p.HScan(ctx, key, cursor, "", 100)
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	if _, next, err := pc.Result(); err != nil || next == 0 {
		t.Fatalf("the next page in a pipeline: cursor %d, %v", next, err)
	}
	// The whole iteration, through the client, returns every field.
	got := map[string]bool{}
	for it := c.HScan(ctx, key, 0, "", 100).Iterator(); it.Next(ctx); {
		got[it.Val()] = true
	}
	if len(got) != fields*2 { // fields and values
		t.Fatalf("HSCAN: %d fields and values, want %d", len(got), fields*2)
	}

	_, scanCursor, err := c.Scan(ctx, 0, "", 1).Result()
	if err != nil || scanCursor == 0 {
		t.Fatalf("SCAN's first page: cursor %d, %v", scanCursor, err)
	}
	owner, err := l.SlotOwner(ctx, Slot(key))
	if err != nil {
		t.Fatal(err)
	}
	scanTag, _ := routing.UntagCursor(scanCursor, routing.NodeTagShift, routing.NodeTagBits)
	scanNode := c.nodes.byNumber(scanTag)
	// Fail over the hash's shard and the first SCAN's master (one
	// failover when they are the same shard).
	failed := map[int]bool{}
	for _, addr := range []string{owner.Addr(), scanNode.addr} {
		for _, shard := range l.ShardIDs() {
			m, err := l.ShardMaster(ctx, shard)
			if err != nil {
				t.Fatal(err)
			}
			if m.Addr() == addr && !failed[shard] {
				failed[shard] = true
				if _, err := l.ClusterFailover(ctx, shard, lab.FailoverGraceful); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// The client learns the new map: a command on the slot answers MOVED,
	// and the refresh that follows drops the demoted nodes from the
	// masters (the MOVED alone moves that one slot).
	demoted := func() bool {
		snap := c.topo.snap.Load()
		return slices.ContainsFunc(snap.masters, func(s *shard) bool {
			return s.master.addr == owner.Addr() || s.master == scanNode
		})
	}
	for demoted() {
		_ = c.Get(ctx, key).Err()
		select {
		case <-ctx.Done():
			t.Fatalf("the client's map still has a demoted master: %v", c.Stats().Masters)
		case <-time.After(20 * time.Millisecond):
		}
	}
	before := c.Stats().Nodes
	_, _, err = c.HScan(ctx, key, cursor, "", 100).Result()
	var ce *CursorError
	if !errors.Is(err, ErrCursorLost) || !errors.As(err, &ce) || ce.Node != owner.Addr() {
		t.Fatalf("the old HSCAN cursor after the failover: %v", err)
	}
	_, _, err = c.Scan(ctx, scanCursor, "", 1).Result()
	if !errors.Is(err, ErrCursorLost) {
		t.Fatalf("the old SCAN cursor after its master failed over: %v", err)
	}
	if after := c.Stats().Nodes; fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("refused cursors sent something: %v, then %v", before, after)
	}
	got = map[string]bool{}
	for it := c.HScan(ctx, key, 0, "", 100).Iterator(); it.Next(ctx); {
		got[it.Val()] = true
	}
	if len(got) != fields*2 {
		t.Fatalf("HSCAN again on the new master: %d, want %d", len(got), fields*2)
	}
	forged := uint64(999)<<routing.NodeTagShift | 5
	if err := c.HScan(ctx, key, forged, "", 10).Err(); !errors.Is(err, ErrCursorLost) {
		t.Fatalf("a cursor of a node the client never met: %v", err)
	}
}
