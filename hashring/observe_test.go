package hashring

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/rediskit/rediskit/lab"
)

// The observer sees the node's share of the ring as nodes join and leave.
func TestObserverReportsShare(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testContext(t, 30*time.Second)
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
	waitFor(t, 5*time.Second, "a's share to drop", func() bool { return last() > 0 && last() < 1 })
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
	waitFor(t, 5*time.Second, "a's share back to 1", func() bool { return last() == 1 })
}
