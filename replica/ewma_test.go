package replica

import (
	"math"
	"testing"
	"time"
)

func TestEWMA(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name    string
		alpha   float64
		samples []time.Duration
		want    time.Duration
	}{
		{"no sample", 0.6, nil, 0},
		{"first sample seeds", 0.6, []time.Duration{42 * ms}, 42 * ms},
		{"second moves by alpha", 0.6, []time.Duration{6 * ms, 16 * ms}, 12 * ms},
		{"alpha 1 keeps the last", 1, []time.Duration{6 * ms, 42 * ms, 7 * ms}, 7 * ms},
		{"alpha 0.5", 0.5, []time.Duration{8 * ms, 6 * ms, 6 * ms}, 6500 * time.Microsecond},
		{"steady stays", 0.2, []time.Duration{5 * ms, 5 * ms, 5 * ms, 5 * ms}, 5 * ms},
		{"a drop confirmed by a second sample re-seeds", 0.75, []time.Duration{42 * ms, 42 * ms, 6 * ms, 6 * ms}, 6 * ms},
		{"a rise confirmed by a second sample re-seeds", 0.5, []time.Duration{6 * ms, 6 * ms, 42 * ms, 42 * ms}, 42 * ms},
		{"a lone outlier only moves the average", 0.5, []time.Duration{6 * ms, 6 * ms, 60 * ms}, 33 * ms},
		{"an outlier then a normal sample do not re-seed", 0.5, []time.Duration{6 * ms, 60 * ms, 6 * ms}, 19500 * time.Microsecond},
		{"two off samples that disagree do not re-seed", 0.5, []time.Duration{40 * ms, 4 * ms, 12 * ms}, 17 * ms},
		{"sub-millisecond changes are smoothed", 0.5, []time.Duration{100 * time.Microsecond, 400 * time.Microsecond, 400 * time.Microsecond}, 325 * time.Microsecond},
		{"jitter within half the average is smoothed", 0.5, []time.Duration{6 * ms, 8 * ms, 8 * ms}, 7500 * time.Microsecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e ewma
			for _, s := range tc.samples {
				e.add(s, tc.alpha)
			}
			if got := e.get(); got != tc.want {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			if e.n != len(tc.samples) {
				t.Fatalf("n = %d, want %d", e.n, len(tc.samples))
			}
		})
	}
}

// A swap of a near (6 ms) and a far (42 ms) replica's latencies, the master
// at 6 ms, re-ranks them after one sample with the default alpha, and
// brings the new near replica under 3 × the master's RTT (so it is
// eligible at once; alpha ≤ 2/3 could not).
func TestEWMASwapReranksAfterOneSample(t *testing.T) {
	var near, far ewma
	for range 5 {
		near.add(6*time.Millisecond, DefaultEWMAAlpha)
		far.add(42*time.Millisecond, DefaultEWMAAlpha)
	}
	near.add(42*time.Millisecond, DefaultEWMAAlpha)
	far.add(6*time.Millisecond, DefaultEWMAAlpha)
	if gap := near.get() - far.get(); gap <= DefaultLatencyWindow {
		t.Fatalf("after one swapped sample: old near %v, old far %v; gap %v is within the window", near.get(), far.get(), gap)
	}
	if slow(far.get(), 6*time.Millisecond, DefaultExclusionFactor, 0) {
		t.Fatalf("after one swapped sample the new near replica (%v) is still slower than %v × the master", far.get(), DefaultExclusionFactor)
	}
	// The second sample confirms the change: the new near replica is at its
	// new latency, within the window of the 6 ms master (Nearest reads it).
	near.add(42*time.Millisecond, DefaultEWMAAlpha)
	far.add(6*time.Millisecond, DefaultEWMAAlpha)
	if far.get() != 6*time.Millisecond || near.get() < 39*time.Millisecond {
		t.Fatalf("after two swapped samples: old near %v, old far %v, want at least 39ms and 6ms", near.get(), far.get())
	}
}

func TestEWMAReset(t *testing.T) {
	var e ewma
	e.add(300*time.Millisecond, 0.6)
	e.reset()
	e.add(6*time.Millisecond, 0.6)
	if e.get() != 6*time.Millisecond || e.n != 1 {
		t.Fatalf("after reset the next sample must seed: %v (n=%d)", e.get(), e.n)
	}
}

// Properties: the average stays within the range of the samples since the
// reset, and moves towards each new sample by exactly alpha of the gap,
// except that it jumps to the sample when this one and the previous were
// both off the average before them, on the same side, and agree.
func FuzzEWMA(f *testing.F) {
	f.Add(uint16(600), []byte{6, 42, 6, 42, 200, 1})
	f.Add(uint16(1), []byte{255, 0, 255})
	f.Add(uint16(1000), []byte{7})
	f.Fuzz(func(t *testing.T, a uint16, raw []byte) {
		alpha := float64(a%1000+1) / 1000 // (0, 1]
		var e ewma
		lo, hi := math.Inf(1), math.Inf(-1)
		var prevSample float64
		prevOff := 0
		for _, b := range raw {
			s := time.Duration(b) * time.Millisecond
			before := e.value
			first := e.n == 0
			e.add(s, alpha)
			lo, hi = math.Min(lo, float64(s)), math.Max(hi, float64(s))
			off := 0
			if d := float64(s) - before; !first && math.Abs(d) > max(before/2, float64(500*time.Microsecond)) {
				off = 1
				if d < 0 {
					off = -1
				}
			}
			shift := off != 0 && off == prevOff && math.Abs(float64(s)-prevSample) <= math.Max(float64(s), prevSample)/4
			prevSample, prevOff = float64(s), off
			if shift {
				prevOff = 0
				if e.value != float64(s) {
					t.Fatalf("a confirmed change to %v did not re-seed: %v", s, e.value)
				}
				continue
			}
			if e.value < lo-1e-6 || e.value > hi+1e-6 {
				t.Fatalf("average %v outside the samples' range [%v, %v]", e.value, lo, hi)
			}
			if first {
				if e.value != float64(s) {
					t.Fatalf("first sample %v did not seed: %v", s, e.value)
				}
				continue
			}
			want := before + alpha*(float64(s)-before)
			if math.Abs(e.value-want) > 1e-6*math.Max(1, math.Abs(want)) {
				t.Fatalf("moved to %v, want %v", e.value, want)
			}
			if math.Abs(float64(s)-e.value) > math.Abs(float64(s)-before)+1e-6 {
				t.Fatalf("moved away from the sample: %v -> %v (sample %v)", before, e.value, s)
			}
		}
	})
}

func TestConfirmDelay(t *testing.T) {
	for _, tc := range []struct{ interval, want time.Duration }{
		{2 * time.Second, 500 * time.Millisecond},
		{200 * time.Millisecond, MinProbeInterval},
		{MinProbeInterval, MinProbeInterval},
	} {
		if got := confirmDelay(tc.interval); got != tc.want {
			t.Errorf("confirmDelay(%v) = %v, want %v", tc.interval, got, tc.want)
		}
	}
}
