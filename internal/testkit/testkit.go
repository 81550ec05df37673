package testkit

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Context returns a context that ends after d or when the test ends.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// WaitFor polls cond every 5 ms until it holds, and fails the test if it
// does not within d; what names the condition in the failure. It returns
// how long the wait took.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) time.Duration {
	t.Helper()
	began := time.Now()
	for !cond() {
		if time.Since(began) > d {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(began)
}

// AllAnswer runs do from callers goroutines at once, each call bounded by
// within, and fails t (naming what) for every call that returns an error
// other than redis.Nil: for checking that calls are not held behind
// others (blocked commands, a stalled batch).
func AllAnswer(ctx context.Context, t testing.TB, callers int, within time.Duration, what string, do func(ctx context.Context) error) {
	t.Helper()
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			callCtx, cancel := context.WithTimeout(ctx, within)
			defer cancel()
			if err := do(callCtx); err != nil && !errors.Is(err, redis.Nil) {
				t.Errorf("%s: %v", what, err)
			}
		}()
	}
	wg.Wait()
}
