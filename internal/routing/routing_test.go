package routing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
)

// recorder is a hook that records what reaches the target client.
type recorder struct {
	mu        sync.Mutex
	cmds      []string // the names of single commands
	pipelines int
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook { return next }
func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.mu.Lock()
		r.cmds = append(r.cmds, cmd.Name())
		r.mu.Unlock()
		return next(ctx, cmd)
	}
}
func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.mu.Lock()
		r.pipelines++
		r.mu.Unlock()
		return next(ctx, cmds)
	}
}

// TestFrontRoutesEverything checks that commands, pipelines and
// transactions made on the front run on the target, with their results in
// the caller's commands, and that the front never dials.
func TestFrontRoutesEverything(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	target := l.Node(0).NewClient()
	defer target.Close()
	rec := &recorder{}
	target.AddHook(rec)

	var sawTx atomic.Bool
	f := NewFront(&redis.Options{Addr: "front/test", ReadTimeout: 3 * time.Second},
		func(ctx context.Context, cmd redis.Cmder) error { return Run(ctx, target, cmd, nil) },
		func(ctx context.Context, cmds []redis.Cmder) error {
			if IsTx(cmds) {
				sawTx.Store(true)
			}
			return Run(ctx, target, nil, cmds)
		})
	defer f.Close()
	ctx := context.Background()

	if err := f.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := f.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET = %q, %v", v, err)
	}
	if err := f.Get(ctx, "missing").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET missing = %v, want redis.Nil", err)
	}
	var incr *redis.IntCmd
	if _, err := f.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "n", 1, 0)
		incr = p.Incr(ctx, "n")
		return nil
	}); err != nil || incr.Val() != 2 {
		t.Fatalf("pipeline: INCR = %d, %v", incr.Val(), err)
	}
	if sawTx.Load() {
		t.Fatal("a pipeline was taken for a transaction")
	}
	var txIncr *redis.IntCmd
	if _, err := f.TxPipelined(ctx, func(p redis.Pipeliner) error {
		txIncr = p.Incr(ctx, "n")
		return nil
	}); err != nil || txIncr.Val() != 3 {
		t.Fatalf("transaction: INCR = %d, %v", txIncr.Val(), err)
	}
	if !sawTx.Load() {
		t.Fatal("the transaction did not reach the pipeline hook as MULTI ... EXEC")
	}
	if got := f.Do(ctx, "ECHO", "hi").Val(); got != "hi" {
		t.Fatalf("Do ECHO = %v", got)
	}
	rec.mu.Lock()
	var user []string
	for _, name := range rec.cmds {
		if name != "hello" && name != "client" { // go-redis's own connection set-up
			user = append(user, name)
		}
	}
	got := fmt.Sprint(user, rec.pipelines)
	rec.mu.Unlock()
	if want := "[set get get echo] 2"; got != want {
		t.Fatalf("target saw commands and pipelines %s, want %s", got, want)
	}
	if st := f.PoolStats(); st.TotalConns != 0 || st.Misses != 0 {
		t.Fatalf("the front opened connections: %+v", st)
	}
	if o := f.Options(); o.MaxRetries != 0 || o.Addr != "front/test" || o.ReadTimeout != 3*time.Second {
		t.Fatalf("front options: retries %d addr %s read timeout %v", o.MaxRetries, o.Addr, o.ReadTimeout)
	}
	// A subscription bypasses the hooks (it holds its own connection): on
	// the front it cannot dial. Routed clients offer their own Subscribe.
	ps := f.Subscribe(ctx, "ch")
	defer ps.Close()
	if _, err := ps.Receive(ctx); !errors.Is(err, errNeverDials) {
		t.Fatalf("Subscribe on the front = %v, want %v", err, errNeverDials)
	}
}

func TestSetErrs(t *testing.T) {
	ctx := context.Background()
	boom := errors.New("boom")
	cmd := redis.NewCmd(ctx, "get", "k")
	cmds := []redis.Cmder{redis.NewCmd(ctx, "get", "a"), redis.NewCmd(ctx, "set", "b", 1)}
	SetErrs(cmd, cmds, boom)
	if cmd.Err() != boom || cmds[0].Err() != boom || cmds[1].Err() != boom {
		t.Fatal("SetErrs did not set every error")
	}
	SetErrs(cmd, cmds, nil)
	if cmd.Err() != nil || cmds[0].Err() != nil || cmds[1].Err() != nil {
		t.Fatal("SetErrs(nil) did not clear every error")
	}
}

func TestIsTx(t *testing.T) {
	ctx := context.Background()
	c := func(name string) redis.Cmder { return redis.NewCmd(ctx, name) }
	tests := []struct {
		cmds []redis.Cmder
		want bool
	}{
		{[]redis.Cmder{c("multi"), c("set"), c("exec")}, true},
		{[]redis.Cmder{c("multi"), c("exec")}, true},
		{[]redis.Cmder{c("multi"), c("set")}, false},
		{[]redis.Cmder{c("set"), c("exec")}, false},
		{[]redis.Cmder{c("multi")}, false},
		{nil, false},
	}
	for i, tt := range tests {
		if got := IsTx(tt.cmds); got != tt.want {
			t.Errorf("case %d: IsTx = %v, want %v", i, got, tt.want)
		}
	}
}

func TestConnsCloseOthers(t *testing.T) {
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
			defer c.Close()
		}
	}()
	var tr Conns[string]
	dial := func(target string) net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return tr.Track(c, target)
	}
	a1, a2, b := dial("a"), dial("a"), dial("b")
	tr.CloseOthers("b")
	if tr.Len() != 1 {
		t.Fatalf("%d tracked after closing the others, want 1", tr.Len())
	}
	for _, c := range []net.Conn{a1, a2} {
		if _, err := c.Write([]byte("x")); !errors.Is(err, net.ErrClosed) || !errors.Is(err, ErrSwitched) {
			t.Fatalf("a connection to a was not closed as switched: %v", err)
		}
		if _, err := c.Read(make([]byte, 1)); !errors.Is(err, ErrSwitched) {
			t.Fatalf("a read on a switched connection: %v", err)
		}
	}
	if _, err := b.Write([]byte("x")); err != nil {
		t.Fatalf("the connection to b was closed: %v", err)
	}
	_ = b.Close()
	if _, err := b.Write([]byte("x")); !errors.Is(err, net.ErrClosed) || errors.Is(err, ErrSwitched) {
		t.Fatalf("a connection closed by its owner: %v; want net.ErrClosed, not ErrSwitched", err)
	}
	_ = b.Close() // twice is fine
	if tr.Len() != 0 {
		t.Fatalf("%d tracked after closing all", tr.Len())
	}
}

func TestSumPoolStats(t *testing.T) {
	got := SumPoolStats(&redis.PoolStats{Hits: 1, Misses: 2, Timeouts: 3, TotalConns: 4, IdleConns: 5, StaleConns: 6},
		&redis.PoolStats{Hits: 10, Misses: 20, Timeouts: 30, TotalConns: 40, IdleConns: 50, StaleConns: 60})
	want := redis.PoolStats{Hits: 11, Misses: 22, Timeouts: 33, TotalConns: 44, IdleConns: 55, StaleConns: 66}
	if *got != want {
		t.Fatalf("got %+v, want %+v", *got, want)
	}
}

// TestConnsWrap: a tracked connection's errors go through Wrap with its
// target, a switched one's too (still matching ErrSwitched).
func TestConnsWrap(t *testing.T) {
	var conns Conns[string]
	conns.Wrap = func(target string, err error) error { return fmt.Errorf("wrapped %s: %w", target, err) }
	a, b := net.Pipe()
	defer b.Close()
	tc := conns.Track(a, "node1")
	_ = b.Close()
	if _, err := tc.Read(make([]byte, 1)); err == nil || !strings.HasPrefix(err.Error(), "wrapped node1: ") || !errors.Is(err, io.EOF) {
		t.Fatalf("read from a closed peer: %v", err)
	}
	c, d := net.Pipe()
	defer d.Close()
	tc = conns.Track(c, "node1")
	conns.CloseOthers("node2")
	if _, err := tc.Write([]byte("x")); !errors.Is(err, ErrSwitched) || !strings.HasPrefix(err.Error(), "wrapped node1: ") {
		t.Fatalf("write on a switched connection: %v", err)
	}
	// go-redis sets a deadline before reading: on a closed connection
	// that is where the error comes from.
	if err := tc.SetReadDeadline(time.Now()); !errors.Is(err, ErrSwitched) || !strings.HasPrefix(err.Error(), "wrapped node1: ") {
		t.Fatalf("a deadline on a switched connection: %v", err)
	}
}
