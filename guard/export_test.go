package guard

import (
	"context"
	"testing"
	"time"
)

// WaitFor polls cond until it holds, and fails the test when ctx ends
// first. It is exported for the package's external tests.
func WaitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatal("condition not reached before the test's deadline")
		case <-time.After(2 * time.Millisecond):
		}
	}
}
