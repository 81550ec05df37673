package multidb

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/testkit"
)

// A database (built from Database.Options, or a go-redis client given as
// Database.Client) answering the caller's own
// commands with replies no Redis sends (a GET answered "*2147483647", a
// string of 2 GiB, a line without an end, 1,000 levels of nesting, an
// attribute flood) fails that command with a *ReplyLimitError naming the
// server and the limit, on a GET, a pipeline, a SCAN and a subscription
// (there inside a *SubscriptionError: multidb's bridge ends the caller's
// connection with it); the process survives with its memory
// bounded, and the next command works. Legal large replies (a 20 MiB string, 66,000 elements: past the
// control path's bounds) pass.
func TestHostileDataReplies(t *testing.T) {
	ctx := testkit.Context(t, 2*time.Minute)
	node := testkit.NewHostileNode(t, nil)
	addr := node.Addr()
	// A database multidb builds (Options), and a go-redis client the
	// caller built (Client), bounded by a dial hook multidb adds.
	// The 20 MiB reply: see testkit.BigReplyTimeout.
	callers := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DialerRetries: 1, ContextTimeoutEnabled: true,
		ReadTimeout: testkit.BigReplyTimeout, WriteTimeout: testkit.BigReplyTimeout})
	defer callers.Close()
	for _, db := range []Database{
		{Name: "options", Weight: 1, Options: &redis.Options{Addr: addr, Protocol: 2, ReadTimeout: testkit.BigReplyTimeout, WriteTimeout: testkit.BigReplyTimeout}},
		{Name: "client", Weight: 1, Client: callers},
	} {
		t.Run(db.Name, func(t *testing.T) {
			checkHostileDataReplies(t, ctx, db, addr)
		})
	}
}

func checkHostileDataReplies(t *testing.T, ctx context.Context, db Database, addr string) {
	c, err := NewClient(fast(Config{
		Databases:   []Database{db},
		ReplyLimits: ReplyLimits{MaxReplyElements: testkit.HostileFloodLimit},
		// The breaker's judgement of a server that keeps failing calls
		// is tested elsewhere; here, each refused reply alone.
		MinFailures: -1,
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	testkit.CheckHostileDataReplies(t, ctx, c, func(t *testing.T, key string, _ testkit.HostileReply) []testkit.HostileDataCall {
		return testkit.HostileDataCalls(t, ctx, c, key)
	}, func(t *testing.T, call string, err error, h testkit.HostileReply) {
		if call == "SUBSCRIBE" {
			// A subscription is served through a bridge, which ends the
			// caller's connection with the refusal: a *SubscriptionError
			// wrapping the *ReplyLimitError.
			var se *SubscriptionError
			if !errors.As(err, &se) {
				t.Errorf("SUBSCRIBE: %T %v; want a *SubscriptionError", err, err)
			}
		}
		checkReplyLimitError(t, call, err, addr, h.What)
	})

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
		t.Errorf("%s: %q does not name the server %s and the limit", call, msg, addr)
	}
	if what == respguard.WhatAggregate && le.Limit != DefaultReplyMaxAggregate {
		t.Errorf("%s: limit %d; want the default %d", call, le.Limit, DefaultReplyMaxAggregate)
	}
}
