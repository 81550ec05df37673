package sentinel

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// countingHook counts the commands it sees, by name.
type countingHook struct {
	mu    sync.Mutex
	names map[string]int
	dials atomic.Int64
}

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.dials.Add(1)
		return next(ctx, network, addr)
	}
}

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.mu.Lock()
		h.names[cmd.Name()]++
		h.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.mu.Lock()
		for _, c := range cmds {
			h.names[c.Name()]++
		}
		h.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (h *countingHook) count(name string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.names[name]
}

// TestStandaloneFeatures: what a go-redis user does with a client, on a
// standalone primary with a replica no Sentinel manages: hooks see the
// caller's commands on the node that runs them, OnNewNode names both
// nodes, pub/sub works through the primary, SCAN iterates every key with
// reads on the replica (its cursors pinned there), pipelines and
// transactions run, WithTimeout routes, PoolStats counts.
func TestStandaloneFeatures(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1})
	c := newPrimaryClient(t, l, func(o *Config) { o.ReadFrom = ReplicaPreferred })
	testkit.WaitFor(t, 10*time.Second, "the replica from the primary's ROLE", func() bool { return len(c.Stats().Replicas) == 1 })

	hook := &countingHook{names: map[string]int{}}
	c.AddHook(hook)
	var mu sync.Mutex
	var nodes []string
	c.OnNewNode(func(rc *redis.Client) {
		mu.Lock()
		nodes = append(nodes, rc.Options().Addr)
		mu.Unlock()
	})
	mu.Lock()
	for _, want := range []string{l.Node(0).Addr(), l.Node(1).Addr()} {
		if !slices.Contains(nodes, want) {
			t.Errorf("OnNewNode named %v, not %s", nodes, want)
		}
	}
	mu.Unlock()

	// Pub/sub through the primary.
	sub := c.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatalf("SUBSCRIBE: %v", err)
	}
	if n, err := c.Publish(ctx, "news", "hello").Result(); err != nil || n != 1 {
		t.Fatalf("PUBLISH: %d receivers, %v", n, err)
	}
	msg, err := sub.ReceiveMessage(ctx)
	if err != nil || msg.Payload != "hello" {
		t.Fatalf("message: %v, %v", msg, err)
	}

	// 200 keys; a pipeline of writes, then SCAN on the replica.
	want := make([]string, 200)
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range want {
			want[i] = fmt.Sprintf("scan:%03d", i)
			p.Set(ctx, want[i], i, 0)
		}
		return nil
	}); err != nil {
		t.Fatalf("pipeline: %v", err)
	}
	if hook.count("set") < len(want) {
		t.Errorf("the hook saw %d SETs of %d", hook.count("set"), len(want))
	}
	if err := c.Wait(ctx, 1, time.Second).Err(); err == nil {
		t.Error("Wait: no refusal (the client chooses the connection; use durable writes)")
	}
	testkit.WaitFor(t, 5*time.Second, "the replica has every key", func() bool {
		n, err := l.Node(1).Do(ctx, "DBSIZE").Int()
		return err == nil && n >= len(want)
	})
	// Reads go to the replica once the selector has probed it (before,
	// ReplicaPreferred reads the primary); SCAN's first page goes where
	// reads go, and its cursor keeps the iteration there.
	testkit.WaitFor(t, 10*time.Second, "a read served by the replica", func() bool {
		before := calls(t, l.Node(1), "get")
		return c.Get(ctx, want[0]).Err() == nil && calls(t, l.Node(1), "get") > before
	})
	scansBefore := calls(t, l.Node(1), "scan")
	var got []string
	iter := c.Scan(ctx, 0, "scan:*", 20).Iterator()
	for iter.Next(ctx) {
		got = append(got, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN: %v", err)
	}
	slices.Sort(got)
	if got = slices.Compact(got); !slices.Equal(got, want) {
		t.Fatalf("SCAN found %d keys of %d", len(got), len(want))
	}
	if calls(t, l.Node(1), "scan") == scansBefore || calls(t, l.Node(0), "scan") != 0 {
		t.Errorf("SCAN ran on the primary (%d calls), not the replica", calls(t, l.Node(0), "scan"))
	}

	// A transaction on the primary; WithTimeout routes; pools count.
	cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "tx")
		p.Incr(ctx, "tx")
		return nil
	})
	if err != nil || cmds[1].(*redis.IntCmd).Val() != 2 {
		t.Fatalf("transaction: %v, %v", cmds, err)
	}
	short := c.WithTimeout(time.Second)
	defer short.Close()
	if v, err := short.Get(ctx, "tx").Int(); err != nil || v != 2 {
		t.Fatalf("GET through WithTimeout: %d, %v", v, err)
	}
	if st := c.PoolStats(); st.TotalConns == 0 {
		t.Errorf("PoolStats %+v: no connection counted", st)
	}
	if hook.dials.Load() == 0 {
		t.Error("the hook saw no dial")
	}
}
