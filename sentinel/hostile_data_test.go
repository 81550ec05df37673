package sentinel

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/testkit"
)

// A data node answering the caller's own commands with replies no Redis
// sends (a GET answered "*2147483647", a string of 2 GiB, a line without
// an end, 1,000 levels of nesting, an attribute flood) fails that command
// with a *ReplyLimitError naming the node and the limit, on a GET, a
// pipeline, a SCAN and a subscription alike; the process survives with its
// memory bounded, and the next command, on a new connection, works.
// Legal large replies (a 20 MiB string, an array of 66,000 elements, past
// the control path's bounds) pass.
func TestHostileDataReplies(t *testing.T) {
	ctx := testkit.Context(t, 2*time.Minute)
	node := testkit.NewHostileNode(t, nil)
	host, port, _ := net.SplitHostPort(node.Addr())
	sent := newFakeServer(t, func(args []string) string {
		switch strings.ToUpper(args[0]) {
		case "PING":
			return "+PONG\r\n"
		case "PSUBSCRIBE":
			return respArray("$10\r\npsubscribe\r\n", "$1\r\n*\r\n", ":1\r\n")
		case "SENTINEL":
			switch strings.ToUpper(args[1]) {
			case "MASTER":
				return masterFields(host, port)
			case "GET-MASTER-ADDR-BY-NAME":
				return respFields(host, port)
			case "REPLICAS", "SENTINELS":
				return "*0\r\n"
			}
		}
		return "-ERR no\r\n"
	})
	// The 20 MiB reply: see testkit.BigReplyTimeout.
	c, err := NewClient(Config{MasterName: "mymaster", SentinelAddrs: []string{sent.Addr()},
		ReadTimeout: testkit.BigReplyTimeout, WriteTimeout: testkit.BigReplyTimeout,
		ReplyLimits: ReplyLimits{MaxReplyElements: testkit.HostileFloodLimit}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testkit.CheckHostileDataReplies(t, ctx, c, func(t *testing.T, key string, h testkit.HostileReply) []testkit.HostileDataCall {
		return append(testkit.HostileDataCalls(t, ctx, c, key),
			// A typed reader fails on a header of the wrong type by
			// itself (go-redis's "can't parse"); what it meets first is
			// checked all the same, bar the nesting it never reaches.
			testkit.HostileDataCall{Name: "typed GET", Run: func() error {
				if h.What == respguard.WhatDepth {
					return c.Do(ctx, "GET", key).Err()
				}
				return c.Get(ctx, key).Err()
			}})
	}, func(t *testing.T, call string, err error, h testkit.HostileReply) {
		checkReplyLimitError(t, call, err, node.Addr(), h.What)
		if call == "GET" || call == "typed GET" {
			var ne *NodeError
			if !errors.As(err, &ne) || ne.Addr != node.Addr() || !ne.MayHaveExecuted {
				t.Errorf("GET: %v; want a *NodeError on %s that may have executed", err, node.Addr())
			}
		}
	})

	// Subscriptions still work, on a new connection.
	ps := c.Subscribe(ctx, "news")
	defer ps.Close()
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if m, err := ps.ReceiveMessage(rctx); err != nil || m.Payload != "hello" {
		t.Fatalf("a subscription after: %v, %v", m, err)
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
