package replica

import (
	"slices"
	"testing"
	"time"

	"github.com/rediskit/rediskit/redisurl"
)

// A Config that sets one field keeps the default window: a Selector from
// Config{MaxStaleness: x} spreads the reads over the near replicas as the
// Sentinel client's default selector (Config{}) does; only a negative
// LatencyWindow elects the nearest alone.
func TestOneFieldKeepsTheDefaultWindow(t *testing.T) {
	// a and b are within the window of each other, c is beyond it; all
	// three are near the master, so none is excluded as slow.
	rtts := map[string]time.Duration{
		"m:1": 6 * ms,
		"a:1": 5 * ms,
		"b:1": 5*ms + DefaultLatencyWindow/2,
		"c:1": 5*ms + 2*DefaultLatencyWindow,
	}
	spread := []string{"a:1", "b:1"}
	for _, tc := range []struct {
		name    string
		cfg     Config
		elected []string
	}{
		{"the client's default", Config{}, spread},
		{"only MaxStaleness set", Config{MaxStaleness: 5 * time.Second}, spread},
		{"only ProbeInterval set", Config{ProbeInterval: time.Second}, spread},
		{"no window", Config{LatencyWindow: -1}, []string{"a:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestSelector(t, tc.cfg)
			s.UpdateTopology(Topology{Master: "m:1", Replicas: []string{"a:1", "b:1", "c:1"}})
			s.onMeasurements(meas(1, "m:1", rtts))
			got := slices.Sorted(slices.Values(s.cur.Load().electedAddrs))
			if !slices.Equal(got, tc.elected) {
				t.Fatalf("elected %v, want %v", got, tc.elected)
			}
			// The reads go to every elected replica, and to no other.
			picked := map[string]int{}
			for range 200 {
				addr, done := s.Pick(redisurl.Replica)
				if done != nil {
					done()
				}
				picked[addr]++
			}
			if len(picked) != len(tc.elected) {
				t.Fatalf("reads went to %v, want each of %v", picked, tc.elected)
			}
			for _, addr := range tc.elected {
				if picked[addr] == 0 {
					t.Fatalf("reads went to %v, none to %s", picked, addr)
				}
			}
		})
	}
}
