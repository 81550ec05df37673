package multidb

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/sentinel"
)

func fillKeys(t *testing.T, ctx context.Context, rc *redis.Client, n int) {
	t.Helper()
	if _, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range n {
			p.Set(ctx, fmt.Sprintf("pfx:%d", i), i, 0)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// An iteration runs on the database that issued its cursor; after a
// switch it fails with a *CursorError (restart from 0), never continues
// on the new database.
func TestScanCursorStaysOnItsDatabase(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	nodes := standalone(t, 2, lab.Config{})
	for _, n := range nodes {
		rc := n.NewClient()
		fillKeys(t, ctx, rc, 300)
		_ = rc.Close()
	}
	c, _ := newClient(t, fast(Config{}), nodes, 10, 5)
	seen := map[string]bool{}
	it := c.Scan(ctx, 0, "pfx:*", 10).Iterator()
	for it.Next(ctx) {
		seen[it.Val()] = true
	}
	if it.Err() != nil || len(seen) != 300 {
		t.Fatalf("SCAN: %d of 300 keys, %v", len(seen), it.Err())
	}

	_, cursor, err := c.Scan(ctx, 0, "pfx:*", 10).Result()
	if err != nil || cursor == 0 {
		t.Fatalf("first page: %v, cursor %d", err, cursor)
	}
	if err := c.SetActive(ctx, "db1"); err != nil {
		t.Fatal(err)
	}
	err = c.Scan(ctx, cursor, "pfx:*", 10).Err()
	var ce *CursorError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCursorLost) || ce.Database != "db0" {
		t.Fatalf("SCAN with db0's cursor after the switch to db1: %v; want a CursorError naming db0", err)
	}
	// A new iteration runs on db1.
	seen = map[string]bool{}
	it = c.Scan(ctx, 0, "pfx:*", 10).Iterator()
	for it.Next(ctx) {
		seen[it.Val()] = true
	}
	if it.Err() != nil || len(seen) != 300 {
		t.Fatalf("SCAN on db1: %d of 300 keys, %v", len(seen), it.Err())
	}
}

// A Sentinel database whose reads spread over two replicas: the client
// inside tags its cursors with the node, the multidb client with the
// database, and the iteration is complete.
func TestScanThroughASentinelDatabase(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Sentinel(2))
	m := l.Node(0).NewClient()
	fillKeys(t, ctx, m, 300)
	if n, err := m.Do(ctx, "WAIT", 2, 5000).Int(); err != nil || n != 2 {
		t.Fatalf("WAIT: %d, %v", n, err)
	}
	_ = m.Close()
	sc, err := sentinel.NewClient(sentinel.Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
		ReadFrom: sentinel.ReplicaPreferred, ReplicaSelector: sentinel.NewRoundRobinSelector()})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	testkit.WaitFor(t, 10*time.Second, "two replicas", func() bool { return len(sc.Stats().Replicas) == 2 })
	c, err := NewClient(fast(Config{Databases: []Database{{Name: "main", Weight: 1, Client: sc}}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seen := map[string]bool{}
	it := c.Scan(ctx, 0, "pfx:*", 10).Iterator()
	for it.Next(ctx) {
		seen[it.Val()] = true
	}
	if it.Err() != nil || len(seen) != 300 {
		t.Fatalf("SCAN through multidb and sentinel: %d of 300 keys, %v", len(seen), it.Err())
	}
}
