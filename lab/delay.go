package lab

import (
	"container/heap"
	"sync"
	"time"
)

// delayQueue holds the delayed chunks of every connection of a proxy, by
// due time, and delivers them from one goroutine that sleeps until the
// earliest is due. One goroutine and one timer for all the connections
// means that a chunk waiting out its delay wakes nothing until it is due,
// and that the timer can be a precise one (see newPreciseClock): runtime
// timers fire up to a millisecond late in an idle process, because the
// runtime's poller sleeps in whole milliseconds.
type delayQueue struct {
	proxy *Proxy

	mu      sync.Mutex
	items   delayHeap
	seq     uint64
	armed   time.Time // the time the clock is set for; zero when unset
	clock   clock     // nil until the first chunk that must wait
	stopped bool

	// newClock makes the clock (defaultClock when nil); see useClock.
	newClock func() clock
}

// useClock makes the queue make its clock with mk (nil: the default), for
// tests; before the proxy's first delayed chunk.
func (q *delayQueue) useClock(mk func() clock) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.newClock = mk
}

// clock wakes the queue's goroutine at the time set.
type clock interface {
	// set makes wait return at t (or soon after); a later set replaces it.
	// The zero time unsets it. Only with the queue's lock held.
	set(t time.Time)
	// wait returns true when the time set has come (or spuriously), false
	// once the clock is stopped.
	wait() bool
	// stop makes wait return false, now and from then on. Any goroutine
	// may call it, more than once.
	stop()
	// close releases the clock, after the last wait.
	close()
}

// defaultClock is the clock a delay queue uses unless its newClock says
// otherwise: a precise one where there is one.
func defaultClock() clock {
	if c := newPreciseClock(); c != nil {
		return c
	}
	return newRuntimeClock()
}

// item is a chunk of one direction of a connection, or the end of it.
type item struct {
	dir  *direction
	data []byte // nil for the end of the stream
	read time.Time
	due  time.Time
	seq  uint64
	// end: the stream ended cleanly (close dst's write side) or with an
	// error (abort the connection). Only for data == nil.
	clean bool
}

// push queues it, with its due time already set, and starts the goroutine
// or re-sets the clock when it is the earliest. false when the proxy is
// closed.
func (q *delayQueue) push(it *item) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.stopped {
		return false
	}
	q.seq++
	it.seq = q.seq
	heap.Push(&q.items, it)
	if q.clock == nil {
		mk := q.newClock
		if mk == nil {
			mk = defaultClock
		}
		q.clock = mk()
		q.proxy.wg.Add(1) // the proxy's connection that pushes is counted
		go q.run(q.clock)
	}
	if q.armed.IsZero() || it.due.Before(q.armed) {
		q.armed = it.due
		q.clock.set(it.due)
	}
	return true
}

func (q *delayQueue) run(clk clock) {
	defer q.proxy.wg.Done()
	defer clk.close()
	var batch []*item
	for clk.wait() {
		now := time.Now()
		q.mu.Lock()
		for len(q.items) > 0 && !q.items[0].due.After(now) {
			batch = append(batch, heap.Pop(&q.items).(*item))
		}
		q.mu.Unlock()
		for i, it := range batch {
			it.dir.deliver(it)
			batch[i] = nil
		}
		batch = batch[:0]
		q.mu.Lock()
		q.armed = time.Time{}
		if len(q.items) > 0 {
			q.armed = q.items[0].due
		}
		clk.set(q.armed)
		q.mu.Unlock()
	}
}

// close stops the goroutine; chunks still queued are dropped (their
// connections are reset by then).
func (q *delayQueue) close() {
	q.mu.Lock()
	q.stopped = true
	q.items = nil
	clk := q.clock
	q.mu.Unlock()
	if clk != nil {
		clk.stop()
	}
}

// delayHeap orders items by due time, then by arrival.
type delayHeap []*item

func (h delayHeap) Len() int { return len(h) }
func (h delayHeap) Less(i, j int) bool {
	if !h[i].due.Equal(h[j].due) {
		return h[i].due.Before(h[j].due)
	}
	return h[i].seq < h[j].seq
}
func (h delayHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *delayHeap) Push(x any)   { *h = append(*h, x.(*item)) }
func (h *delayHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return it
}

// runtimeClock is a clock on a runtime timer: the fallback where there is
// no precise one.
type runtimeClock struct {
	timer    *time.Timer
	stopping chan struct{}
	once     sync.Once
}

func newRuntimeClock() *runtimeClock {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &runtimeClock{timer: t, stopping: make(chan struct{})}
}

func (r *runtimeClock) set(t time.Time) {
	if t.IsZero() {
		r.timer.Stop()
		return
	}
	r.timer.Reset(time.Until(t))
}

func (r *runtimeClock) wait() bool {
	select {
	case <-r.timer.C:
		return true
	case <-r.stopping:
		return false
	}
}

func (r *runtimeClock) stop() { r.once.Do(func() { close(r.stopping) }) }

func (r *runtimeClock) close() { r.timer.Stop() }
