package errplace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/redis/go-redis/v9"
)

type testErr struct{ may bool }

func (e *testErr) Error() string { return "typed" }

type redisErr string

func (e redisErr) Error() string { return string(e) }
func (e redisErr) RedisError()   {}

func typedTest(err error) (string, bool, bool) {
	var te *testErr
	if errors.As(err, &te) {
		return "testErr", te.may, true
	}
	return "", true, false
}

func TestPlace(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want string
	}{
		{nil, "ok"},
		{redis.Nil, "answer"},
		{redisErr("WRONGTYPE Operation against a key holding the wrong kind of value"), "answer"},
		{redisErr("ERR Error running script"), "answer"},
		{fmt.Errorf("wrapped: %w", &testErr{may: true}), "testErr(may have run)"},
		{&testErr{}, "testErr(did not run)"},
		{io.EOF, "unplaced network"},
		{context.DeadlineExceeded, "unplaced context"},
		{redisErr("MOVED 1 127.0.0.1:7000"), "unplaced redirect"},
		{redisErr("CLUSTERDOWN The cluster is down"), "unplaced CLUSTERDOWN"},
		{redisErr("EXECABORT Transaction discarded because of previous errors."), "unplaced EXECABORT"},
		{redisErr("READONLY You can't write against a read only replica."), "unplaced READONLY"},
		{errors.New("something"), "unplaced other"},
	} {
		if got := Place(tt.err, typedTest).String(); got != tt.want {
			t.Errorf("Place(%v) = %s, want %s", tt.err, got, tt.want)
		}
	}
}

func TestTally(t *testing.T) {
	tl := NewTally(typedTest)
	ctx := context.Background()
	ok, timeout := redis.NewCmd(ctx, "get", "k"), redis.NewCmd(ctx, "set", "k", "v")
	timeout.SetErr(context.DeadlineExceeded)
	tl.AddCmds("pipeline", []redis.Cmder{ok, timeout}, &testErr{may: true})
	if tl.Unplaced() != 1 {
		t.Fatalf("unplaced %d, want 1: %s", tl.Unplaced(), tl.Line())
	}
	if got, want := tl.Line(), "testErr(may have run) 1, unplaced context 1"; got != want {
		t.Fatalf("Line = %q, want %q", got, want)
	}
	ft := &testing.T{}
	tl.Check(ft)
	if !ft.Failed() {
		t.Fatal("Check did not fail on an unplaced error")
	}
}
