package replica

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"
)

// settle waits until every election change made so far has been reported:
// its evictions done and its Event delivered.
func settle(t *testing.T, s *Selector) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.notices.Flush(ctx); err != nil {
		t.Fatalf("the Selector's notices were not delivered: %v", err)
	}
}

// returns runs fn and fails the test unless it returns within d.
func returns(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// An Observer that blocks holds up neither the prober's rounds nor the
// client's topology updates (the Sentinel client calls UpdateTopology from
// the goroutine that handles failovers); its events and the evictions
// still come, in order, once it returns.
func TestBlockedObserverBlocksNothing(t *testing.T) {
	rec := &envRecorder{}
	release := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var events []Event
	entered := make(chan struct{}, 16)
	s := newTestSelector(t, Config{LatencyWindow: -1, Observer: func(ev Event) {
		entered <- struct{}{}
		<-release
		mu.Lock()
		events = append(events, ev)
		mu.Unlock()
	}})
	t.Cleanup(func() { once.Do(func() { close(release) }) }) // before Close
	s.Bind(rec.env("blocked-observer", "127.0.0.1:1"))
	s.UpdateTopology(Topology{Master: "m:1", Replicas: []string{"a:1", "b:1"}})

	returns(t, 2*time.Second, "a probe round while nothing observes", func() {
		s.onMeasurements(meas(1, "m:1", map[string]time.Duration{"m:1": 6 * ms, "a:1": 6 * ms, "b:1": 42 * ms}))
	})
	select {
	case <-entered:
	case <-time.After(2 * time.Second):
		t.Fatal("the Observer was not called for the first round")
	}
	// The Observer is blocked in the first round's event now.
	returns(t, 2*time.Second, "a probe round while the Observer blocks", func() {
		s.onMeasurements(meas(2, "m:1", map[string]time.Duration{"m:1": 6 * ms, "a:1": 42 * ms, "b:1": 6 * ms}))
	})
	returns(t, 2*time.Second, "another probe round while the Observer blocks", func() {
		s.onMeasurements(meas(3, "m:1", map[string]time.Duration{"m:1": 6 * ms, "a:1": 6 * ms, "b:1": 42 * ms}))
	})
	returns(t, 2*time.Second, "UpdateTopology while the Observer blocks", func() {
		s.UpdateTopology(Topology{Master: "m:1", Replicas: []string{"b:1"}})
	})
	if e := s.cur.Load(); len(e.electedAddrs) != 0 || !e.nearestMaster {
		t.Fatalf("election %v (nearest master %v) while the Observer blocks; want the new topology's", e.electedAddrs, e.nearestMaster)
	}
	once.Do(func() { close(release) })
	settle(t, s)

	mu.Lock()
	defer mu.Unlock()
	var reasons []Reason
	for _, ev := range events {
		reasons = append(reasons, ev.Reason)
	}
	if want := []Reason{ReasonFirstRound, ReasonSlow, ReasonSlow, ReasonTopology}; !slices.Equal(reasons, want) {
		t.Fatalf("events %v, want reasons %v in that order", events, want)
	}
	if got, want := rec.take(), []string{"a:1", "b:1"}; !slices.Equal(got, want) {
		t.Fatalf("evicted %v, want %v in that order", got, want)
	}
}

// An Observer may call the Selector: WaitRound for the next round (which
// its own call must not hold up), and Close still returns promptly.
func TestObserverMayCallTheSelector(t *testing.T) {
	var s *Selector
	waited := make(chan error, 16)
	// entered tells which round's Event the Observer is handling: Close
	// drops Events not yet delivered, so the test closes only once the
	// Observer is inside its call for round 2.
	entered := make(chan uint64, 16)
	s = newTestSelector(t, Config{LatencyWindow: -1, Observer: func(ev Event) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.Table()
		entered <- ev.Round
		waited <- s.WaitRound(ctx, ev.Round+1)
	}})
	s.Bind((&envRecorder{}).env("reentrant-observer", "127.0.0.1:1"))
	s.UpdateTopology(Topology{Master: "m:1", Replicas: []string{"a:1", "b:1"}})

	returns(t, 2*time.Second, "the first round", func() {
		s.onMeasurements(meas(1, "m:1", map[string]time.Duration{"m:1": 6 * ms, "a:1": 6 * ms, "b:1": 42 * ms}))
	})
	returns(t, 2*time.Second, "the second round, while the Observer waits for it", func() {
		s.onMeasurements(meas(2, "m:1", map[string]time.Duration{"m:1": 6 * ms, "a:1": 42 * ms, "b:1": 6 * ms}))
	})
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("the Observer's WaitRound for round 2: %v", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the Observer's WaitRound for round 2 did not return")
	}
	// Round 2 changed the election: the Observer now waits for round 3,
	// which never comes; Close ends its wait.
	for r := uint64(0); r != 2; {
		select {
		case r = <-entered:
		case <-time.After(2 * time.Second):
			t.Fatal("the Observer was not called for round 2")
		}
	}
	returns(t, 2*time.Second, "Close while the Observer waits", func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	select {
	case err := <-waited:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("the Observer's WaitRound after Close: %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("the Observer's WaitRound did not end with Close")
	}
}
