package guard_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestCallerDeadlineIsNotARedisFailure gives every component a caller
// deadline (30 ms) far shorter than CallLimit, against a node that never
// answers. The socket deadline is the caller's, and it can fire a moment
// before the context's own timer: the call must still come back as the
// caller's ctx.Err(), never as a Redis failure, and nothing may be
// counted, logged or fallen back on as one. Each component runs 20 times
// to catch that moment.
func TestCallerDeadlineIsNotARedisFailure(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	n := lab.New(t, lab.Config{Proxy: true}).Node(0)
	logs := &testkit.Buffer{}
	s := relaxed(n) // CallLimit 3 s
	s.Logger = slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	g := open(t, s)
	if err := g.Call(ctx, "ping", ping); err != nil { // a pooled connection
		t.Fatal(err)
	}
	n.BlackHole()

	limiter, err := guard.NewLimiter(g, guard.LimiterConfig{Name: "login", Limit: 5, Window: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	gate := newGate(t, g, 30*time.Second)
	var loads atomic.Int64
	cache, err := guard.NewCache(g, guard.CacheConfig[string]{Name: "price", Load: func(ctx context.Context, id string) (string, error) {
		loads.Add(1)
		return "42", nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	checker := newChecker(t, g, true)

	const rounds = 20
	var cacheCalls uint64
	for _, tc := range []struct {
		name  string
		call  func(ctx context.Context, id string) error
		clean func() string // "" when nothing was counted as a Redis failure
	}{
		{"Limiter.Allow", func(ctx context.Context, id string) error { _, err := limiter.Allow(ctx, id); return err },
			func() string {
				if st := limiter.Stats(); st != (guard.LimiterStats{}) {
					return fmt.Sprintf("stats %+v", st)
				}
				return ""
			}},
		{"Gate.Admit", gate.Admit, func() string {
			if st := gate.Stats(); st != (guard.GateStats{}) {
				return fmt.Sprintf("stats %+v", st)
			}
			return ""
		}},
		{"Cache.Lookup", func(ctx context.Context, id string) error { cacheCalls++; _, err := cache.Lookup(ctx, id); return err },
			func() string {
				// Counted as what it is, a read the caller cancelled.
				if st := cache.Stats(); st != (guard.CacheStats{ReadsCanceled: cacheCalls}) || loads.Load() != 0 {
					return fmt.Sprintf("stats %+v", st) + ", loads " + strconv.FormatInt(loads.Load(), 10)
				}
				return ""
			}},
		{"Checker.Check", func(ctx context.Context, id string) error {
			r, err := checker.Check(ctx)
			if err == nil {
				return errors.New("report " + r.State.String() + " with no error")
			}
			if r.State != guard.StateUnknown || r.Err != nil {
				return errors.New("the report blames Redis: " + r.State.String())
			}
			return err
		}, func() string { return "" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for i := range rounds {
				dctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
				err := tc.call(dctx, "id-"+strconv.Itoa(i))
				cerr := dctx.Err()
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, guard.ErrUnavailable) || !errors.Is(cerr, context.DeadlineExceeded) {
					t.Fatalf("round %d: %v (ctx: %v), want the caller's context.DeadlineExceeded", i, err, cerr)
				}
				var ue *guard.UnavailableError
				var re *guard.RedisError
				if errors.As(err, &ue) || errors.As(err, &re) {
					t.Fatalf("round %d: the caller's deadline came back as a Redis failure: %v", i, err)
				}
				if what := tc.clean(); what != "" {
					t.Fatalf("round %d: the caller's deadline was counted as a Redis failure: %s", i, what)
				}
			}
			if l := logs.String(); l != "" {
				t.Fatalf("the caller's deadline was logged as a Redis failure:\n%s", l)
			}
		})
	}
}

// timerlessCtx has a deadline but no timer: Done never closes and Err
// stays nil (a detached context that keeps its parent's deadline, or one
// whose timer runs on a clock the wall clock stepped past).
type timerlessCtx struct {
	context.Context
	deadline time.Time
}

func (c timerlessCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (timerlessCtx) Done() <-chan struct{}         { return nil }
func (timerlessCtx) Err() error                    { return nil }

// TestCallerDeadlineWithoutATimer: a failure after the caller's deadline
// passed by the clock is the caller's even when its context never
// reports it, and Call does not wait for that report beyond a moment.
func TestCallerDeadlineWithoutATimer(t *testing.T) {
	g := open(t, guard.ClientConfig{Addr: "127.0.0.1:1", KeyPrefix: "shop"}) // never dialled
	ctx := timerlessCtx{Context: context.Background(), deadline: time.Now().Add(-time.Millisecond)}
	start := time.Now()
	err := g.Call(ctx, "get", func(context.Context, redis.Cmdable) error { return errors.New("read tcp: i/o timeout") })
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Call waited %v for a context that never ends", took)
	}
	var re *guard.RedisError
	if err != context.DeadlineExceeded || errors.As(err, &re) {
		t.Fatalf("Call = %v, want the bare context.DeadlineExceeded (the caller's deadline)", err)
	}
}

// TestLoaderFailureAtTheCallersDeadline: a loader that fails once the
// caller's deadline has passed by the clock, before the context's timer
// said so, ends the lookup as the caller's (LoadsCanceled), not as a
// loader failure.
func TestLoaderFailureAtTheCallersDeadline(t *testing.T) {
	n := lab.New(t, lab.Standalone()).Node(0)
	g := open(t, relaxed(n))
	deadline := time.Now().Add(300 * time.Millisecond)
	cache, err := guard.NewCache(g, guard.CacheConfig[string]{Name: "price", Load: func(ctx context.Context, id string) (string, error) {
		time.Sleep(time.Until(deadline) + 5*time.Millisecond)
		return "", errors.New("database: statement timeout")
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := timerlessCtx{Context: context.Background(), deadline: deadline}
	_, err = cache.Lookup(ctx, "sku-1")
	if err != context.DeadlineExceeded {
		t.Fatalf("Lookup = %v, want the caller's context.DeadlineExceeded", err)
	}
	if st := cache.Stats(); st.LoadsCanceled != 1 || st.LoadFailures != 0 || st.Misses != 1 {
		t.Fatalf("stats %+v, want one miss whose load the caller's deadline ended", st)
	}
}
