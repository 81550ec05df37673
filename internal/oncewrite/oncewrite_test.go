package oncewrite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/keyslot"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// wrapHook makes every write a client sends exactly-once (through w), and
// remembers the forms it sent.
type wrapHook struct {
	w    *Writer
	sent []*Cmd
}

func (h *wrapHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *wrapHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.w.classifier.ReadOnly(cmd) || Is(cmd) {
			return next(ctx, cmd)
		}
		q, err := h.w.Wrap(ctx, cmd)
		if err != nil {
			return err
		}
		if oc, ok := q.(*Cmd); ok {
			h.sent = append(h.sent, oc)
		}
		return next(ctx, q)
	}
}
func (h *wrapHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func newWriter(t *testing.T, cfg exactlyonce.Config) *Writer {
	t.Helper()
	w, err := New(&cfg, time.Second, classify.New(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// standalone starts a server and returns a context for the test, the
// node, a client of it and a Writer with the defaults.
func standalone(t *testing.T) (context.Context, *lab.Node, *redis.Client, *Writer) {
	t.Helper()
	ctx := testkit.Context(t, 60*time.Second)
	node := lab.New(t, lab.Standalone()).Node(0)
	rc := node.NewClient()
	t.Cleanup(func() { _ = rc.Close() })
	return ctx, node, rc, newWriter(t, exactlyonce.Config{})
}

// state is every key but the tokens, with its value as DUMP gives it.
func state(ctx context.Context, t *testing.T, rc *redis.Client) map[string]string {
	t.Helper()
	keys, err := rc.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, k := range keys {
		if strings.HasPrefix(k, exactlyonce.DefaultKeyPrefix) {
			continue
		}
		v, err := rc.Dump(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		out[k] = v
	}
	return out
}

// TestScriptReplies runs writes of every reply type plainly and in their
// exactly-once form, on both protocols, and checks that go-redis's typed
// commands read the same result and the same data results; then sends
// each exactly-once form again, which must return the same reply and
// change nothing.
func TestScriptReplies(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	node := lab.New(t, lab.Standalone()).Node(0)
	type write struct {
		name  string
		setup func(rc *redis.Client)
		run   func(rc *redis.Client) redis.Cmder
	}
	big := strings.Repeat("x", 100_000)
	writes := []write{
		{"SET", nil, func(rc *redis.Client) redis.Cmder { return rc.Set(ctx, "k", "v", 0) }},
		{"SET GET (nil)", nil, func(rc *redis.Client) redis.Cmder { return rc.SetArgs(ctx, "k", "v", redis.SetArgs{Get: true}) }},
		{"SET GET (old)", func(rc *redis.Client) { rc.Set(ctx, "k", "old", 0) }, func(rc *redis.Client) redis.Cmder { return rc.SetArgs(ctx, "k", "v", redis.SetArgs{Get: true}) }},
		{"SET NX refused (nil)", func(rc *redis.Client) { rc.Set(ctx, "k", "old", 0) }, func(rc *redis.Client) redis.Cmder { return rc.SetNX(ctx, "k", "v", time.Minute) }},
		{"SET big value", nil, func(rc *redis.Client) redis.Cmder { return rc.Set(ctx, "k", big, 0) }},
		{"INCR", nil, func(rc *redis.Client) redis.Cmder { return rc.Incr(ctx, "n") }},
		{"INCRBY large", func(rc *redis.Client) { rc.Set(ctx, "n", 1<<52, 0) }, func(rc *redis.Client) redis.Cmder { return rc.IncrBy(ctx, "n", 12345) }},
		{"INCRBYFLOAT", nil, func(rc *redis.Client) redis.Cmder { return rc.IncrByFloat(ctx, "f", 1.25) }},
		{"RPUSH", nil, func(rc *redis.Client) redis.Cmder { return rc.RPush(ctx, "l", "a", "b") }},
		{"LPOP empty", nil, func(rc *redis.Client) redis.Cmder { return rc.LPop(ctx, "l") }},
		{"LPOP count", func(rc *redis.Client) { rc.RPush(ctx, "l", 1, 2, 3) }, func(rc *redis.Client) redis.Cmder { return rc.LPopCount(ctx, "l", 2) }},
		{"LMOVE same slot", func(rc *redis.Client) { rc.RPush(ctx, "{l}a", 1, 2) }, func(rc *redis.Client) redis.Cmder { return rc.LMove(ctx, "{l}a", "{l}b", "LEFT", "RIGHT") }},
		{"HSET", nil, func(rc *redis.Client) redis.Cmder { return rc.HSet(ctx, "h", "a", 1, "b", 2) }},
		{"HINCRBYFLOAT", nil, func(rc *redis.Client) redis.Cmder { return rc.HIncrByFloat(ctx, "h", "f", 0.5) }},
		{"ZADD INCR", nil, func(rc *redis.Client) redis.Cmder {
			return rc.ZAddArgsIncr(ctx, "z", redis.ZAddArgs{Members: []redis.Z{{Score: 1.5, Member: "m"}}})
		}},
		{"ZPOPMIN", func(rc *redis.Client) {
			rc.ZAdd(ctx, "z", redis.Z{Score: 1, Member: "a"}, redis.Z{Score: 2, Member: "b"})
		}, func(rc *redis.Client) redis.Cmder { return rc.ZPopMin(ctx, "z", 2) }},
		{"SADD", nil, func(rc *redis.Client) redis.Cmder { return rc.SAdd(ctx, "s", "a", "b") }},
		{"SPOP count", func(rc *redis.Client) { rc.SAdd(ctx, "s", "only") }, func(rc *redis.Client) redis.Cmder { return rc.SPopN(ctx, "s", 5) }},
		{"DEL several", func(rc *redis.Client) { rc.Set(ctx, "{d}1", 1, 0); rc.Set(ctx, "{d}2", 1, 0) }, func(rc *redis.Client) redis.Cmder { return rc.Del(ctx, "{d}1", "{d}2", "{d}3") }},
		{"MSET", nil, func(rc *redis.Client) redis.Cmder { return rc.MSet(ctx, "{m}a", 1, "{m}b", 2) }},
		{"EXPIRE", func(rc *redis.Client) { rc.Set(ctx, "k", 1, 0) }, func(rc *redis.Client) redis.Cmder { return rc.Expire(ctx, "k", time.Hour) }},
		{"GETDEL", func(rc *redis.Client) { rc.Set(ctx, "k", "v", 0) }, func(rc *redis.Client) redis.Cmder { return rc.GetDel(ctx, "k") }},
		{"APPEND", nil, func(rc *redis.Client) redis.Cmder { return rc.Append(ctx, "k", "abc") }},
		{"XADD", nil, func(rc *redis.Client) redis.Cmder {
			return rc.XAdd(ctx, &redis.XAddArgs{Stream: "x", ID: "1-1", Values: []any{"f", "v"}})
		}},
		{"SETRANGE", nil, func(rc *redis.Client) redis.Cmder { return rc.SetRange(ctx, "k", 3, "x") }},
	}
	for _, proto := range []int{2, 3} {
		opt := node.Options()
		opt.Protocol = proto
		plain := redis.NewClient(opt)
		t.Cleanup(func() { _ = plain.Close() })
		hook := &wrapHook{w: newWriter(t, exactlyonce.Config{})}
		once := redis.NewClient(opt)
		once.AddHook(hook)
		t.Cleanup(func() { _ = once.Close() })
		if _, err := plain.ScriptLoad(ctx, Script).Result(); err != nil {
			t.Fatal(err)
		}
		for _, wr := range writes {
			t.Run(fmt.Sprintf("RESP%d/%s", proto, wr.name), func(t *testing.T) {
				plain.FlushAll(ctx)
				if wr.setup != nil {
					wr.setup(plain)
				}
				want := wr.run(plain).String()
				wantState := state(ctx, t, plain)
				plain.FlushAll(ctx)
				if wr.setup != nil {
					wr.setup(plain)
				}
				hook.sent = hook.sent[:0]
				got := wr.run(once)
				if len(hook.sent) != 1 {
					t.Fatalf("%d exactly-once forms sent, want 1", len(hook.sent))
				}
				if got.String() != want {
					t.Fatalf("exactly-once:\n got  %s\n want %s", got.String(), want)
				}
				if s := state(ctx, t, plain); !mapsEqual(s, wantState) {
					t.Fatalf("data after the exactly-once write differs from the plain one's")
				}
				// Sent again, with its token: the same reply, nothing run.
				oc := hook.sent[0]
				oc.SetErr(nil)
				_ = once.Process(ctx, oc)
				if oc.String() != want {
					t.Fatalf("sent again:\n got  %s\n want %s", oc.String(), want)
				}
				if s := state(ctx, t, plain); !mapsEqual(s, wantState) {
					t.Fatalf("sending the write again changed the data")
				}
				ttl, err := plain.PTTL(ctx, oc.Token()).Result()
				if err != nil || ttl <= 0 || ttl > exactlyonce.DefaultTTL {
					t.Fatalf("token key %s: PTTL %v, %v", oc.Token(), ttl, err)
				}
			})
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestTokenGroups: a slot's writes fill token keys of groupSize tokens
// in turn, each token in a field of its own; another slot counts its
// own; every stored token resets its key's TTL.
func TestTokenGroups(t *testing.T) {
	ctx, node, rc, w := standalone(t)
	var st Node
	const writes = 2*groupSize + groupSize/2
	held := map[string][]string{} // token key -> fields
	var sent []*Cmd               // the writes of "a", in order
	for i := range writes {
		for _, key := range []string{"a", "b"} { // two slots
			q, err := w.Wrap(ctx, redis.NewIntCmd(ctx, "incr", key))
			if err != nil {
				t.Fatal(err)
			}
			oc := q.(*Cmd)
			if key == "a" {
				sent = append(sent, oc)
			}
			if keyslot.Of(oc.Token()) != keyslot.Of(key) {
				t.Fatalf("write %d of %s: token key %s in another slot", i, key, oc.Token())
			}
			if slices.Contains(held[oc.Token()], oc.Field()) {
				t.Fatalf("write %d of %s: field %s of %s given twice", i, key, oc.Field(), oc.Token())
			}
			held[oc.Token()] = append(held[oc.Token()], oc.Field())
			if err := st.Send(ctx, w, node.Addr(), rc, q, nil, func() error { return rc.Process(ctx, q) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(held) != 6 {
		t.Fatalf("%d token keys, want 3 a slot: %v", len(held), held)
	}
	full := 0
	for k, f := range held {
		n, err := rc.HLen(ctx, k).Result()
		if err != nil || n != int64(len(f)) {
			t.Fatalf("%s holds %d tokens (%v), want %d", k, n, err, len(f))
		}
		if len(f) == groupSize {
			full++
		}
		if ttl, err := rc.PTTL(ctx, k).Result(); err != nil || ttl <= 0 || ttl > exactlyonce.DefaultTTL {
			t.Fatalf("%s: PTTL %v, %v", k, ttl, err)
		}
	}
	if full != 4 {
		t.Fatalf("%d full token keys, want 4: %v", full, held)
	}
	// Each write sent again, in a key shared with 15 others, gets its own
	// stored reply (the counter's value it made), and runs no more.
	for _, i := range []int{0, 7, groupSize, writes - 1} {
		oc := sent[i]
		oc.SetErr(nil)
		if err := st.Send(ctx, w, node.Addr(), rc, oc, nil, func() error { return rc.Process(ctx, oc) }); err != nil {
			t.Fatal(err)
		}
		if got := oc.Cmder.(*redis.IntCmd).Val(); got != int64(i+1) {
			t.Fatalf("write %d sent again: reply %d, want %d", i, got, i+1)
		}
	}
	if n, _ := rc.Get(ctx, "a").Int(); n != writes {
		t.Fatalf("a = %d after %d writes and 4 sent again, want %d", n, writes, writes)
	}
	// A token stored into an existing key gives the key its whole TTL
	// again: the key outlives its last token by the TTL.
	q, _ := w.Wrap(ctx, redis.NewIntCmd(ctx, "incr", "a"))
	oc := q.(*Cmd)
	if set, err := rc.PExpire(ctx, oc.Token(), time.Second).Result(); err != nil || !set {
		t.Fatalf("%s: PEXPIRE %v, %v: the key should exist, with tokens", oc.Token(), set, err)
	}
	if err := st.Send(ctx, w, node.Addr(), rc, q, nil, func() error { return rc.Process(ctx, q) }); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := rc.PTTL(ctx, oc.Token()).Result(); ttl <= exactlyonce.DefaultTTL-10*time.Second {
		t.Fatalf("%s after a token was stored: PTTL %v, want about %v", oc.Token(), ttl, exactlyonce.DefaultTTL)
	}
}

// TestScriptErrors: an error reply is returned and not stored (the write
// runs when sent again and the cause is gone); a token key the
// application wrote is refused, typed, and nothing runs.
func TestScriptErrors(t *testing.T) {
	ctx, node, rc, w := standalone(t)
	var st Node
	send := func(oc *Cmd) error {
		oc.SetErr(nil)
		return st.Send(ctx, w, node.Addr(), rc, oc, nil, func() error { return rc.Process(ctx, oc) })
	}

	rc.RPush(ctx, "k", "a list")
	inc := rc.Incr(ctx, "k") // run plainly: WRONGTYPE
	inc.SetErr(nil)
	q, err := w.Wrap(ctx, redis.NewIntCmd(ctx, "incr", "k"))
	if err != nil {
		t.Fatal(err)
	}
	oc := q.(*Cmd)
	if err := send(oc); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Fatalf("INCR of a list: %v", err)
	}
	if stored, _ := rc.HExists(ctx, oc.Token(), oc.Field()).Result(); stored {
		t.Fatal("an error reply was stored")
	}
	rc.Del(ctx, "k")
	if err := send(oc); err != nil || oc.Cmder.(*redis.IntCmd).Val() != 1 {
		t.Fatalf("sent again after the cause went: %v %v", oc.Cmder, err)
	}

	// The application writes a key under the token prefix.
	q, _ = w.Wrap(ctx, redis.NewIntCmd(ctx, "incr", "n"))
	oc = q.(*Cmd)
	rc.Set(ctx, oc.Token(), "mine", 0)
	err = send(oc)
	var te *exactlyonce.TokenKeyError
	if !errors.As(err, &te) || te.Key != oc.Token() || !errors.As(oc.Err(), &te) {
		t.Fatalf("token key taken: %v (cmd: %v)", err, oc.Err())
	}
	if n, _ := rc.Exists(ctx, "n").Result(); n != 0 {
		t.Fatal("the write ran although its token key was taken")
	}
	rc.Del(ctx, oc.Token())
	rc.RPush(ctx, oc.Token(), "a list")
	if err := send(oc); !errors.As(err, &te) {
		t.Fatalf("token key of another type: %v", err)
	}
	rc.Del(ctx, oc.Token())
	rc.HSet(ctx, oc.Token(), oc.Field(), "mine")
	if err := send(oc); !errors.As(err, &te) {
		t.Fatalf("token field taken: %v", err)
	}
	if n, _ := rc.Exists(ctx, "n").Result(); n != 0 {
		t.Fatal("the write ran although its token was taken")
	}
}

// TestNoScript: a server that lost its scripts (SCRIPT FLUSH, a restart)
// answers NOSCRIPT; Send loads the script and sends the write again.
func TestNoScript(t *testing.T) {
	ctx, node, rc, w := standalone(t)
	var st Node
	for i := range 3 {
		q, _ := w.Wrap(ctx, redis.NewIntCmd(ctx, "incr", "n"))
		if i == 1 {
			rc.ScriptFlush(ctx)
		}
		err := st.Send(ctx, w, node.Addr(), rc, q, nil, func() error { return rc.Process(ctx, q) })
		if err != nil || q.(*Cmd).Cmder.(*redis.IntCmd).Val() != int64(i+1) {
			t.Fatalf("write %d: %v", i, err)
		}
	}
	// A pipeline of exactly-once writes, after another flush.
	rc.ScriptFlush(ctx)
	st.ready.Store(true) // as if the client had not noticed
	cmds := []redis.Cmder{redis.NewIntCmd(ctx, "incr", "n"), redis.NewStringCmd(ctx, "get", "n"), redis.NewIntCmd(ctx, "incr", "n")}
	out, all, err := w.WrapPipeline(ctx, cmds, false)
	if err != nil || !all || !Is(out[0]) || Is(out[1]) || !Is(out[2]) {
		t.Fatalf("WrapPipeline: %v %v %v", out, all, err)
	}
	run := func() error {
		_, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, q := range out {
				_ = p.Process(ctx, q)
			}
			return nil
		})
		return err
	}
	if err := st.Send(ctx, w, node.Addr(), rc, nil, out, run); err != nil {
		t.Fatal(err)
	}
	if v := cmds[2].(*redis.IntCmd).Val(); v != 5 {
		t.Fatalf("after the pipeline n = %d, want 5", v)
	}
}

// TestRefused: a user the ACL denies scripts, or token keys, gets a
// *exactlyonce.RefusedError naming the server and the reason, and nothing
// is sent.
func TestRefused(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	node := lab.New(t, lab.Standalone()).Node(0)
	admin := node.NewClient()
	t.Cleanup(func() { _ = admin.Close() })
	for _, tc := range []struct{ name, rules string }{
		{"no scripting", "+@all -@scripting ~*"},
		{"no token keys", "+@all ~app:*"},
		// May run the script and write hashes, not set a key's TTL: its
		// writes would run and then fail to store their tokens.
		{"no PEXPIRE", "+@string +@hash +del +evalsha +script|load ~*"},
		{"token keys read-only", "+@all ~app:* %R~rkx1:*"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user := strings.ReplaceAll(tc.name, " ", "-")
			args := append([]any{"ACL", "SETUSER", user, "reset", "on", ">pw"}, toAny(strings.Fields(tc.rules))...)
			if err := admin.Do(ctx, args...).Err(); err != nil {
				t.Fatal(err)
			}
			opt := node.Options()
			opt.Username, opt.Password = user, "pw"
			rc := redis.NewClient(opt)
			defer rc.Close()
			var logged testkit.Buffer
			w, err := New(&exactlyonce.Config{}, time.Second, classify.New(), slog.New(slog.NewTextHandler(&logged, nil)))
			if err != nil {
				t.Fatal(err)
			}
			var st Node
			q, _ := w.Wrap(ctx, redis.NewIntCmd(ctx, "incr", "app:n"))
			sent := false
			err = st.Send(ctx, w, node.Addr(), rc, q, nil, func() error { sent = true; return rc.Process(ctx, q) })
			var re *exactlyonce.RefusedError
			if !errors.As(err, &re) || re.Addr != node.Addr() || sent || !errors.As(q.Err(), &re) {
				t.Fatalf("got %v (sent %v)", err, sent)
			}
			if !strings.Contains(err.Error(), "NOPERM") {
				t.Fatalf("the reason is missing: %v", err)
			}
			if log := logged.String(); !strings.Contains(log, "level=ERROR") || !strings.Contains(log, node.Addr()) || !strings.Contains(log, "NOPERM") {
				t.Errorf("the refusal is not logged with its server and reason: %q", log)
			}
			// A second write meets the recorded refusal: not asked, not
			// logged again.
			before := logged.String()
			q2, _ := w.Wrap(ctx, redis.NewIntCmd(ctx, "incr", "app:n"))
			if err := st.Send(ctx, w, node.Addr(), rc, q2, nil, func() error { sent = true; return nil }); !errors.As(err, &re) || sent {
				t.Fatalf("second write: %v (sent %v)", err, sent)
			}
			if logged.String() != before {
				t.Error("the refusal was logged twice")
			}
		})
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// TestTokenMemory measures what a token holds on the server: 10,000
// exactly-once INCRs of counters that already exist, so that the memory
// the server gains is the tokens'. The counters are 10,000 (in 6,000 or
// so slots: one or two tokens a token key, the most a token can cost) or
// 100 (full token keys, as a busy client's slots have). It reports the
// bytes per token and the figure for 10,000 writes/s kept the default
// TTL, and fails past 200 bytes a token (BENCHMARKS.md records the
// figures).
func TestTokenMemory(t *testing.T) {
	ctx, node, rc, w := standalone(t)
	var st Node
	used := func() int64 {
		rc.Do(ctx, "MEMORY", "PURGE")
		info, err := rc.Info(ctx, "memory").Result()
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				var n int64
				fmt.Sscan(v, &n)
				return n
			}
		}
		t.Fatal("no used_memory")
		return 0
	}
	const writes = 10_000
	for _, counters := range []int{10_000, 100} {
		// SYNC: Valkey 8 frees a flushed keyspace in the background by default
		// (lazyfree-lazy-user-flush), which the next figure would count.
		if err := rc.Do(ctx, "FLUSHALL", "SYNC").Err(); err != nil {
			t.Fatal(err)
		}
		keys := make([]string, counters)
		if _, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i := range keys {
				keys[i] = fmt.Sprintf("counter:%d", i)
				p.Incr(ctx, keys[i])
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		before := used()
		var last *Cmd
		for i := range writes {
			q, _ := w.Wrap(ctx, redis.NewIntCmd(ctx, "incr", keys[i%len(keys)]))
			last = q.(*Cmd)
			if err := st.Send(ctx, w, node.Addr(), rc, q, nil, func() error { return rc.Process(ctx, q) }); err != nil {
				t.Fatal(err)
			}
		}
		per := float64(used()-before) / writes
		usage, _ := rc.MemoryUsage(ctx, last.Token()).Result()
		held, _ := rc.HLen(ctx, last.Token()).Result()
		tokenKeys, _ := rc.Keys(ctx, exactlyonce.DefaultKeyPrefix+"*").Result()
		t.Logf("%d counters: %.0f bytes a token, %d token keys (MEMORY USAGE of one: %d bytes for %d tokens); at 10,000 writes/s kept %v: %.0f MB",
			counters, per, len(tokenKeys), usage, held, exactlyonce.DefaultTTL, per*10_000*exactlyonce.DefaultTTL.Seconds()/1e6)
		if per <= 0 || per > 200 {
			t.Errorf("%d counters: %.0f bytes a token", counters, per)
		}
	}
}

// lateConn holds the bytes of its next Write (when held is set) and
// writes them to the server only after delay, on a goroutine the test
// waits for, and closes the socket then: a request that reaches the
// server late, after the client gave up on its connection.
type lateConn struct {
	net.Conn
	held  *atomic.Bool
	delay time.Duration
	wg    *sync.WaitGroup
	late  atomic.Bool // this connection holds a late write
}

func (c *lateConn) Write(b []byte) (int, error) {
	if !c.held.CompareAndSwap(true, false) {
		return c.Conn.Write(b)
	}
	c.late.Store(true)
	buf := bytes.Clone(b)
	c.wg.Go(func() {
		time.Sleep(c.delay)
		_, _ = c.Conn.Write(buf)
		time.Sleep(100 * time.Millisecond) // the server reads it before the close
		_ = c.Conn.Close()
	})
	return len(b), nil
}

func (c *lateConn) Close() error {
	if c.late.Load() {
		return nil // closed by the late write's goroutine
	}
	return c.Conn.Close()
}

// TestLateOriginal: an exactly-once INCR whose bytes are held in the
// network (500 ms) while the client times out (100 ms), sends it again
// on a new connection and gets its reply; then the original arrives. It
// finds the token: the counter stays at 1. The same held INCR sent
// plainly runs when it arrives, which is what the token prevents.
func TestLateOriginal(t *testing.T) {
	ctx, node, _, w := standalone(t)
	var held atomic.Bool
	var wg sync.WaitGroup
	defer wg.Wait()
	opt := node.Options()
	opt.ReadTimeout, opt.MaxRetries = 100*time.Millisecond, -1
	opt.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &lateConn{Conn: c, held: &held, delay: 500 * time.Millisecond, wg: &wg}, nil
	}
	rc := redis.NewClient(opt)
	defer rc.Close()
	var st Node
	for _, once := range []bool{true, false} {
		key := fmt.Sprintf("counter:%v", once)
		var q redis.Cmder = redis.NewIntCmd(ctx, "incr", key)
		if once {
			q, _ = w.Wrap(ctx, q)
			if err := st.Prepare(ctx, w, node.Addr(), rc, q.(*Cmd)); err != nil {
				t.Fatal(err)
			}
		}
		held.Store(true)
		err := rc.Process(ctx, q)
		if !failure.Timeout(err) {
			t.Fatalf("the held attempt: %v, want a timeout", err)
		}
		q.SetErr(nil)
		if err := rc.Process(ctx, q); err != nil {
			t.Fatal(err)
		}
		wg.Wait() // the original has reached the server
		n, err := rc.Get(ctx, key).Int()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case once && n != 1:
			t.Errorf("exactly-once: the late original ran again: counter %d", n)
		case !once && n != 2:
			t.Errorf("plain: counter %d, want 2 (the late original runs): the test did not deliver it", n)
		}
	}
}

// TestMaxArgs: a command of exactlyonce.MaxArgs arguments runs through
// the script (Lua's stack holds them); one more is refused before sending
// when a call insists, and sent plainly otherwise.
func TestMaxArgs(t *testing.T) {
	ctx, node, rc, w := standalone(t)
	var st Node
	mset := func(n int) *redis.StatusCmd {
		args := []any{"mset"}
		for i := 0; len(args)+2 <= n; i++ {
			args = append(args, fmt.Sprintf("{m}%d", i), i)
		}
		return redis.NewStatusCmd(ctx, args...)
	}
	largest := mset(exactlyonce.MaxArgs)
	q, err := w.Wrap(ctx, largest)
	if err != nil || !Is(q) {
		t.Fatalf("MSET of %d arguments: %v", len(largest.Args()), err)
	}
	if err := st.Send(ctx, w, node.Addr(), rc, q, nil, func() error { return rc.Process(ctx, q) }); err != nil {
		t.Fatalf("MSET of %d arguments through the script: %v", len(largest.Args()), err)
	}
	if n, _ := rc.Exists(ctx, "{m}0", fmt.Sprintf("{m}%d", (len(largest.Args())-1)/2-1)).Result(); n != 2 {
		t.Fatalf("the MSET's first and last keys: %d of 2", n)
	}
	over := redis.NewStatusCmd(ctx, append(largest.Args(), "{m}x", "y")...)
	if _, err := w.Wrap(exactlyonce.With(ctx, true), over); !errors.Is(err, exactlyonce.ErrUnsupported) {
		t.Fatalf("%d arguments, insisting: %v", len(over.Args()), err)
	}
	if q, err := w.Wrap(ctx, redis.NewStatusCmd(ctx, append(largest.Args(), "{m}x", "y")...)); err != nil || Is(q) {
		t.Fatalf("%d arguments, not insisting: %v %T", len(over.Args()), err, q)
	}
}
