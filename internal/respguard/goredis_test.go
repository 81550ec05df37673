package respguard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/testkit"
)

// The replies of normal traffic.
var (
	testInfo         = infoText()
	testClusterNodes = clusterNodes(1000)
)

// normal answers as a Redis 7 server would, in RESP2 or RESP3 as HELLO
// chose.
func normal(s *testkit.FakeSession, cmd []string) string {
	switch strings.ToUpper(cmd[0]) {
	case "HELLO":
		if len(cmd) > 1 {
			s.RESP3 = cmd[1] == "3"
		}
		proto := "2"
		if s.RESP3 {
			proto = "3"
		}
		return mapOf(!s.RESP3, bulk("server"), bulk("redis"), bulk("version"), bulk("7.0.15"), bulk("proto"), ":"+proto+"\r\n",
			bulk("id"), ":7\r\n", bulk("mode"), bulk("standalone"), bulk("role"), bulk("master"), bulk("modules"), "*0\r\n")
	case "PING":
		return "+PONG\r\n"
	case "INFO":
		return bulk(testInfo)
	case "CLUSTER":
		return bulk(testClusterNodes)
	case "LRANGE":
		items := make([]string, 10000)
		for i := range items {
			items[i] = bulk("item-" + strconv.Itoa(i))
		}
		return agg('*', items...)
	case "ROLE":
		return agg('*', bulk("master"), ":123456789\r\n",
			agg('*', agg('*', bulk("10.0.0.2"), bulk("6379"), bulk("123456789")), agg('*', bulk("10.0.0.3"), bulk("6379"), bulk("123456700"))))
	case "CONFIG":
		return mapOf(!s.RESP3, bulk("maxmemory"), bulk("0"), bulk("maxmemory-policy"), bulk("noeviction"), bulk("appendonly"), bulk("no"))
	case "SUBSCRIBE":
		push := byte('*')
		if s.RESP3 {
			push = '>'
		}
		var out strings.Builder
		for i, ch := range cmd[1:] {
			out.WriteString(agg(push, bulk("subscribe"), bulk(ch), ":"+strconv.Itoa(i+1)+"\r\n"))
		}
		for _, ch := range cmd[1:] {
			out.WriteString(agg(push, bulk("message"), bulk(ch), bulk("+switch-master mymaster 10.0.0.1 6379 10.0.0.2 6379")))
		}
		return out.String()
	}
	return "+OK\r\n"
}

// client is a go-redis client of rediskit's settings (no retries, context
// deadlines bound reads) dialling through the guard.
func client(addr string, protocol int, lim Limits) *redis.Client {
	return redis.NewClient(redisopt.Inner(&redis.Options{
		Addr:        addr,
		Protocol:    protocol,
		Dialer:      WrapDialer(nil, lim),
		DialTimeout: 5 * time.Second,
		// Far above the bound the tests hold go-redis to, so that a
		// reply the guard failed to refuse shows as a timeout.
		ReadTimeout: 10 * time.Second,
		PoolSize:    2,
	}))
}

func TestGoRedisNormalTraffic(t *testing.T) {
	srv := testkit.NewFakeServer(t, normal)
	for _, protocol := range []int{3, 2} {
		t.Run("RESP"+strconv.Itoa(protocol), func(t *testing.T) {
			ctx := testkit.Context(t, 20*time.Second)
			c := client(srv.Addr(), protocol, Limits{})
			defer c.Close()
			if got, err := c.Ping(ctx).Result(); err != nil || got != "PONG" {
				t.Fatalf("PING: %q, %v", got, err)
			}
			hello, err := c.Do(ctx, "HELLO", strconv.Itoa(protocol)).Result()
			if err != nil {
				t.Fatalf("HELLO: %v", err)
			}
			if protocol == 3 {
				if m, ok := hello.(map[any]any); !ok || m["version"] != "7.0.15" || m["proto"] != int64(3) {
					t.Errorf("HELLO 3: %#v, want a map", hello)
				}
			} else if a, ok := hello.([]any); !ok || len(a) != 14 {
				t.Errorf("HELLO 2: %#v, want a flat array", hello)
			}
			if got, err := c.Info(ctx).Result(); err != nil || got != testInfo {
				t.Errorf("INFO: %d bytes, %v; want %d bytes", len(got), err, len(testInfo))
			}
			if got, err := c.ClusterNodes(ctx).Result(); err != nil || got != testClusterNodes {
				t.Errorf("CLUSTER NODES of 1000 nodes: %d bytes, %v; want %d bytes", len(got), err, len(testClusterNodes))
			}
			items, err := c.LRange(ctx, "k", 0, -1).Result()
			if err != nil || len(items) != 10000 || items[9999] != "item-9999" {
				t.Errorf("a 10,000-element array: %d elements, %v", len(items), err)
			}
			role, err := c.Do(ctx, "ROLE").Slice()
			if err != nil || len(role) != 3 || role[0] != "master" {
				t.Errorf("ROLE: %v, %v", role, err)
			}
			cfg, err := c.ConfigGet(ctx, "*").Result()
			if err != nil || cfg["maxmemory-policy"] != "noeviction" {
				t.Errorf("CONFIG GET (a map): %v, %v", cfg, err)
			}
			ps := c.Subscribe(ctx, "__sentinel__:hello", "+switch-master")
			defer ps.Close()
			for _, ch := range []string{"__sentinel__:hello", "+switch-master"} {
				msg, err := ps.ReceiveMessage(ctx)
				if err != nil || msg.Channel != ch || !strings.HasPrefix(msg.Payload, "+switch-master") {
					t.Fatalf("pub/sub message: %v, %v", msg, err)
				}
			}
		})
	}
}

// hostile replies, as the fault injection found them.
var hostile = []struct {
	name, reply, what string
}{
	{"2^31-1 elements", "*2147483647\r\n", WhatAggregate},
	{"2^63-1 elements", "*9223372036854775807\r\n", WhatAggregate},
	{"2^31-1 bytes", "$2147483647\r\n", WhatBulk},
	{"a 100 kB line without \\n", "+" + strings.Repeat("a", 100_000), WhatLine},
	{"nesting 100,000 deep", "%1\r\n+k\r\n" + strings.Repeat("*1\r\n", 100_000), WhatDepth},
	{"a map of 2^40 pairs", "%1099511627776\r\n", WhatAggregate},
	{"a set of 2^40 elements inside a map", "%1\r\n+k\r\n~1099511627776\r\n", WhatAggregate},
	{"an attribute of 2^40 pairs", "|1099511627776\r\n", WhatAggregate},
	{"a push of 2^31-1 elements", ">2147483647\r\n", WhatAggregate},
	{"a verbatim string of 2^31-1 bytes", "=2147483647\r\n", WhatBulk},
	{"a blob error of 2^31-1 bytes", "!2147483647\r\n", WhatBulk},
	{"an HTTP server", "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", WhatMalformed},
}

// TestGoRedisHostile has a go-redis client talk through the guard to a
// server that answers HELLO, or a command after a normal HELLO, with a
// hostile reply: the client gets a *LimitError promptly, the process does
// not allocate what the reply declares, and Close returns promptly. The
// command is sent with Do, whose reply go-redis reads whatever its type
// (PING's own reader would fail on its own at the first aggregate); the
// nested replies are maps so that go-redis's HELLO reader (a map) reads
// into them too.
func TestGoRedisHostile(t *testing.T) {
	const (
		prompt  = 2 * time.Second
		maxHeap = 16 << 20 // bytes allocated in all, client included
	)
	for _, h := range hostile {
		for _, when := range []string{"HELLO", "PING"} {
			for _, protocol := range []int{3, 2} {
				t.Run(fmt.Sprintf("%s/answering %s/RESP%d", h.name, when, protocol), func(t *testing.T) {
					srv := testkit.NewFakeServer(t, func(s *testkit.FakeSession, cmd []string) string {
						if strings.EqualFold(cmd[0], when) {
							return h.reply
						}
						return normal(s, cmd)
					})
					ctx := testkit.Context(t, 20*time.Second)
					runtime.GC()
					var before, after runtime.MemStats
					runtime.ReadMemStats(&before)

					c := client(srv.Addr(), protocol, Limits{})
					began := time.Now()
					err := c.Do(ctx, "PING").Err()
					took := time.Since(began)
					began = time.Now()
					cerr := c.Close()
					closing := time.Since(began)

					runtime.ReadMemStats(&after)
					le := limitErr(err)
					if le == nil || le.What != h.what {
						t.Fatalf("PING: %v; want a %s *LimitError", err, h.what)
					}
					if le.Addr != srv.Addr() {
						t.Errorf("LimitError.Addr %q, want the address dialled, %q", le.Addr, srv.Addr())
					}
					if !failure.Network(err) || failure.Timeout(err) || !failure.Signal(err) {
						t.Errorf("%v: Network %v, Timeout %v, Signal %v; want a network error, not a timeout",
							err, failure.Network(err), failure.Timeout(err), failure.Signal(err))
					}
					if took > prompt {
						t.Errorf("the error took %v, want under %v", took, prompt)
					}
					if cerr != nil || closing > prompt {
						t.Errorf("Close: %v after %v", cerr, closing)
					}
					if alloc := after.TotalAlloc - before.TotalAlloc; alloc > maxHeap {
						t.Errorf("%d bytes allocated during the exchange, bound %d", alloc, maxHeap)
					} else {
						t.Logf("%v, %d KiB allocated", took, alloc>>10)
					}
				})
			}
		}
	}
}

// TestGoRedisPushFlood sends pub/sub pushes whose count is hostile on a
// subscribed connection: ReceiveMessage fails with the *LimitError.
func TestGoRedisPushFlood(t *testing.T) {
	srv := testkit.NewFakeServer(t, func(s *testkit.FakeSession, cmd []string) string {
		if strings.EqualFold(cmd[0], "SUBSCRIBE") {
			return normal(s, cmd) + ">2147483647\r\n"
		}
		return normal(s, cmd)
	})
	ctx := testkit.Context(t, 20*time.Second)
	c := client(srv.Addr(), 3, Limits{})
	defer c.Close()
	ps := c.Subscribe(ctx, "ch")
	defer ps.Close()
	if msg, err := ps.ReceiveMessage(ctx); err != nil || msg.Channel != "ch" {
		t.Fatalf("the message before the hostile push: %v, %v", msg, err)
	}
	_, err := ps.ReceiveMessage(ctx)
	if le := limitErr(err); le == nil || le.What != WhatAggregate {
		t.Fatalf("ReceiveMessage: %v, want a *LimitError", err)
	}
}

// TestWrapDialerKeepsDialErrors checks that a dial error is the dialer's,
// unchanged (rediskit's dialers mark theirs as *failure.DialError).
func TestWrapDialerKeepsDialErrors(t *testing.T) {
	want := &failure.DialError{Addr: "10.0.0.1:6379", Err: errors.New("refused")}
	dial := WrapDialer(func(context.Context, string, string) (net.Conn, error) { return nil, want }, Limits{})
	if c, err := dial(context.Background(), "tcp", "10.0.0.1:6379"); c != nil || err != want {
		t.Fatalf("got %v, %v; want nil, the dialer's error", c, err)
	}
}

// TestWrapDialerNamesTheServer checks the name a LimitError gives: the
// address dialled, or, when that is a label (a pub/sub client's
// Options.Addr), the connection's remote address; a Unix socket's path as
// dialled.
func TestWrapDialerNamesTheServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("*9000000000000000000\r\n"))
			defer c.Close()
		}
	}()
	real := ln.Addr().String()
	for _, tt := range []struct{ network, addr, want string }{
		{"tcp", real, real},
		{"tcp", "cluster/pubsub", real},
		{"tcp", "host:", real},
		{"unix", "/run/redis.sock", "/run/redis.sock"},
	} {
		dial := WrapDialer(func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "tcp", real)
		}, Limits{})
		c, err := dial(context.Background(), tt.network, tt.addr)
		if err != nil {
			t.Fatal(err)
		}
		_, err = io.ReadAll(c)
		_ = c.Close()
		if le := limitErr(err); le == nil || le.Addr != tt.want {
			t.Errorf("dialled %s %q: %v; want a LimitError naming %s", tt.network, tt.addr, err, tt.want)
		}
	}
}

// TestAllocationBound checks the bound Limits documents for what go-redis
// allocates for one accepted reply: its bytes (the strings, copied once)
// plus 64 bytes an element, so at most about MaxReplyBytes + 64 ×
// MaxReplyElements. The replies are at the limits (here smaller than the
// defaults, to keep the test quick), of the shapes that cost go-redis most
// per element or per byte.
func TestAllocationBound(t *testing.T) {
	lim := Limits{MaxAggregate: 1 << 12, MaxReplyElements: 1 << 16, MaxBulk: 1 << 20, MaxReplyBytes: 4 << 20}
	const (
		perElement = 64
		slack      = 512 << 10
	)
	nested := func(inner func(k int) string) string {
		var b strings.Builder
		b.WriteString("*16\r\n")
		for k := range 16 {
			b.WriteString(inner(k))
		}
		return b.String()
	}
	shapes := []struct {
		name, reply string
		elems       int64
	}{
		{"integers", nested(func(int) string { return "*4095\r\n" + strings.Repeat(":1\r\n", 4095) }), 16 + 16*4095},
		{"empty strings", nested(func(int) string { return "*4095\r\n" + strings.Repeat("$0\r\n\r\n", 4095) }), 16 + 16*4095},
		{"empty arrays", nested(func(int) string { return "*4095\r\n" + strings.Repeat("*0\r\n", 4095) }), 16 + 16*4095},
		{"maps", nested(func(k int) string {
			var b strings.Builder
			b.WriteString("%2047\r\n")
			for i := range 2047 {
				b.WriteString(":" + strconv.Itoa(k*4096+i) + "\r\n_\r\n")
			}
			return b.String()
		}), 16 + 16*4094},
		{"strings", agg('*', bulk(strings.Repeat("a", 1<<20-64)), bulk(strings.Repeat("b", 1<<20-64)),
			bulk(strings.Repeat("c", 1<<20-64)), bulk(strings.Repeat("d", 1<<20-64))), 4},
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			srv := testkit.NewFakeServer(t, func(s *testkit.FakeSession, cmd []string) string {
				if cmd[0] == "BIG" {
					return sh.reply
				}
				return normal(s, cmd)
			})
			ctx := testkit.Context(t, time.Minute)
			c := client(srv.Addr(), 3, lim)
			defer c.Close()
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			err := c.Do(ctx, "BIG").Err()
			runtime.ReadMemStats(&after)
			if err != nil {
				t.Fatalf("a reply at the limits was refused: %v", err)
			}
			// Each reply's own bytes and elements, priced as documented,
			// plus room for go-redis's buffers: a second copy of the
			// strings, or more per element, would not fit.
			alloc := int64(after.TotalAlloc - before.TotalAlloc)
			bound := int64(len(sh.reply)) + perElement*sh.elems + slack
			t.Logf("%d bytes, %d elements: %d KiB allocated, %.0f bytes an element; bound %d KiB",
				len(sh.reply), sh.elems, alloc>>10, float64(alloc)/float64(sh.elems), bound>>10)
			if alloc > bound {
				t.Errorf("%d bytes allocated for one reply, over the documented bound %d", alloc, bound)
			}
			if sh.elems > lim.MaxReplyElements || int64(len(sh.reply)) > lim.MaxReplyBytes {
				t.Fatalf("the test reply is over the limits it runs with")
			}
		})
	}
}

// TestGoRedisIdlePartialLine: a server sends, unprompted, the start of a
// line on an idle pooled connection and no more. go-redis's health check
// (RESP3) peeks at the type byte of such data, with no deadline, and
// drops the connection; the guard must let that byte through rather than
// hold it with the rest of the line, or the next command's pool Get would
// block for as long as the server keeps the line incomplete (forever).
func TestGoRedisIdlePartialLine(t *testing.T) {
	var once sync.Once
	srv := testkit.NewFakeServer(t, func(s *testkit.FakeSession, cmd []string) string {
		if strings.EqualFold(cmd[0], "PING") {
			once.Do(func() { s.Later(50*time.Millisecond, "+PART") })
		}
		return normal(s, cmd)
	})
	ctx := testkit.Context(t, 20*time.Second)
	c := client(srv.Addr(), 3, Limits{})
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // "+PART" waits in the idle connection's socket
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		done <- c.Do(ctx, "PING").Err()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("PING after the partial line: %v", err)
		}
	case <-time.After(10 * time.Second):
		c.Close() // unblocks the stuck read, so the goroutine ends
		<-done
		t.Fatal("the command's pool Get blocked on the idle connection's partial line")
	}
}
