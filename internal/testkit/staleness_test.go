package testkit

import (
	"testing"
	"time"
)

// TestVersions: a read is stale by the time since the first newer version
// was acknowledged before it began, and not stale otherwise.
func TestVersions(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	var vs Versions
	vs.Acked("k", 1, t0)
	vs.Acked("k", 2, t0.Add(10*time.Millisecond))
	vs.Acked("k", 3, t0.Add(20*time.Millisecond))
	for _, c := range []struct {
		start time.Duration
		got   int64
		want  time.Duration
	}{
		{5 * time.Millisecond, 1, 0},                     // v2 not acknowledged yet
		{15 * time.Millisecond, 1, 5 * time.Millisecond}, // v2 acknowledged 5 ms before
		{25 * time.Millisecond, 1, 15 * time.Millisecond},
		{25 * time.Millisecond, 2, 5 * time.Millisecond},
		{25 * time.Millisecond, 3, 0},
		{0, 0, 0},                               // before anything
		{time.Millisecond, 0, time.Millisecond}, // v1 acknowledged, nothing read
		{10 * time.Millisecond, 1, 0},           // v2 acknowledged at the very start: not before it
	} {
		if got := vs.Check("k", t0.Add(c.start), c.got); got != c.want {
			t.Errorf("read of v%d at +%v: stale by %v, want %v", c.got, c.start, got, c.want)
		}
	}
	if r := vs.Report(); r.Reads != 8 || r.Stale != 4 || r.Worst != 15*time.Millisecond {
		t.Fatalf("report %+v", r)
	}
}

// TestSwitchLag: the lag counts only when both clients switched, and
// never below zero.
func TestSwitchLag(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name          string
		cached, wrote time.Time
		want          time.Duration
	}{
		{"cached later", t0.Add(80 * time.Millisecond), t0, 80 * time.Millisecond},
		{"cached first", t0, t0.Add(time.Second), 0},
		{"cached never", time.Time{}, t0, 0},
		{"writer never", t0, time.Time{}, 0},
	} {
		if got := SwitchLag(tt.cached, tt.wrote); got != tt.want {
			t.Errorf("%s: SwitchLag = %v, want %v", tt.name, got, tt.want)
		}
	}
}
