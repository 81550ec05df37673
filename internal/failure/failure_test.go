package failure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
)

type redisErr string

func (e redisErr) Error() string { return string(e) }
func (e redisErr) RedisError()   {}

func TestClassification(t *testing.T) {
	deadline := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	tests := []struct {
		name                                string
		err                                 error
		dial, notExecuted, network, timeout bool
		signal                              bool
	}{
		{"our dial error", &DialError{Addr: "a:1", Err: syscall.ECONNREFUSED}, true, true, true, false, true},
		{"go-redis dial error", &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}, true, true, true, false, true},
		{"dial timeout", &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}, true, true, true, true, true},
		{"closed client", redis.ErrClosed, false, true, false, false, true},
		{"pool timeout", redis.ErrPoolTimeout, false, true, false, false, true},
		{"pool exhausted", redis.ErrPoolExhausted, false, true, false, false, true},
		{"READONLY", redisErr("READONLY You can't write against a read only replica."), false, true, false, false, true},
		{"MASTERDOWN", redisErr("MASTERDOWN Link with MASTER is down"), false, true, false, false, true},
		{"LOADING", redisErr("LOADING Redis is loading the dataset in memory"), false, true, false, false, true},
		{"EXECABORT", redisErr("EXECABORT Transaction discarded because of previous errors."), false, true, false, false, true},
		{"EOF", io.EOF, false, false, true, false, true},
		{"reset", &net.OpError{Op: "read", Err: syscall.ECONNRESET}, false, false, true, false, true},
		{"broken pipe", fmt.Errorf("write: %w", syscall.EPIPE), false, false, true, false, true},
		{"read deadline", deadline, false, false, true, true, true},
		{"WRONGTYPE", redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"), false, false, false, false, false},
		{"nil reply", redis.Nil, false, false, false, false, false},
		{"cancelled", context.Canceled, false, false, false, false, false},
		{"nil", nil, false, false, false, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := IsDial(tt.err); got != tt.dial {
				t.Errorf("IsDial = %v, want %v", got, tt.dial)
			}
			if got := NotExecuted(tt.err); got != tt.notExecuted {
				t.Errorf("NotExecuted = %v, want %v", got, tt.notExecuted)
			}
			if got := Network(tt.err); got != tt.network {
				t.Errorf("Network = %v, want %v", got, tt.network)
			}
			if got := Timeout(tt.err); got != tt.timeout {
				t.Errorf("Timeout = %v, want %v", got, tt.timeout)
			}
			if got := Signal(tt.err); got != tt.signal {
				t.Errorf("Signal = %v, want %v", got, tt.signal)
			}
		})
	}
}

func TestDialErrorWraps(t *testing.T) {
	err := fmt.Errorf("get: %w", &DialError{Addr: "10.0.0.1:6379", Err: syscall.ECONNREFUSED})
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatal("DialError does not unwrap")
	}
	if want := "get: connect to 10.0.0.1:6379: connection refused"; err.Error() != want {
		t.Fatalf("got %q, want %q", err.Error(), want)
	}
}

func mk(name string, err error) redis.Cmder {
	cmd := redis.NewCmd(context.Background(), name, "k")
	cmd.SetErr(err)
	return cmd
}

func TestWorkSignal(t *testing.T) {
	wrongtype := redisErr("WRONGTYPE Operation against a key holding the wrong kind of value")
	tests := []struct {
		name string
		cmd  redis.Cmder
		cmds []redis.Cmder
		err  error
		want bool
	}{
		{"command, EOF", mk("get", io.EOF), nil, io.EOF, true},
		{"command, WRONGTYPE", mk("get", wrongtype), nil, wrongtype, false},
		{"command, caller's deadline", mk("get", context.DeadlineExceeded), nil, context.DeadlineExceeded, false},
		{"pipeline, a later command lost", nil, []redis.Cmder{mk("get", wrongtype), mk("get", io.EOF)}, wrongtype, true},
		{"pipeline, replies only", nil, []redis.Cmder{mk("get", wrongtype), mk("get", nil)}, wrongtype, false},
	}
	for _, tt := range tests {
		if got := WorkSignal(context.Background(), tt.cmd, tt.cmds, tt.err); got != tt.want {
			t.Errorf("%s: WorkSignal = %v, want %v", tt.name, got, tt.want)
		}
	}
	// A socket timeout is a signal, unless the caller's context is what
	// ended (go-redis reports a context deadline as an i/o timeout).
	timeout := &net.OpError{Op: "read", Err: timeoutErr{}}
	expired, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Millisecond))
	defer cancel()
	cancelled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want bool
	}{
		{"caller still waiting", context.Background(), true},
		{"caller's deadline passed", expired, false},
		{"caller cancelled", cancelled, false},
	} {
		if got := WorkSignal(tc.ctx, mk("get", timeout), nil, timeout); got != tc.want {
			t.Errorf("%s: WorkSignal(i/o timeout) = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestProvablyNotExecuted(t *testing.T) {
	readonly := redisErr("READONLY You can't write against a read only replica.")
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	tests := []struct {
		name string
		cmd  redis.Cmder
		cmds []redis.Cmder
		want bool
	}{
		{"command never sent", mk("set", refused), nil, true},
		{"command lost its reply", mk("set", io.EOF), nil, false},
		{"command timed out", mk("set", &net.OpError{Op: "read", Err: os.ErrDeadlineExceeded}), nil, false},
		{"all writes refused", nil, []redis.Cmder{mk("set", readonly), mk("incr", readonly)}, true},
		{"reads ran, writes refused", nil, []redis.Cmder{mk("get", nil), mk("set", readonly)}, true},
		{"reads lost, write never sent", nil, []redis.Cmder{mk("get", io.EOF), mk("set", refused)}, true},
		{"a write ran", nil, []redis.Cmder{mk("set", nil), mk("incr", readonly)}, false},
		{"a write lost its reply", nil, []redis.Cmder{mk("set", io.EOF)}, false},
		{"transaction aborted", nil, []redis.Cmder{mk("multi", nil), mk("set", readonly), mk("exec", redisErr("EXECABORT Transaction discarded"))}, true},
		{"transaction never sent", nil, []redis.Cmder{mk("multi", refused), mk("set", refused), mk("exec", refused)}, true},
		{"transaction lost after EXEC", nil, []redis.Cmder{mk("multi", nil), mk("set", nil), mk("exec", io.EOF)}, false},
	}
	for _, tt := range tests {
		err := func() error {
			if tt.cmd != nil {
				return tt.cmd.Err()
			}
			return tt.cmds[len(tt.cmds)-1].Err()
		}()
		if got := ProvablyNotExecuted(classify.New(), tt.cmd, tt.cmds, err); got != tt.want {
			t.Errorf("%s: ProvablyNotExecuted = %v, want %v", tt.name, got, tt.want)
		}
	}
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

// TestMissDoesNotAllocate: a missing key's reply (redis.Nil) is the most
// common error; classifying it must not allocate, in any of the rules.
func TestMissDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	cmd := mk("get", redis.Nil)
	cmds := []redis.Cmder{mk("get", redis.Nil), mk("get", nil)}
	cl := classify.New()
	for name, f := range map[string]func(){
		"IsDial":                   func() { IsDial(redis.Nil) },
		"NotExecuted":              func() { NotExecuted(redis.Nil) },
		"Network":                  func() { Network(redis.Nil) },
		"Timeout":                  func() { Timeout(redis.Nil) },
		"Signal":                   func() { Signal(redis.Nil) },
		"WorkSignal":               func() { WorkSignal(ctx, cmd, nil, redis.Nil) },
		"WorkSignal of a pipeline": func() { WorkSignal(ctx, nil, cmds, redis.Nil) },
		"ProvablyNotExecuted":      func() { ProvablyNotExecuted(cl, cmd, nil, redis.Nil) },
		"Reply":                    func() { Reply(redis.Nil) },
		"Unblocked":                func() { Unblocked(redis.Nil) },
		"ConnectionLost":           func() { ConnectionLost(redis.Nil) },
		"Refused":                  func() { Refused(redis.Nil) },
		"ContextError":             func() { ContextError(redis.Nil) },
		"BareContextError":         func() { BareContextError(redis.Nil) },
		"UnknownMaster":            func() { UnknownMaster(redis.Nil) },
		"UnknownCommand":           func() { UnknownCommand(redis.Nil) },
		"NoScript":                 func() { NoScript(redis.Nil) },
		"NoPasswordConfigured":     func() { NoPasswordConfigured(redis.Nil) },
		"AOFDisabled":              func() { AOFDisabled(redis.Nil) },
	} {
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s(redis.Nil): %v allocations", name, n)
		}
	}
	if !IsNil(redis.Nil) || IsNil(nil) || IsNil(io.EOF) || IsNil(redisErr("redis: nil")) {
		t.Error("IsNil must be true for redis.Nil only")
	}
}

func TestReply(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want bool
	}{
		{redis.Nil, true},
		{redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"), true},
		{fmt.Errorf("get: %w", redisErr("READONLY You can't write against a read only replica.")), true},
		{nil, false},
		{io.EOF, false},
		{&DialError{Addr: "a:1", Err: syscall.ECONNREFUSED}, false},
		{context.DeadlineExceeded, false},
		{redis.ErrClosed, false},
	} {
		if got := Reply(tt.err); got != tt.want {
			t.Errorf("Reply(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestAOFProbe: the probe's reply sorted as a master that can confirm AOF
// fsyncs, one that cannot (wrapping the caller's error, saying why), and
// a failure that says nothing of it.
func TestAOFProbe(t *testing.T) {
	unavailable := errors.New("caller: no AOF fsyncs")
	for _, tc := range []struct {
		name    string
		err     error
		settled bool
		says    string // in the verdict; "" for a nil verdict
	}{
		{"confirms", nil, true, ""},
		{"no WAITAOF", redisErr("ERR unknown command 'WAITAOF', with args beginning with: '1' '0' '1'"), true, "7.2"},
		{"appendonly off", redisErr("ERR WAITAOF cannot be used when numlocal is set but appendonly is disabled."), true, "appendonly yes"},
		{"timeout", context.DeadlineExceeded, false, "deadline"},
	} {
		verdict, settled := AOFProbe(tc.err, unavailable)
		switch {
		case settled != tc.settled:
			t.Errorf("%s: settled %v, want %v", tc.name, settled, tc.settled)
		case tc.says == "" && verdict != nil:
			t.Errorf("%s: %v, want nil", tc.name, verdict)
		case tc.says != "" && (verdict == nil || !strings.Contains(verdict.Error(), tc.says)):
			t.Errorf("%s: %v, want it to say %q", tc.name, verdict, tc.says)
		case tc.settled && tc.says != "" && !errors.Is(verdict, unavailable):
			t.Errorf("%s: %v does not wrap the caller's error", tc.name, verdict)
		}
	}
}
