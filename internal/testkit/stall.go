package testkit

import (
	"sync/atomic"
	"testing"
	"time"
)

// StallMeter measures how late the Go runtime wakes a sleeping goroutine
// while a test runs. On a loaded machine every wait in the process
// overruns by about as much (the scheduler, the race detector, other
// processes on the same cores), so a test that bounds the time of an
// operation adds Max to the bound: the slack the machine needed then,
// measured in the same run, instead of a guess.
type StallMeter struct {
	worst atomic.Int64 // nanoseconds
	stop  chan struct{}
	done  chan struct{}
}

// stallTick is how long the meter sleeps between checks: short enough to
// see a stall of a few milliseconds, long enough to cost nothing.
const stallTick = time.Millisecond

// MeasureStalls starts a StallMeter; it stops when the test ends.
func MeasureStalls(t testing.TB) *StallMeter {
	m := &StallMeter{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(m.done)
		for {
			start := time.Now()
			select {
			case <-m.stop:
				return
			case <-time.After(stallTick):
			}
			if late := time.Since(start) - stallTick; late > time.Duration(m.worst.Load()) {
				m.worst.Store(int64(late))
			}
		}
	}()
	t.Cleanup(func() {
		close(m.stop)
		<-m.done
	})
	return m
}

// Max is the longest stall seen so far.
func (m *StallMeter) Max() time.Duration { return time.Duration(m.worst.Load()) }
