package redisurl

import (
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/testkit"
)

// A client built from Options has its replies bounded: a server
// answering a GET with a reply no Redis sends fails that GET with a
// *respguard.LimitError (guard.ReplyLimitError) naming the server, and the
// next GET works, on a GET, a pipeline, a SCAN and a subscription; legal
// large replies pass.
func TestOptionsBoundReplies(t *testing.T) {
	ctx := testkit.Context(t, time.Minute)
	node := testkit.NewHostileNode(t, nil)
	u, err := Parse("redis://" + node.Addr())
	if err != nil {
		t.Fatal(err)
	}
	o, err := u.Options()
	if err != nil {
		t.Fatal(err)
	}
	o.Protocol = 2                                                                   // the hostile node refuses HELLO
	o.ReadTimeout, o.WriteTimeout = testkit.BigReplyTimeout, testkit.BigReplyTimeout // the 20 MiB reply
	c := redis.NewClient(o)
	defer c.Close()
	testkit.CheckHostileDataReplies(t, ctx, c, func(t *testing.T, key string, _ testkit.HostileReply) []testkit.HostileDataCall {
		return testkit.HostileDataCalls(t, ctx, c, key)
	}, func(t *testing.T, call string, err error, h testkit.HostileReply) {
		if h.What == respguard.WhatReplyElements && err == nil {
			// The flood's small attributes stay within Options' default
			// element bound (16,777,216 a reply): legal here.
			return
		}
		var le *respguard.LimitError
		if !errors.As(err, &le) || le.Addr != node.Addr() || le.What != h.What {
			t.Errorf("%s: %v; want a reply bound's error naming %s and %q", call, err, node.Addr(), h.What)
		}
	})
}
