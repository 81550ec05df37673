package testkit

import (
	"context"
	"testing"
	"time"
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
