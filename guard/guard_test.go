package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func TestKeyAppliesThePrefix(t *testing.T) {
	g, err := guard.Open(guard.ClientConfig{Addr: "127.0.0.1:1", KeyPrefix: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, tc := range []struct {
		parts []string
		want  string
	}{
		{nil, "shop"},
		{[]string{"price", "sku-1"}, "shop:price:sku-1"},
		{[]string{"login", "a:b"}, "shop:login:a:b"},
	} {
		if got := g.Key(tc.parts...); got != tc.want {
			t.Errorf("Key(%q) = %q, want %q", tc.parts, got, tc.want)
		}
	}
}

func TestNewRefusesUnsafeClients(t *testing.T) {
	for _, tc := range []struct {
		name string
		opt  redis.Options
		want string // in the ConfigError
	}{
		{"ignores deadlines", redis.Options{MaxRetries: -1, DialerRetries: 1}, "ContextTimeoutEnabled"},
		{"retries by default", redis.Options{ContextTimeoutEnabled: true, DialerRetries: 1}, "MaxRetries 3"},
		{"retries", redis.Options{ContextTimeoutEnabled: true, MaxRetries: 1, DialerRetries: 1}, "MaxRetries 1"},
		{"retries dials by default", redis.Options{ContextTimeoutEnabled: true, MaxRetries: -1}, "5 attempts"},
		{"retries dials", redis.Options{ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 3}, "3 attempts"},
	} {
		tc.opt.Addr = "127.0.0.1:1"
		c := redis.NewClient(&tc.opt)
		_, err := guard.New(c, guard.Config{KeyPrefix: "shop"})
		var ce *guard.ConfigError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want a ConfigError naming %s", tc.name, err, tc.want)
		}
		_ = c.Close()
	}
	c2 := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1})
	defer c2.Close()
	g, err := guard.New(c2, guard.Config{KeyPrefix: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	if g.Server() != "127.0.0.1:1" || g.CallLimit() != guard.DefaultCallLimit {
		t.Errorf("server %q, limit %v", g.Server(), g.CallLimit())
	}
	_ = g.Close() // does not close c2: the guard does not own it
	if err := c2.Ping(context.Background()).Err(); errors.Is(err, redis.ErrClosed) {
		t.Fatal("Guard.Close closed a client it did not create")
	}
}

func TestCallOutcomes(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	n := l.Node(0)
	resumeOnCleanup(t, n)
	s := settings(n)
	s.ReadTimeout = 2 * time.Second // longer than the limit: the limit must cut the call
	s.CallLimit = 150 * time.Millisecond
	g := open(t, s)
	get := func(ctx context.Context, c redis.Cmdable) error { return c.Get(ctx, "test:missing").Err() }

	// redis.Nil is an answer, returned as is.
	if err := g.Call(ctx, "get", get); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET of a missing key: %v, want redis.Nil", err)
	}

	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Run("limit hit is a Redis failure", func(t *testing.T) {
		start := time.Now()
		err := g.Call(ctx, "get", get)
		took := time.Since(start)
		var re *guard.RedisError
		if !errors.As(err, &re) || re.Kind != guard.FailureTimeout || !errors.Is(err, guard.ErrUnavailable) {
			t.Fatalf("call to a paused Redis: %v, want a RedisError of kind timeout", err)
		}
		if errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("a hit limit matches context.DeadlineExceeded, which callers read as their own deadline: %v", err)
		}
		if took < s.CallLimit || took > s.CallLimit+50*time.Millisecond {
			t.Errorf("call took %v, want the %v limit (+50ms at most)", took, s.CallLimit)
		}
		if !strings.Contains(err.Error(), n.Addr()) || !strings.Contains(err.Error(), "may still run") {
			t.Errorf("error does not name the server or say what happened: %v", err)
		}
	})
	t.Run("caller cancellation propagates", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		time.AfterFunc(30*time.Millisecond, cancel)
		err := g.Call(cctx, "get", get)
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call: %v, want context.Canceled", err)
		}
		var re *guard.RedisError
		if errors.As(err, &re) || errors.Is(err, guard.ErrUnavailable) {
			t.Fatalf("a caller's cancellation was reported as a Redis failure: %v", err)
		}
	})
	t.Run("caller deadline is the caller's", func(t *testing.T) {
		dctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
		defer cancel()
		err := g.Call(dctx, "get", get)
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, guard.ErrUnavailable) {
			t.Fatalf("call past the caller's deadline: %v, want context.DeadlineExceeded only", err)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		called := false
		err := g.Call(cctx, "get", func(context.Context, redis.Cmdable) error { called = true; return nil })
		if !errors.Is(err, context.Canceled) || called {
			t.Fatalf("call with a cancelled context: err %v, op called %v", err, called)
		}
	})
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
}

func TestCallClassifiesFailures(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Password: "right"})
	n := l.Node(0)

	good := relaxed(n)
	wrong := relaxed(n)
	wrong.Password = "not-the-password-7f3"
	none := relaxed(n)
	none.Password = ""
	deadS := relaxed(n)
	deadS.Addr = deadAddr(t)

	for _, tc := range []struct {
		name string
		s    guard.ClientConfig
		op   func(context.Context, redis.Cmdable) error
		want guard.Failure
	}{
		{"refused", deadS, ping, guard.FailureUnreachable},
		{"wrong password", wrong, ping, guard.FailureAuth},
		{"no password", none, ping, guard.FailureAuth},
		{"error reply", good, func(ctx context.Context, c redis.Cmdable) error {
			if err := c.Set(ctx, "test:str", "x", time.Minute).Err(); err != nil {
				return err
			}
			return c.LPush(ctx, "test:str", "y").Err() // WRONGTYPE
		}, guard.FailureReply},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := open(t, tc.s)
			err := g.Call(ctx, tc.name, tc.op)
			var re *guard.RedisError
			if !errors.As(err, &re) || re.Kind != tc.want {
				t.Fatalf("got %v, want a RedisError of kind %v", err, tc.want)
			}
			if tc.s.Password != "" && strings.Contains(err.Error(), tc.s.Password) {
				t.Errorf("error shows the password: %v", err)
			}
		})
	}
}

func ping(ctx context.Context, c redis.Cmdable) error { return c.Ping(ctx).Err() }
