package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// A cluster node answering the caller's own commands with replies no Redis
// sends (a GET answered "*2147483647", a string of 2 GiB, a line without
// an end, 1,000 levels of nesting, an attribute flood) fails that command
// with a *ReplyLimitError naming the node and the limit, on a GET, a
// pipeline, a SCAN and both kinds of subscription; the process survives
// with its memory bounded, and the next command works. Legal large replies
// (a 20 MiB string, 66,000 elements: past the control path's bounds)
// pass. The node poses as a one-node cluster serving every slot.
func TestHostileDataReplies(t *testing.T) {
	ctx := testkit.Context(t, 2*time.Minute)
	var addr string
	node := testkit.NewHostileNode(t, func(args []string) (string, bool) {
		if !strings.EqualFold(args[0], "CLUSTER") || len(args) < 2 {
			return "", false
		}
		if strings.EqualFold(args[1], "NODES") {
			line := fmt.Sprintf("%040d %s@1 myself,master - 0 0 1 connected 0-16383\n", 1, addr)
			return fmt.Sprintf("$%d\r\n%s\r\n", len(line), line), true
		}
		return "-ERR unknown subcommand\r\n", true
	})
	addr = node.Addr()
	// The 20 MiB reply: see testkit.BigReplyTimeout.
	c, err := NewClient(Config{Addrs: []string{addr}, ReadTimeout: testkit.BigReplyTimeout, WriteTimeout: testkit.BigReplyTimeout,
		ReplyLimits: ReplyLimits{MaxReplyElements: testkit.HostileFloodLimit}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testkit.CheckHostileDataReplies(t, ctx, c, func(t *testing.T, key string, _ testkit.HostileReply) []testkit.HostileDataCall {
		return append(testkit.HostileDataCalls(t, ctx, c, key),
			testkit.HostileDataCall{Name: "SSUBSCRIBE", Run: func() error { return testkit.ReceiveOnce(ctx, c.SSubscribe(ctx, key)) }})
	}, func(t *testing.T, call string, err error, h testkit.HostileReply) {
		checkReplyLimitError(t, call, err, addr, h.What)
		if call == "GET" {
			var ne *NodeError
			if !errors.As(err, &ne) || ne.Addr != addr || !ne.MayHaveExecuted {
				t.Errorf("GET: %v; want a *NodeError on %s that may have executed", err, addr)
			}
		}
	})

	// Subscriptions still work, on new connections.
	for _, ps := range []*redis.PubSub{c.Subscribe(ctx, "news"), c.SSubscribe(ctx, "news")} {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := ps.ReceiveMessage(rctx)
		cancel()
		_ = ps.Close()
		if err != nil || m.Payload != "hello" {
			t.Fatalf("a subscription after: %v, %v", m, err)
		}
	}
}

// checkReplyLimitError fails t unless err holds a *ReplyLimitError naming
// addr and the bound what, and says so in its text.
func checkReplyLimitError(t *testing.T, call string, err error, addr, what string) {
	t.Helper()
	var le *ReplyLimitError
	if !errors.As(err, &le) {
		t.Errorf("%s: %v (%T); want a *ReplyLimitError", call, err, err)
		return
	}
	if le.Addr != addr || le.What != what {
		t.Errorf("%s: a ReplyLimitError on %q for %q; want %s for %q", call, le.Addr, le.What, addr, what)
	}
	if msg := err.Error(); !strings.Contains(msg, addr) || !strings.Contains(msg, "the limit is") {
		t.Errorf("%s: %q does not name the node %s and the limit", call, msg, addr)
	}
	if what == respguard.WhatAggregate && le.Limit != DefaultReplyMaxAggregate {
		t.Errorf("%s: limit %d; want the default %d", call, le.Limit, DefaultReplyMaxAggregate)
	}
}

// Over TLS (with client certificates) the data path's guarded dialer does
// the handshake go-redis's own dialer did: commands, a replica read and a
// subscription work, and a string past the control path's 16 MiB bound
// (17 MiB) passes.
func TestReplyBoundsOverTLS(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Config{Shards: 1, Replicas: 1, TLS: true, TLSClientAuth: true})
	// 17 MiB over TLS under the race detector on a loaded machine can
	// take longer than the tests' usual ReadTimeout: the check is on the
	// bytes, not the time.
	c := newTestClient(t, l, func(o *Config) {
		o.ReplyLimits, o.ReadTimeout, o.WriteTimeout = ReplyLimits{MaxBulk: 32 << 20}, 20*time.Second, 20*time.Second
	})
	big := strings.Repeat("b", 17<<20)
	if err := c.Set(ctx, "big", big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "big").Result(); err != nil || len(v) != len(big) {
		t.Fatalf("GET of %d bytes over TLS: %d, %v", len(big), len(v), err)
	}
	// The replica may not have the key yet: the read's connection is
	// what is checked.
	if err := c.Get(WithReadFrom(ctx, ReplicaPreferred), "big").Err(); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatalf("a replica read over TLS: %v", err)
	}
	ps := c.SSubscribe(ctx, "news")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.SPublish(ctx, "news", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "hello" {
		t.Fatalf("a subscription over TLS: %v, %v", m, err)
	}
}
