package testkit

import "sync"

// Recorder collects what callbacks report (events, causes) from any
// goroutine, for a test to count and inspect. The zero value is ready.
type Recorder[T any] struct {
	mu    sync.Mutex
	items []T
}

// Add records v.
func (r *Recorder[T]) Add(v T) {
	r.mu.Lock()
	r.items = append(r.items, v)
	r.mu.Unlock()
}

// All returns a copy of what was recorded, in order.
func (r *Recorder[T]) All() []T {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]T(nil), r.items...)
}

// Count counts the recorded values that match.
func (r *Recorder[T]) Count(match func(T) bool) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.items {
		if match(v) {
			n++
		}
	}
	return n
}
