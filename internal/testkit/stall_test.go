package testkit

import (
	"runtime"
	"testing"
	"time"
)

// A goroutine kept from running (here: the meter's, while the only P
// spins) is seen late by about as long; an idle one shows a small stall.
func TestStallMeter(t *testing.T) {
	m := MeasureStalls(t)
	time.Sleep(20 * time.Millisecond)
	idle := m.Max()
	if idle <= 0 || idle > time.Second {
		t.Fatalf("idle stall %v, want a small positive figure", idle)
	}
	old := runtime.GOMAXPROCS(1)
	defer runtime.GOMAXPROCS(old)
	spin := time.Now()
	for time.Since(spin) < 50*time.Millisecond {
		// Busy: the meter runs only when the runtime preempts this loop
		// (after about 10 ms).
	}
	time.Sleep(5 * time.Millisecond)
	if m.Max() < 5*time.Millisecond {
		t.Fatalf("after 50 ms of spinning on one P, the worst stall seen was %v, want ≥ 5 ms", m.Max())
	}
}
