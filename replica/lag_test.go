package replica

import (
	"testing"
	"time"
)

func TestOffsetHistoryAdd(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	var h offsetHistory
	h.add(at(0), 100)
	h.add(at(1), 100) // idle: the newest sample's time moves
	h.add(at(2), 150)
	if len(h.samples) != 2 || !h.samples[0].first.Equal(at(0)) || !h.samples[0].last.Equal(at(1)) || h.samples[1].offset != 150 {
		t.Fatalf("history %v", h.samples)
	}
	h.add(at(3), 120) // went back: another stream
	if len(h.samples) != 1 || h.samples[0].offset != 120 {
		t.Fatalf("after the offset went back: %v", h.samples)
	}
	if off, ok := h.latest(); !ok || off != 120 {
		t.Fatalf("latest %d %v", off, ok)
	}
	var long offsetHistory
	for i := range historyMax + 10 {
		long.add(at(float64(i)/100), int64(i+1))
	}
	if len(long.samples) != historyMax {
		t.Fatalf("history holds %d samples, want at most %d", len(long.samples), historyMax)
	}
	var old offsetHistory
	old.add(at(0), 1)
	old.add(at(1), 2)
	old.add(at(historySpan.Seconds()+5), 3)
	if len(old.samples) != 2 || old.samples[0].offset != 2 {
		t.Fatalf("samples older than the span were kept: %v", old.samples)
	}
}

func TestLagEstimate(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// The master wrote 1000 bytes per second from t=0 to t=4, then idled
	// until t=10.
	var h offsetHistory
	for i := range 5 {
		h.add(at(float64(i)), int64(1000*i))
	}
	h.add(at(10), 4000)
	tests := []struct {
		name        string
		offset      int64
		at          float64
		wantBytes   int64
		wantLag     time.Duration
		wantAtLeast bool
	}{
		{"caught up", 4000, 10, 0, 0, false},
		{"ahead of the last sample", 4500, 10, 0, 0, false},
		{"lacks the last second's writes", 3000, 10, 1000, 6999 * time.Millisecond, false}, // first missing byte written at t=3.001
		{"halfway through a span", 2499, 4, 1501, 1500 * time.Millisecond, false},          // byte 2500 written at t=2.5
		{"behind the whole history", -5, 10, 4005, 10 * time.Second, true},                 // older than t=0
		{"sampled before the master", 3999, 3.5, 1, 0, false},                              // clamped at 0
		{"one byte behind at the end", 3999, 4, 1, 0, false},                               // byte 4000 written at t=4
		{"one byte behind later", 3999, 6, 1, 2 * time.Second, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := h.estimate(tc.offset, at(tc.at))
			if !got.known || got.bytes != tc.wantBytes || got.atLeast != tc.wantAtLeast {
				t.Fatalf("got %+v, want %d bytes (atLeast %v)", got, tc.wantBytes, tc.wantAtLeast)
			}
			if d := got.seconds - tc.wantLag; d < -time.Millisecond || d > time.Millisecond {
				t.Fatalf("lag %v, want %v", got.seconds, tc.wantLag)
			}
		})
	}
	var empty offsetHistory
	if got := empty.estimate(10, at(1)); got.known {
		t.Fatalf("an empty history knows a lag: %+v", got)
	}
}

// Properties: for any history and replica offset, the lag is between the
// bounds the samples allow: the replica has every byte the master held at
// the last sample at or below its offset, and lacks one the master held at
// the next.
func FuzzLagEstimate(f *testing.F) {
	f.Add([]byte{10, 20, 0, 30, 5, 40}, int64(25), uint16(100))
	f.Add([]byte{1, 1, 1, 1}, int64(0), uint16(0))
	f.Fuzz(func(t *testing.T, steps []byte, offset int64, atTenths uint16) {
		t0 := time.Unix(1000, 0)
		var h offsetHistory
		var off int64
		for i := 0; i+1 < len(steps) && i < 200; i += 2 {
			off += int64(steps[i])
			h.add(t0.Add(time.Duration(i)*time.Second), off)
		}
		at := t0.Add(time.Duration(atTenths) * 100 * time.Millisecond)
		est := h.estimate(offset, at)
		if len(h.samples) == 0 {
			if est.known {
				t.Fatal("known without history")
			}
			return
		}
		newest := h.samples[len(h.samples)-1]
		if est.bytes < 0 || est.seconds < 0 {
			t.Fatalf("negative lag %+v", est)
		}
		if offset >= newest.offset {
			if est.bytes != 0 || est.seconds != 0 {
				t.Fatalf("caught-up replica has lag %+v", est)
			}
			return
		}
		if est.bytes != newest.offset-offset {
			t.Fatalf("bytes %d, want %d", est.bytes, newest.offset-offset)
		}
		var lower, upper time.Duration // at - (next sample), at - (last sample at or below)
		k := 0
		for k < len(h.samples) && h.samples[k].offset <= offset {
			k++
		}
		lower = max(0, at.Sub(h.samples[k].first))
		if k == 0 {
			if !est.atLeast || est.seconds != lower {
				t.Fatalf("behind the history: %+v, want at least %v", est, lower)
			}
			return
		}
		upper = max(0, at.Sub(h.samples[k-1].last))
		if est.seconds < lower-time.Microsecond || est.seconds > upper+time.Microsecond {
			t.Fatalf("lag %v outside [%v, %v]", est.seconds, lower, upper)
		}
	})
}
