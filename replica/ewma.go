package replica

import "time"

// ewma is an exponentially weighted moving average of round-trip times:
// each sample moves the average by alpha of the difference. The first sample
// after a reset seeds it.
type ewma struct {
	value float64 // nanoseconds
	n     int     // samples since the last reset
}

func (e *ewma) add(sample time.Duration, alpha float64) {
	if e.n == 0 {
		e.value = float64(sample)
	} else {
		e.value += alpha * (float64(sample) - e.value)
	}
	e.n++
}

func (e *ewma) reset() { *e = ewma{} }

// get is the average, 0 when there is no sample.
func (e *ewma) get() time.Duration { return time.Duration(e.value + 0.5) }
