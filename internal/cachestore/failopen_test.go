package cachestore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/clientcache"
)

func wrapped(err error) error            { return fmt.Errorf("read on 10.0.0.1:6379: %w", err) }
func opError(op string, err error) error { return &net.OpError{Op: op, Net: "tcp", Err: err} }

// replyError is a server's error reply, as go-redis types it.
type replyError string

func (e replyError) Error() string { return string(e) }
func (e replyError) RedisError()   {}

func redisReply(s string) error { return replyError(s) }

// TestFailOpen: which entry a failed read falls back on, across nodes,
// and when it does not.
func TestFailOpen(t *testing.T) {
	cl := classify.New()
	const maxStale = 10 * time.Second
	c := New(clientcache.Config{MaxStale: maxStale}, cl, nil)
	defer c.Close()
	nodes := make([]*NodeCache, 2)
	for i := range nodes {
		nodes[i] = c.Track(&redis.Options{Addr: fmt.Sprintf("10.0.0.%d:6379", i+1)})
		defer nodes[i].Close()
	}
	now := time.Now()
	// fill caches GET key's reply on n: value, or redis.Nil for "".
	fill := func(n *NodeCache, key string, value string) {
		t.Helper()
		n.node.confirm(now.Add(time.Hour))
		reply := redis.NewStringCmd(context.Background(), "get", key)
		if value == "" {
			reply.SetErr(redis.Nil)
		} else {
			reply.SetVal(value)
		}
		v, size, ok := Extract(reply)
		tk := c.store.Reserve(n.node, key, "get")
		if !ok || !c.store.Fill(tk, v, size, time.Minute, now) {
			t.Fatal("not filled")
		}
	}
	// k on both nodes: the first node lost its tracking 5 s ago, the
	// second 1 s ago; m (missing) on the first only.
	fill(nodes[0], "k", "old")
	fill(nodes[0], "m", "")
	fill(nodes[1], "k", "new")
	nodes[0].node.unconfirm()
	nodes[0].node.Flush(time.Now().Add(-5 * time.Second))
	nodes[1].node.unconfirm()
	nodes[1].node.Flush(time.Now().Add(-time.Second))

	cached := clientcache.WithTTL(context.Background(), time.Minute)
	failed := wrapped(opError("dial", syscall.ECONNREFUSED))
	get := func(ctx context.Context, key string, err error) (*redis.StringCmd, error) {
		cmd := redis.NewStringCmd(ctx, "get", key)
		cmd.SetErr(err)
		return cmd, c.FailOpen(ctx, cmd, err)
	}

	cmd, err := get(cached, "k", failed)
	var se *clientcache.StaleError
	if !errors.As(err, &se) || cmd.Val() != "new" || se.Addr != "10.0.0.2:6379" || se.Age < time.Second || se.Age > 2*time.Second ||
		!errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, redis.Nil) || !errors.Is(cmd.Err(), failed) {
		t.Fatalf("k: %q, %v; want the younger entry (new, from 10.0.0.2, ~1 s old), the failure inside, on the command too", cmd.Val(), err)
	}
	if _, err := get(cached, "m", failed); !errors.As(err, &se) || !se.Nil || !errors.Is(err, redis.Nil) || se.Age < 5*time.Second {
		t.Fatalf("m: %v; want a stale redis.Nil ~5 s old", err)
	}
	for _, tt := range []struct {
		name string
		ctx  context.Context
		key  string
		err  error
	}{
		{"not asked for the cache", context.Background(), "k", failed},
		{"never cached", cached, "x", failed},
		{"an answer", cached, "k", redisReply("WRONGTYPE Operation against a key holding the wrong kind of value")},
		{"cancelled", cached, "k", wrapped(context.Canceled)},
	} {
		if _, err := get(tt.ctx, tt.key, tt.err); !errors.Is(err, tt.err) || errors.As(err, &se) {
			t.Fatalf("%s: %v; want the failure itself", tt.name, err)
		}
	}
	if got := c.Stats().StaleServed; got != 2 {
		t.Fatalf("StaleServed = %d, want 2", got)
	}
	// Every entry older than MaxStale: nothing.
	c.cfg.MaxStale = 500 * time.Millisecond
	if _, err := get(cached, "k", failed); errors.As(err, &se) {
		t.Fatalf("entries older than MaxStale: %v", err)
	}
	// A write is never answered from the cache.
	set := redis.NewStatusCmd(cached, "set", "k", "v")
	if err := c.FailOpen(cached, set, failed); !errors.Is(err, failed) || errors.As(err, &se) {
		t.Fatalf("SET: %v; want the failure", err)
	}
}
