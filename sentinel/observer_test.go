package sentinel

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// An Observer that blocks from the start of a failover until the end of
// the test does not delay the switch: the client routes to the new master
// by the time every sentinel agrees (the bound TestLiveFailover holds the
// client to) and writes there, while the Observer is still blocked in the
// first event after it was armed, just before the failover. Unblocked, it receives the failover's events in
// order, none dropped.
func TestBlockedObserverDoesNotDelayFailover(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3})
	var blocking atomic.Bool
	entered := make(chan Event, 1)
	release := make(chan struct{})
	var mu sync.Mutex
	var seen []Event
	c, _ := newTestClient(t, l, func(o *Config) {
		o.Observer = func(ev Event) {
			if blocking.Load() {
				select {
				case entered <- ev:
				default:
				}
				<-release
			}
			mu.Lock()
			seen = append(seen, ev)
			mu.Unlock()
		}
	})
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	// Cleanups run last registered first: the Observer is released before
	// the client is closed, whatever the test's outcome.
	t.Cleanup(unblock)

	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.observer.Flush(ctx); err != nil {
		t.Fatalf("the start-up events were not delivered: %v", err)
	}
	mu.Lock()
	before := len(seen)
	mu.Unlock()
	blocking.Store(true)

	res, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var first Event
	select {
	case first = <-entered:
	default:
		t.Fatal("the Observer was not called during the failover")
	}
	if c.Master() != res.NewMaster.Addr() {
		t.Fatalf("with the Observer blocked (in %v), the client routes to %s when every sentinel names %s (%v after the failover command)",
			first, c.Master(), res.NewMaster.Addr(), res.Duration().Round(time.Millisecond))
	}
	wrote := time.Now()
	if err := c.Set(ctx, "after", "1", 0).Err(); err != nil {
		t.Fatalf("a write after the failover, with the Observer blocked: %v", err)
	}
	took := time.Since(wrote)
	if took >= DefaultFailoverHold {
		t.Fatalf("the write took %v, as long as a failover hold", took)
	}
	if v, err := res.NewMaster.Do(ctx, "GET", "after").Text(); err != nil || v != "1" {
		t.Fatalf("the write is not on the new master: %q, %v", v, err)
	}

	unblock()
	testkit.WaitFor(t, 5*time.Second, "the failover's events delivered", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for _, ev := range seen[before:] {
			if ev.Kind == EventFailoverHoldEnded {
				return true
			}
		}
		return false
	})
	mu.Lock()
	events := slices.Clone(seen[before:])
	mu.Unlock()
	if events[0].Kind != first.Kind || !events[0].Time.Equal(first.Time) {
		t.Fatalf("the first event delivered is %v, but the Observer blocked in %v", events[0], first)
	}
	index := func(kind EventKind) int {
		return slices.IndexFunc(events, func(ev Event) bool {
			return ev.Kind == kind && (kind == EventFailoverStarted || ev.Master == res.NewMaster.Addr())
		})
	}
	started, changed, ended := index(EventFailoverStarted), index(EventMasterChanged), index(EventFailoverHoldEnded)
	if started < 0 || changed < started || ended < changed {
		t.Fatalf("events %v: want failover started, then master changed to %s, then the hold ended", events, res.NewMaster.Addr())
	}
	// The Observer was blocked before the client switched, and stayed so.
	if !first.Time.Before(events[changed].Time) {
		t.Fatalf("the Observer blocked in %v, not before the switch %v", first, events[changed])
	}
	for i := 1; i < len(events); i++ {
		if events[i].Time.Before(events[i-1].Time) {
			t.Fatalf("events delivered out of order: %v after %v", events[i], events[i-1])
		}
	}
	if n := c.Stats().EventsDropped; n != 0 {
		t.Fatalf("%d events dropped", n)
	}
	t.Logf("with the Observer blocked, the client switched %v after the failover command (the sentinels agreed after %v); the write after it took %v",
		events[changed].Time.Sub(res.Requested).Round(time.Millisecond), res.Duration().Round(time.Millisecond), took.Round(time.Millisecond))
}
