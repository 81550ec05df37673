package isolation

import "time"

// RTT keeps, per address, the smallest of the last RTTWindow round trips
// a client measured to it. Noise (a loaded machine, a pause) only ever
// adds to a round trip, so the smallest recent one is the best estimate
// of the path's own; a path that became slower shows within RTTWindow
// samples. Owned by one goroutine (a topology's).
type RTT map[string]*rttWindowMin

// RTTWindow is how many recent samples an estimate is the smallest of.
const RTTWindow = 8

type rttWindowMin struct {
	samples [RTTWindow]time.Duration
	n, next int
}

// Sample records a round trip to addr; an empty address or a duration
// that is not positive (nothing measured) is ignored.
func (e RTT) Sample(addr string, d time.Duration) {
	if addr == "" || d <= 0 {
		return
	}
	w := e[addr]
	if w == nil {
		w = &rttWindowMin{}
		e[addr] = w
	}
	w.samples[w.next] = d
	w.next = (w.next + 1) % RTTWindow
	w.n = min(w.n+1, RTTWindow)
}

// Get is the estimate for addr, 0 when none was measured.
func (e RTT) Get(addr string) time.Duration {
	w := e[addr]
	if w == nil || w.n == 0 {
		return 0
	}
	m := w.samples[0]
	for _, d := range w.samples[1:w.n] {
		m = min(m, d)
	}
	return m
}

// Forget drops the estimates of the addresses keep rejects.
func (e RTT) Forget(keep func(addr string) bool) {
	for a := range e {
		if !keep(a) {
			delete(e, a)
		}
	}
}
