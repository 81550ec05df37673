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

	"github.com/redis/go-redis/v9"
)

// sealed is a test's typed error: what Wrap returns.
type sealed struct {
	cmd string // the command's name, "" for the work as a whole
	may bool
	err error
}

func (e *sealed) Error() string { return fmt.Sprintf("sealed %s may=%v: %v", e.cmd, e.may, e.err) }
func (e *sealed) Unwrap() error { return e.err }

// testSealer types errors as *sealed.
func testSealer(own error) Sealer {
	return Sealer{
		Typed: func(err error) bool { var s *sealed; return errors.As(err, &s) },
		Wrap: func(q redis.Cmder, err error, may bool) error {
			name := ""
			if q != nil {
				name = q.Name()
			}
			return &sealed{cmd: name, may: may, err: err}
		},
		Own: own,
	}
}

// outcome describes an error after Seal: "as is", or "sealed <cmd>
// may|not".
func outcome(before, after error) string {
	var s *sealed
	if errors.As(after, &s) && !errors.As(before, new(*sealed)) {
		ran := "not"
		if s.may {
			ran = "may"
		}
		return strings.Join(strings.Fields("sealed "+s.cmd+" "+ran), " ")
	}
	if after != before {
		return fmt.Sprintf("changed to %v", after)
	}
	return "as is"
}

func tx(queued ...redis.Cmder) []redis.Cmder {
	ctx := context.Background()
	cmds := []redis.Cmder{redis.NewStatusCmd(ctx, "multi")}
	cmds = append(cmds, queued...)
	return append(cmds, redis.NewSliceCmd(ctx, "exec"))
}

func TestSeal(t *testing.T) {
	var (
		wrongtype = redisErr("WRONGTYPE Operation against a key holding the wrong kind of value")
		moved     = redisErr("MOVED 3999 127.0.0.1:6381")
		down      = redisErr("CLUSTERDOWN The cluster is down")
		execAbort = redisErr("EXECABORT Transaction discarded because of previous errors.")
		syntax    = redisErr("ERR wrong number of arguments for 'set' command")
		dial      = &DialError{Addr: "a:1", Err: syscall.ECONNREFUSED}
		timeout   = &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
		typed     = &sealed{cmd: "earlier", may: true, err: io.EOF}
		mine      = errors.New("the caller's own reason")
	)
	type row struct {
		name string
		cmd  redis.Cmder   // a single command
		cmds []redis.Cmder // or a pipeline or transaction
		err  error         // the work's error
		own  error
		// want is each command's outcome (cmd's, or cmds' in order), then
		// the returned error's.
		want []string
	}
	rows := []row{
		{name: "success", cmd: mk("get", nil), want: []string{"as is", "as is"}},
		{name: "a missing key", cmd: mk("get", redis.Nil), err: redis.Nil, want: []string{"as is", "as is"}},
		{name: "WRONGTYPE", cmd: mk("get", wrongtype), err: wrongtype, want: []string{"as is", "as is"}},
		{name: "EOF", cmd: mk("set", io.EOF), err: io.EOF, want: []string{"sealed set may", "sealed may"}},
		{name: "a socket timeout", cmd: mk("set", timeout), err: timeout, want: []string{"sealed set may", "sealed may"}},
		{name: "the caller's deadline", cmd: mk("set", context.DeadlineExceeded), err: context.DeadlineExceeded,
			want: []string{"sealed set may", "sealed may"}},
		{name: "a dial failure", cmd: mk("set", dial), err: dial, want: []string{"sealed set not", "sealed not"}},
		{name: "MOVED", cmd: mk("set", moved), err: moved, want: []string{"sealed set not", "sealed not"}},
		{name: "already typed", cmd: mk("set", typed), err: typed, want: []string{"as is", "as is"}},

		{name: "pipeline: each command by its own error, the Exec error is the first's",
			cmds: []redis.Cmder{mk("get", nil), mk("set", dial), mk("set", timeout), mk("get", redis.Nil), mk("set", down)},
			err:  dial,
			want: []string{"as is", "sealed set not", "sealed set may", "as is", "sealed set not", "sealed set not"}},
		{name: "pipeline: the Exec error of no command",
			cmds: []redis.Cmder{mk("set", dial), mk("set", moved)}, err: context.Canceled,
			want: []string{"sealed set not", "sealed set not", "sealed may"}},
		{name: "pipeline: nothing ran",
			cmds: []redis.Cmder{mk("set", dial), mk("set", moved)}, err: errNotSent,
			want: []string{"sealed set not", "sealed set not", "sealed not"}},

		{name: "transaction refused by MOVED: nothing ran",
			cmds: tx(mk("set", moved), mk("set", execAbort)), err: execAbort,
			want: []string{"as is", "sealed set not", "sealed set not", "as is", "sealed not"}},
		{name: "transaction without an answer to its EXEC: all may have run",
			cmds: tx(mk("set", timeout), mk("incr", timeout)), err: timeout,
			want: []string{"as is", "sealed set may", "sealed incr may", "as is", "sealed may"}},
		{name: "transaction aborted by a command's own syntax error: its answer",
			cmds: tx(mk("set", syntax), mk("incr", execAbort)), err: execAbort,
			want: []string{"as is", "as is", "as is", "as is", "as is"}},
		{name: "transaction answered, a command's WRONGTYPE inside",
			cmds: tx(mk("set", nil), mk("incr", wrongtype)), err: wrongtype,
			want: []string{"as is", "as is", "as is", "as is", "as is"}},

		{name: "Watch: the function's own error", err: mine, own: mine, want: []string{"as is"}},
		{name: "Watch: a timeout the function passed on", err: timeout, own: timeout, want: []string{"sealed may"}},
		{name: "Watch: the caller's cancellation the function passed on", err: fmt.Errorf("get: %w", context.Canceled),
			own: context.Canceled, want: []string{"sealed may"}},
		{name: "Watch: refused before fn ran", err: moved, want: []string{"sealed not"}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var before []error
			all := r.cmds
			if r.cmd != nil {
				all = []redis.Cmder{r.cmd}
			}
			for _, q := range all {
				before = append(before, q.Err())
			}
			got := Seal(r.cmd, r.cmds, r.err, testSealer(r.own))
			var outcomes []string
			for i, q := range all {
				outcomes = append(outcomes, outcome(before[i], q.Err()))
			}
			outcomes = append(outcomes, outcome(r.err, got))
			if strings.Join(outcomes, "; ") != strings.Join(r.want, "; ") {
				t.Errorf("got  %s\nwant %s", strings.Join(outcomes, "; "), strings.Join(r.want, "; "))
			}
			if r.err != nil && !errors.Is(got, r.err) {
				t.Errorf("the returned error %v does not wrap %v", got, r.err)
			}
		})
	}
}

// errNotSent is a refusal that proves nothing was sent (a closed
// client).
var errNotSent = fmt.Errorf("send: %w", redis.ErrClosed)

func TestAnswered(t *testing.T) {
	wrongtype := redisErr("WRONGTYPE Operation against a key holding the wrong kind of value")
	for _, tt := range []struct {
		name string
		cmd  redis.Cmder
		cmds []redis.Cmder
		err  error
		want bool
	}{
		{"success", mk("get", nil), nil, nil, true},
		{"a miss", mk("get", redis.Nil), nil, redis.Nil, true},
		{"EOF", mk("get", io.EOF), nil, io.EOF, false},
		{"a pipeline of answers", nil, []redis.Cmder{mk("get", redis.Nil), mk("incr", wrongtype), mk("get", nil)}, redis.Nil, true},
		{"a pipeline with one timeout", nil, []redis.Cmder{mk("get", nil), mk("set", context.DeadlineExceeded)}, nil, false},
		{"a refusal", mk("set", redisErr("READONLY You can't write against a read only replica.")), nil, nil, false},
	} {
		if got := Answered(tt.cmd, tt.cmds, tt.err); got != tt.want {
			t.Errorf("%s: Answered = %v, want %v", tt.name, got, tt.want)
		}
	}
	miss := []redis.Cmder{mk("get", redis.Nil)}
	if n := testing.AllocsPerRun(100, func() { Answered(nil, miss, redis.Nil) }); n != 0 {
		t.Errorf("Answered of a miss allocates %v times", n)
	}
}
