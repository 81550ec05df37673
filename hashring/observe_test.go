package hashring

import (
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// The observer sees the node's share of the ring as nodes join and leave.
func TestObserverReportsShare(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	var mu sync.Mutex
	var shares []float64
	oa := fast("obs-a", nil)
	oa.Observer = func(ev Event) {
		if ev.Kind == EventRangesChanged {
			mu.Lock()
			shares = append(shares, ev.Share)
			mu.Unlock()
		}
	}
	a := newNode(t, client(t, l.Node(0).Options(), 5*time.Second), "ring", oa)
	b := newNode(t, client(t, l.Node(0).Options(), 5*time.Second), "ring", fast("obs-b", nil))
	last := func() float64 {
		mu.Lock()
		defer mu.Unlock()
		if len(shares) == 0 {
			return -1
		}
		return shares[len(shares)-1]
	}
	start(t, ctx, a)
	if got := last(); got != 1 {
		t.Fatalf("alone, the node's share is %v, want 1", got)
	}
	start(t, ctx, b)
	testkit.WaitFor(t, 5*time.Second, "a's share to drop", func() bool { return last() > 0 && last() < 1 })
	var sum uint64
	for _, r := range a.Ranges() {
		sum += r.Len()
	}
	if got, want := last(), float64(sum)/RingSize; math.Abs(got-want) > 1e-9 {
		t.Fatalf("reported share %v, ranges cover %v", got, want)
	}
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "a's share back to 1", func() bool { return last() == 1 })
}

// overlapCheck counts the Observer calls that overlapped another. Each
// call stays inside for hold, to give an overlap the chance to happen.
type overlapCheck struct{ inside, overlaps atomic.Int32 }

func (o *overlapCheck) enter(hold time.Duration) {
	if o.inside.Add(1) > 1 {
		o.overlaps.Add(1)
	}
	time.Sleep(hold)
	o.inside.Add(-1)
}

func (o *overlapCheck) expectNone(t *testing.T) {
	t.Helper()
	if n := o.overlaps.Load(); n != 0 {
		t.Fatalf("the Observer was called concurrently %d times; its calls must be one at a time", n)
	}
}

// rangeEvents records a node's EventRangesChanged events, and counts the
// Observer calls that overlapped another (each call lasts a millisecond;
// TestObserverCallsAreSerial makes an overlap likely).
type rangeEvents struct {
	overlapCheck
	mu     sync.Mutex
	events []Event
}

func (r *rangeEvents) observe(ev Event) {
	r.enter(time.Millisecond)
	if ev.Kind == EventRangesChanged {
		r.mu.Lock()
		r.events = append(r.events, ev)
		r.mu.Unlock()
	}
}

func (r *rangeEvents) all() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

func (r *rangeEvents) last() (Event, bool) {
	all := r.all()
	if len(all) == 0 {
		return Event{}, false
	}
	return all[len(all)-1], true
}

// EventRangesChanged comes on every occasion its documentation lists: a
// node that gives its keys up (its ownership deadline passed, or Stop)
// reports a share of 0 and no ranges, once; one that gets them back
// reports them again.
func TestObserverReportsGivingKeysUp(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 60*time.Second)
	rec := &rangeEvents{}
	o := fast("giving-up", nil)
	o.OwnershipDeadline, o.Expiry = time.Second, 1500*time.Millisecond
	o.Observer = rec.observe
	n := newNode(t, client(t, l.Node(0).Options(), 5*time.Second), "ring", o)
	start(t, ctx, n)
	if ev, ok := rec.last(); !ok || ev.Share != 1 || ev.Ranges == 0 {
		t.Fatalf("after Start: %v, want share 1", rec.all())
	}

	// The deadline passes while Redis is paused.
	if err := l.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if l.Node(0).Paused() {
			_ = l.Node(0).Resume()
		}
	})
	testkit.WaitFor(t, 5*time.Second, "the deadline to pass", func() bool { return len(n.Ranges()) == 0 })
	// At the deadline, not when the node's goroutine, blocked on the
	// paused Redis for up to the client's 5 s timeout, next looks.
	testkit.WaitFor(t, time.Second, "a share of 0 reported at the deadline", func() bool {
		ev, _ := rec.last()
		return ev.Share == 0 && ev.Ranges == 0
	})
	lost := len(rec.all())
	if err := l.Node(0).Resume(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "ownership back, reported", func() bool {
		ev, _ := rec.last()
		return len(n.Ranges()) > 0 && ev.Share == 1
	})
	if all := rec.all(); len(all) != lost+1 {
		t.Fatalf("events after the deadline passed: %v, want one share of 0, then one share of 1", all)
	}

	// Stop gives the keys up at once.
	if err := n.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	all := rec.all()
	if ev := all[len(all)-1]; ev.Share != 0 || ev.Ranges != 0 {
		t.Fatalf("after Stop: %v, want a share of 0 last", all)
	}
	var zeros int
	for _, ev := range all {
		if ev.Share == 0 {
			zeros++
		}
	}
	if zeros != 2 || len(all) != 4 {
		t.Fatalf("events %v: want share 1, 0 (deadline), 1 (restored), 0 (Stop)", all)
	}
	rec.expectNone(t)
}

// TestObserverCallsAreSerial kills Redis under a node: its goroutine
// reports failed attempts every few tens of milliseconds while the
// deadline timer reports the keys given up. An Observer that takes 20 ms
// a call would overlap them if they were not one at a time.
func TestObserverCallsAreSerial(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	var calls overlapCheck
	var failed atomic.Int32
	var gaveUp atomic.Bool
	o := fast("serial", nil)
	o.OwnershipDeadline, o.Expiry = time.Second, 1500*time.Millisecond
	o.RetryWait, o.MaxRetryWait = 10*time.Millisecond, 20*time.Millisecond
	o.Observer = func(ev Event) {
		calls.enter(20 * time.Millisecond)
		switch {
		case ev.Kind == EventAttemptFailed:
			failed.Add(1)
		case ev.Kind == EventRangesChanged && ev.Share == 0:
			gaveUp.Store(true)
		}
	}
	n := newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", o)
	start(t, ctx, n)
	if err := l.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the keys given up and failed attempts on both sides of it", func() bool {
		return gaveUp.Load() && failed.Load() >= 40
	})
	_ = n.Stop(ctx) // with Redis down it reports the failed removal; the node stops all the same
	calls.expectNone(t)
}
