package replica

import (
	"math"
	"time"
)

// ewma is an exponentially weighted moving average of round-trip times:
// each sample moves the average by alpha of the difference. The first sample
// after a reset seeds it.
//
// A change of latency is told from an outlier by a second sample: when two
// samples in a row are off the average on the same side (by more than
// shiftOff of it and at least shiftMin) and agree with each other (within shiftAgree of the
// larger), the node's latency has changed, and the average is re-seeded at
// the newer sample instead of creeping towards it. Without that, a replica
// that went from 42 ms to 6 ms averages 15, 8.3, 6.6 ms over three rounds
// and stays outside a 2 ms latency window around a 6 ms master for two
// of them; with it the average is 6 ms at the second round. A lone
// outlier (one slow PING pair) still moves the average by alpha only, and
// the next normal sample does not agree with it, so it does not re-seed.
type ewma struct {
	value   float64 // nanoseconds
	n       int     // samples since the last reset
	prev    float64 // the previous sample, nanoseconds
	prevOff int     // the side of the average the previous sample was off on: -1, +1, or 0
}

const (
	// shiftOff is how far from the average, as a fraction of it, a sample
	// must be to count towards a change of latency. Half: jitter of a few
	// tenths stays ordinary smoothing.
	shiftOff = 0.5
	// shiftMin is the least difference from the average that counts,
	// whatever the fraction: on loopback or a LAN, round trips of tens of
	// microseconds vary by more than half with scheduling alone, and a
	// change under a quarter of the default latency window is not worth
	// an extra round.
	shiftMin = float64(500 * time.Microsecond)
	// shiftAgree is how close two off samples must be, as a fraction of
	// the larger, to be the same new latency.
	shiftAgree = 0.25
)

func (e *ewma) add(sample time.Duration, alpha float64) {
	s := float64(sample)
	if e.n == 0 {
		e.value, e.n, e.prev, e.prevOff = s, 1, s, 0
		return
	}
	off := offSide(s, e.value)
	if off != 0 && off == e.prevOff && math.Abs(s-e.prev) <= shiftAgree*math.Max(s, e.prev) {
		e.value, off = s, 0 // a change of latency: start again from it
	} else {
		e.value += alpha * (s - e.value)
	}
	e.prev, e.prevOff = s, off
	e.n++
}

// offSide is +1 when sample is more than shiftOff of avg (and shiftMin)
// above it, -1 when that far below, 0 otherwise.
func offSide(sample, avg float64) int {
	limit := max(shiftOff*avg, shiftMin)
	switch d := sample - avg; {
	case d > limit:
		return 1
	case -d > limit:
		return -1
	}
	return 0
}

func (e *ewma) reset() { *e = ewma{} }

// get is the average, 0 when there is no sample.
func (e *ewma) get() time.Duration { return time.Duration(e.value + 0.5) }
