package isolation

import (
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/redisinfo"
)

func TestStream(t *testing.T) {
	t0 := time.Unix(1000, 0)
	const m = "10.0.0.1:6379"
	const bound = 60 * time.Millisecond
	replica := func(offset int64) redisinfo.Role {
		return redisinfo.Role{Role: "slave", LinkState: "connected", MasterAddr: m, Offset: offset}
	}
	type sample struct {
		after         time.Duration
		master        int64
		role          redisinfo.Role
		watched, stop bool
	}
	tests := []struct {
		name    string
		samples []sample
	}{
		{"a healthy stream: behind, then caught up", []sample{
			{0, 100, replica(90), false, false},
			{250 * time.Millisecond, 200, replica(190), true, false},
			{500 * time.Millisecond, 200, replica(200), true, false}}},
		{"no writes: nothing to receive, never stalled", []sample{
			{0, 100, replica(100), false, false},
			{250 * time.Millisecond, 100, replica(100), true, false},
			{500 * time.Millisecond, 100, replica(100), true, false}}},
		{"behind and not moving past the bound: stalled", []sample{
			{0, 100, replica(90), false, false},
			{250 * time.Millisecond, 300, replica(90), true, true}}},
		{"behind, not moving, within the bound (a slow link): not yet", []sample{
			{0, 100, replica(90), false, false},
			{40 * time.Millisecond, 300, replica(90), true, false},
			{120 * time.Millisecond, 300, replica(90), true, true}}},
		{"the link lost: stalled", []sample{
			{0, 100, replica(100), false, false},
			{250 * time.Millisecond, 100, redisinfo.Role{Role: "slave", LinkState: "connect", MasterAddr: m}, true, true},
			{500 * time.Millisecond, 100, redisinfo.Role{Role: "slave", LinkState: "connect", MasterAddr: m}, false, false}}},
		{"a former master awaiting demotion: never watched", []sample{
			{0, 100, redisinfo.Role{Role: "master", Offset: 50}, false, false},
			{250 * time.Millisecond, 100, redisinfo.Role{Role: "master", Offset: 50}, false, false}}},
		{"a replica of another master (being reconfigured): never watched", []sample{
			{0, 100, redisinfo.Role{Role: "slave", LinkState: "connected", MasterAddr: "10.0.0.9:6379", Offset: 5}, false, false},
			{250 * time.Millisecond, 100, redisinfo.Role{Role: "slave", LinkState: "connected", MasterAddr: "10.0.0.9:6379", Offset: 5}, false, false}}},
	}
	for _, tt := range tests {
		var w Watch
		for i, s := range tt.samples {
			var watched, stalled bool
			w, watched, stalled = Stream(w, t0.Add(s.after), s.master, s.role, m, bound)
			if watched != s.watched || stalled != s.stop {
				t.Errorf("%s, sample %d: watched %v stalled %v, want %v %v", tt.name, i, watched, stalled, s.watched, s.stop)
			}
		}
	}
}

func TestRTTEstimatesKeepTheSmallestRecent(t *testing.T) {
	e := RTT{}
	if e.Get("a") != 0 {
		t.Fatal("an estimate with no sample")
	}
	e.Sample("a", 5*time.Millisecond)
	e.Sample("a", 90*time.Millisecond) // a loaded moment
	if got := e.Get("a"); got != 5*time.Millisecond {
		t.Fatalf("estimate %v, want the smallest, 5ms", got)
	}
	for range RTTWindow {
		e.Sample("a", 400*time.Millisecond) // the path became slower
	}
	if got := e.Get("a"); got != 400*time.Millisecond {
		t.Fatalf("estimate %v after %d slower samples, want 400ms", got, RTTWindow)
	}
	e.Sample("", time.Millisecond)
	e.Sample("b", 0)
	if len(e) != 1 {
		t.Fatalf("estimates %v: empty addresses and zero samples kept", e)
	}
}
