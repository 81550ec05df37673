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

// Waiting is the number of lookups of id waiting for another lookup's
// load. It is exported for the package's external tests.
func Waiting[V any](c *Cache[V], id string) int { return c.flight.waiting(c.Key(id)) }
