package failure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// predicate is one of the package's rules, applied to an error and the
// context of the call that it ended.
type predicate struct {
	name string
	f    func(ctx context.Context, err error) bool
}

func errOnly(f func(error) bool) func(context.Context, error) bool {
	return func(_ context.Context, err error) bool { return f(err) }
}

// predicates is every predicate of the package. WorkSignal and
// ProvablyNotExecuted are applied to one command that failed with the
// error.
var predicates = []predicate{
	{"IsNil", errOnly(IsNil)},
	{"Reply", errOnly(Reply)},
	{"Answer", errOnly(Answer)},
	{"IsDial", errOnly(IsDial)},
	{"NotExecuted", errOnly(NotExecuted)},
	{"ProvablyNotExecuted", func(_ context.Context, err error) bool {
		return ProvablyNotExecuted(classify.New(), mk("set", err), nil, err)
	}},
	{"Unblocked", errOnly(Unblocked)},
	{"Network", errOnly(Network)},
	{"ConnectionLost", errOnly(ConnectionLost)},
	{"Refused", errOnly(Refused)},
	{"Timeout", errOnly(Timeout)},
	{"ContextError", errOnly(ContextError)},
	{"BareContextError", errOnly(BareContextError)},
	{"CallerEnded", func(ctx context.Context, _ error) bool { return CallerEnded(ctx) }},
	{"Signal", errOnly(Signal)},
	{"WorkSignal", func(ctx context.Context, err error) bool { return WorkSignal(ctx, mk("get", err), nil, err) }},
	{"UnknownMaster", errOnly(UnknownMaster)},
	{"UnknownCommand", errOnly(UnknownCommand)},
	{"NoScript", errOnly(NoScript)},
	{"NoPasswordConfigured", errOnly(NoPasswordConfigured)},
	{"AOFDisabled", errOnly(AOFDisabled)},
	{"Redirect", errOnly(isRedirect)},
	{"TryAgain", errOnly(TryAgain)},
	{"ClusterDown", errOnly(ClusterDown)},
	{"Loading", errOnly(Loading)},
	{"MasterDown", errOnly(MasterDown)},
	{"Unreachable", errOnly(Unreachable)},
	{"PubSubPayload", errOnly(PubSubPayload)},
	{"CrossSlot", errOnly(CrossSlot)},
}

// classified is an error, the context of the call it ended (nil: one that
// has not ended), and the predicates that must be true for it: all the
// others must be false.
type classified struct {
	name string
	ctx  context.Context
	err  error
	want string // predicate names, space-separated
}

// Sets of predicates that go together.
const (
	// A command never sent, or refused before it ran: a failure signal
	// that may be run again.
	notRun = "NotExecuted ProvablyNotExecuted Signal WorkSignal"
	// A connection not made.
	dialFailed = "IsDial Network Refused Unreachable " + notRun
	// A connection lost after the command may have been sent.
	lost = "Network ConnectionLost Signal WorkSignal Unreachable"
	// A socket deadline while the caller still waits.
	socketTimeout = "Network Timeout Signal WorkSignal Unreachable"
)

// TestPredicates checks every predicate against errors that go-redis
// returned from real servers, and against constructed ones (wrapped,
// joined, bare), for the cases a server cannot produce on demand.
func TestPredicates(t *testing.T) {
	rows := append(realErrors(t), constructedErrors()...)

	known := map[string]bool{}
	for _, p := range predicates {
		known[p.name] = true
	}
	seenTrue, seenFalse := map[string]bool{}, map[string]bool{}
	for _, r := range rows {
		want := strings.Fields(r.want)
		for _, w := range want {
			if !known[w] {
				t.Fatalf("%s: unknown predicate %q in want", r.name, w)
			}
		}
		ctx := r.ctx
		if ctx == nil {
			ctx = context.Background()
		}
		for _, p := range predicates {
			expect := slices.Contains(want, p.name)
			if got := p.f(ctx, r.err); got != expect {
				t.Errorf("%s: %s(%T %q) = %v, want %v", r.name, p.name, r.err, BriefErr(r.err), got, expect)
			}
			if expect {
				seenTrue[p.name] = true
			} else {
				seenFalse[p.name] = true
			}
		}
	}
	// Every predicate is shown both ways, so that none passes by
	// answering the same for everything.
	for _, p := range predicates {
		if !seenTrue[p.name] || !seenFalse[p.name] {
			t.Errorf("%s: the table has no row where it is true, or none where it is false", p.name)
		}
	}
}

// realErrors produces errors as go-redis returns them from real servers.
func realErrors(t *testing.T) []classified {
	ctx := testkit.Context(t, 60*time.Second)
	var rows []classified
	add := func(name string, callCtx context.Context, err error, want string) {
		t.Logf("real: %s: %T %q", name, err, BriefErr(err))
		rows = append(rows, classified{name: "real: " + name, ctx: callCtx, err: err, want: want})
	}

	cfg := lab.Standalone()
	cfg.Proxy = true // for a black hole
	// Without HELLO (as on Redis before 6), go-redis authenticates with
	// AUTH <password>, which a server without a password refuses; HELLO's
	// AUTH default <password> would be accepted by the default user.
	cfg.ExtraConfig = []string{`rename-command HELLO ""`}
	l := lab.New(t, cfg)
	n := l.Node(0)

	short := n.Options()
	short.ReadTimeout = 200 * time.Millisecond
	c := redis.NewClient(short)
	t.Cleanup(func() { _ = c.Close() })
	// A socket deadline that only the caller's context can set: the read
	// timeout is far longer than the caller's deadline.
	fromCtx := n.Options()
	fromCtx.ReadTimeout = 30 * time.Second
	fromCtx.ContextTimeoutEnabled = true
	cc := redis.NewClient(fromCtx)
	t.Cleanup(func() { _ = cc.Close() })
	for _, client := range []*redis.Client{c, cc} {
		if err := client.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}

	n.BlackHole()
	add("read timeout, the server silent", nil, c.Ping(ctx).Err(), socketTimeout)
	callerCtx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	t.Cleanup(cancel)
	err := cc.Ping(callerCtx).Err()
	// go-redis reports the caller's deadline as the socket's i/o timeout:
	// only CallerEnded tells that it was the caller's, and WorkSignal
	// does not count it against the server.
	add("the caller's deadline, as a socket timeout", callerCtx, err, "Network Timeout Signal CallerEnded Unreachable")
	n.Restore()

	expired, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Millisecond))
	t.Cleanup(cancel)
	add("the caller's deadline passed before the call", expired, c.Ping(expired).Err(),
		"Timeout ContextError BareContextError Signal CallerEnded Unreachable")
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	add("the caller cancelled", cancelled, c.Ping(cancelled).Err(), "ContextError BareContextError CallerEnded")

	add("NOSCRIPT", nil, c.EvalSha(ctx, strings.Repeat("0", 40), nil).Err(), "Reply NoScript Answer")
	add("unknown command", nil, c.Do(ctx, "RKTEST.NOSUCHCOMMAND").Err(), "Reply UnknownCommand Answer")
	// WAITAOF's local fsync without an AOF: Valkey (and Redis 7.2 and
	// newer) refuse it; Redis 7.0 has no WAITAOF.
	waitAOF := c.Do(ctx, "WAITAOF", 1, 0, 1).Err()
	if v := l.ServerVersion(); v.Name == "valkey" || v.AtLeast(7, 2) {
		add("WAITAOF without appendonly on "+v.String(), nil, waitAOF, "Reply AOFDisabled Answer")
	} else {
		add("WAITAOF on "+v.String(), nil, waitAOF, "Reply UnknownCommand Answer")
	}
	withPassword := n.Options()
	withPassword.Password = "not-configured"
	d := redis.NewClient(withPassword)
	add("AUTH to a server without a password", nil, d.Ping(ctx).Err(), "Reply NoPasswordConfigured Answer")
	_ = d.Close()
	_, err = c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "k", "v", 0)
		p.Do(ctx, "RKTEST.NOSUCHCOMMAND")
		return nil
	})
	add("EXECABORT", nil, err, "Reply "+notRun)

	// A blocking command, ended before it was served (UNBLOCKED), then
	// with its connection killed (lost).
	conn := c.Conn()
	t.Cleanup(func() { _ = conn.Close() })
	id, err := conn.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	blocked := func(end ...any) error {
		done := make(chan error, 1)
		go func() { done <- conn.BLPop(ctx, 30*time.Second, "rktest:nothing").Err() }()
		testkit.WaitFor(t, 10*time.Second, "BLPOP to block", func() bool {
			info, err := c.Do(ctx, "CLIENT", "LIST", "ID", id).Text()
			return err == nil && strings.Contains(info, " flags=b ") && strings.Contains(info, " cmd=blpop ")
		})
		if err := c.Do(ctx, end...).Err(); err != nil {
			t.Fatal(err)
		}
		return <-done
	}
	add("UNBLOCKED", nil, blocked("CLIENT", "UNBLOCK", id, "ERROR"), "Reply Unblocked "+notRun)
	add("connection killed under a command", nil, blocked("CLIENT", "KILL", "ID", id), lost)

	// A killed server's port is closed (its proxy's too).
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	d = redis.NewClient(n.Options())
	add("connection refused, the server killed", nil, d.Ping(ctx).Err(), dialFailed)
	_ = d.Close()

	sl := lab.New(t, lab.Config{Replicas: 1, Sentinels: 1})
	add("a sentinel asked for a master it does not monitor", nil,
		sl.Sentinels()[0].Do(ctx, "SENTINEL", "MASTER", "rktest-nosuch").Err(), "Reply UnknownMaster Answer")
	err = sl.Node(1).Do(ctx, "SET", "k", "v").Err()
	add("READONLY", nil, err, "Reply "+notRun)
	add("READONLY, wrapped", nil, fmt.Errorf("set on 10.0.0.2:6379: %w", err), "Reply "+notRun)
	return rows
}

func constructedErrors() []classified {
	reset := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	readDeadline := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	return []classified{
		{name: "nil", err: nil, want: ""},
		{name: "redis.Nil", err: redis.Nil, want: "IsNil Reply Answer"},

		{name: "our dial error, refused", err: fmt.Errorf("get: %w", &DialError{Addr: "a:1", Err: syscall.ECONNREFUSED}), want: dialFailed},
		{name: "dial timeout", err: &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, want: "IsDial Network Timeout " + notRun + " Unreachable"},
		{name: "a dial error joined after another", err: errors.Join(errors.New("first"), &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}), want: dialFailed},
		{name: "ECONNREFUSED outside a dial error", err: syscall.ECONNREFUSED, want: "Network Refused Signal WorkSignal Unreachable"},

		{name: "EOF, wrapped", err: fmt.Errorf("read reply: %w", io.EOF), want: lost},
		{name: "unexpected EOF", err: io.ErrUnexpectedEOF, want: lost},
		{name: "reset", err: reset, want: lost},
		{name: "broken pipe", err: fmt.Errorf("write: %w", syscall.EPIPE), want: lost},
		{name: "connection closed", err: &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}, want: lost},

		{name: "read deadline", err: readDeadline, want: socketTimeout},
		{name: "os.ErrDeadlineExceeded alone", err: os.ErrDeadlineExceeded, want: "Timeout Signal WorkSignal Unreachable"},
		{name: "a deadline joined after a reset", err: errors.Join(reset, os.ErrDeadlineExceeded), want: socketTimeout},
		{name: "a context deadline joined after a reset", err: errors.Join(reset, context.DeadlineExceeded), want: "Network Timeout ContextError Signal Unreachable"},
		{name: "a limit's deadline, wrapped", err: fmt.Errorf("limit 1s: %w", context.DeadlineExceeded), want: "Timeout ContextError Signal Unreachable"},
		{name: "cancelled, wrapped", err: fmt.Errorf("call: %w", context.Canceled), want: "ContextError"},
		{name: "cancelled while queued for a batch", err: &routing.UnsentError{Err: context.Canceled}, want: "ContextError NotExecuted ProvablyNotExecuted Signal"},
		{name: "the deadline passed while queued for a batch", err: &routing.UnsentError{Err: context.DeadlineExceeded},
			want: "ContextError Timeout NotExecuted ProvablyNotExecuted Signal Unreachable"},
		{name: "a context error's text without its identity", err: errors.New(context.DeadlineExceeded.Error()), want: ""},

		{name: "an invalidation without keys, as go-redis refuses it", err: errors.New("redis: unsupported pubsub message payload: <nil>"), want: "PubSubPayload"},
		{name: "a client's try-again error (RetryAdvice), wrapped", err: fmt.Errorf("get: %w", retryLater{}), want: "Unreachable"},
		{name: "pool timeout", err: redis.ErrPoolTimeout, want: notRun + " Unreachable"},
		{name: "closed client", err: redis.ErrClosed, want: notRun},
		{name: "READONLY", err: redisErr("READONLY You can't write against a read only replica."), want: "Reply " + notRun},
		{name: "MASTERDOWN", err: redisErr("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), want: "Reply MasterDown " + notRun + " Unreachable"},
		{name: "LOADING", err: redisErr("LOADING Redis is loading the dataset in memory"), want: "Reply Loading " + notRun + " Unreachable"},
		{name: "UNBLOCKED, wrapped", err: fmt.Errorf("blpop: %w", redisErr("UNBLOCKED client unblocked via CLIENT UNBLOCK")), want: "Reply Unblocked " + notRun},
		{name: "WRONGTYPE", err: redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"), want: "Reply Answer"},

		{name: "no such master, wrapped", err: fmt.Errorf("sentinel 10.0.0.1:26379: %w", redisErr("ERR No such master with that name")), want: "Reply UnknownMaster Answer"},
		{name: "no such master without ERR", err: redisErr("No such master with that name"), want: "Reply UnknownMaster Answer"},
		{name: "no such master in text that is not a reply", err: errors.New("ERR No such master with that name"), want: ""},
		{name: "no such master deep in a reply", err: redisErr("ERR something else: No such master"), want: "Reply Answer"},
		{name: "unknown command, Redis before 6", err: redisErr("ERR unknown command 'HELLO'"), want: "Reply UnknownCommand Answer"},
		{name: "unknown command in text that is not a reply", err: fmt.Errorf("unknown command %q", "HELLO"), want: ""},
		{name: "NOSCRIPT after ERR (KVRocks)", err: redisErr("ERR NOSCRIPT No matching script"), want: "Reply NoScript Answer"},
		{name: "no password configured", err: redisErr("ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"), want: "Reply NoPasswordConfigured Answer"},
		{name: "WAITAOF without appendonly", err: redisErr("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."), want: "Reply AOFDisabled Answer"},
		{name: "wrong password", err: redisErr("WRONGPASS invalid username-password pair or user is disabled."), want: "Reply Answer"},

		{name: "MOVED", err: redisErr("MOVED 3999 127.0.0.1:6381"), want: "Reply Redirect " + notRun},
		{name: "ASK, wrapped", err: fmt.Errorf("get: %w", redisErr("ASK 16383 [::1]:7000")), want: "Reply Redirect " + notRun},
		{name: "MOVED out of range", err: redisErr("MOVED 16384 127.0.0.1:6381"), want: "Reply Answer"},
		{name: "MOVED without an address", err: redisErr("MOVED 12"), want: "Reply Answer"},
		{name: "MOVED in text that is not a reply", err: errors.New("MOVED 1 a:1"), want: ""},
		{name: "TRYAGAIN", err: redisErr("TRYAGAIN Multiple keys request during rehashing of slot"), want: "Reply TryAgain " + notRun},
		{name: "CLUSTERDOWN", err: redisErr("CLUSTERDOWN The cluster is down"), want: "Reply ClusterDown " + notRun + " Unreachable"},
		{name: "CROSSSLOT", err: redisErr("CROSSSLOT Keys in request don't hash to the same slot"), want: "Reply CrossSlot Answer"},
	}
}

// retryLater is a client's "try again" error (guard.Transient's method).
type retryLater struct{}

func (retryLater) Error() string                      { return "no master known" }
func (retryLater) RetryAdvice() (time.Duration, bool) { return time.Second, false }
