package guard

import "sync"

// flight lets concurrent loads of one key share a single call: the first
// caller (the leader) runs it, the others wait for its result. It is a
// small singleflight, without the dependency.
type flight[V any] struct {
	mu    sync.Mutex
	calls map[string]*flightCall[V]
}

type flightCall[V any] struct {
	done chan struct{} // closed when the leader has finished
	val  V
	err  error
	// leaderGone: the leader's own context ended, so err is about the
	// leader, not the load; a waiter whose context is fine tries again.
	leaderGone bool
	waiters    int // callers that joined; guarded by flight.mu
}

// join returns the call in flight for key, or starts one; leader reports
// whether the caller started it and must finish it.
func (f *flight[V]) join(key string) (c *flightCall[V], leader bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.calls[key]; ok {
		c.waiters++
		return c, false
	}
	if f.calls == nil {
		f.calls = map[string]*flightCall[V]{}
	}
	c = &flightCall[V]{done: make(chan struct{})}
	f.calls[key] = c
	return c, true
}

// finish publishes the leader's result and lets a later caller start a new
// call for key.
func (f *flight[V]) finish(key string, c *flightCall[V], val V, err error, leaderGone bool) {
	f.mu.Lock()
	delete(f.calls, key)
	f.mu.Unlock()
	c.val, c.err, c.leaderGone = val, err, leaderGone
	close(c.done)
}

// waiting is the number of callers waiting for key's call (for tests).
func (f *flight[V]) waiting(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.calls[key]; ok {
		return c.waiters
	}
	return 0
}
