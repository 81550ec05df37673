package replica

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

// node is a probed, healthy node with the given average RTT.
func node(addr string, rtt time.Duration) nodeInput {
	return nodeInput{addr: addr, samples: 3, rtt: rtt, last: rtt, healthy: true, linkKnown: true, linkUp: true, lastIO: 0,
		lag: lagEstimate{known: true}}
}

func defaults(t testing.TB, c Config) Config {
	t.Helper()
	c, err := c.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestElect(t *testing.T) {
	unreachable := nodeInput{addr: "b:1", healthy: false, err: errors.New("i/o timeout"), lastIO: -1}
	unprobed := nodeInput{addr: "b:1", lastIO: -1}
	linkDown := node("b:1", 5*ms)
	linkDown.linkUp = false
	lagging := node("b:1", 5*ms)
	lagging.lag = lagEstimate{known: true, bytes: 5000, seconds: 3 * time.Second}
	detached := node("b:1", 5*ms)
	detached.lag = lagEstimate{}

	tests := []struct {
		name          string
		cfg           *Config // nil: Config{}
		master        nodeInput
		replicas      []nodeInput
		incumbents    []string
		elected       []string
		nearestMaster bool
		fallback      []string
		excluded      map[string]Exclusion
	}{
		{
			name:   "near and far replica, master as near",
			master: node("m:1", 6*ms), replicas: []nodeInput{node("a:1", 6*ms), node("b:1", 42*ms)},
			elected: []string{"a:1"}, excluded: map[string]Exclusion{"b:1": ExcludedSlow},
		},
		{
			name:   "far replica beyond the window but not slow",
			master: node("m:1", 20*ms), replicas: []nodeInput{node("a:1", 6*ms), node("b:1", 42*ms)},
			elected: []string{"a:1"}, excluded: map[string]Exclusion{"b:1": NotExcluded},
		},
		{
			name:   "replicas within the window share",
			master: node("m:1", 6*ms), replicas: []nodeInput{node("b:1", 6500*time.Microsecond), node("a:1", 6*ms), node("c:1", 9*ms)},
			elected: []string{"a:1", "b:1"},
		},
		{
			name:   "a newcomer must be within the window",
			master: node("m:1", 6*ms), replicas: []nodeInput{node("a:1", 6*ms), node("b:1", 9*ms)},
			incumbents: []string{"a:1"}, elected: []string{"a:1"},
		},
		{
			name:   "an incumbent stays within 1.5 × the window",
			master: node("m:1", 6*ms), replicas: []nodeInput{node("a:1", 6*ms), node("b:1", 8900*time.Microsecond)},
			incumbents: []string{"a:1", "b:1"}, elected: []string{"a:1", "b:1"},
		},
		{
			name:   "an incumbent leaves beyond 1.5 × the window",
			master: node("m:1", 6*ms), replicas: []nodeInput{node("a:1", 6*ms), node("b:1", 9100*time.Microsecond)},
			incumbents: []string{"a:1", "b:1"}, elected: []string{"a:1"},
		},
		{
			name: "an excluded incumbent leaves", cfg: &Config{LatencyWindow: DefaultLatencyWindow, MaxStaleness: 2 * time.Second},
			master: node("m:1", 8*ms), replicas: []nodeInput{node("a:1", 9*ms), lagging},
			incumbents: []string{"b:1"}, elected: []string{"a:1"}, excluded: map[string]Exclusion{"b:1": ExcludedStale},
		},
		{
			name: "no window: a single winner", cfg: &Config{LatencyWindow: -1},
			master: node("m:1", 6*ms), replicas: []nodeInput{node("b:1", 6500*time.Microsecond), node("a:1", 6*ms)},
			elected: []string{"a:1"},
		},
		{
			name:   "every replica slow: master for Nearest and ReplicaPreferred, nearest reachable for Replica",
			master: node("m:1", 5*ms), replicas: []nodeInput{node("a:1", 40*ms), node("b:1", 300*ms)},
			elected: nil, nearestMaster: true, fallback: []string{"a:1"},
			excluded: map[string]Exclusion{"a:1": ExcludedSlow, "b:1": ExcludedSlow},
		},
		{
			name:   "master nearer than every replica by more than the window",
			master: node("m:1", 2*ms), replicas: []nodeInput{node("a:1", 4500*time.Microsecond)},
			elected: []string{"a:1"}, nearestMaster: true,
		},
		{
			name:   "master nearer but within the window: replicas take Nearest reads",
			master: node("m:1", 5*ms), replicas: []nodeInput{node("a:1", 6*ms)},
			elected: []string{"a:1"},
		},
		{
			name:   "sub-millisecond RTTs: the factor is strict",
			master: node("m:1", 500*time.Microsecond), replicas: []nodeInput{node("a:1", 2400*time.Microsecond)},
			nearestMaster: true, fallback: []string{"a:1"}, excluded: map[string]Exclusion{"a:1": ExcludedSlow},
		},
		{
			name:   "sub-millisecond RTTs, within the factor",
			master: node("m:1", 500*time.Microsecond), replicas: []nodeInput{node("a:1", 1400*time.Microsecond)},
			elected: []string{"a:1"}, nearestMaster: false,
		},
		{
			name:   "loopback: 50 µs against 400 µs is slow without a margin",
			master: node("m:1", 50*time.Microsecond), replicas: []nodeInput{node("a:1", 400*time.Microsecond)},
			nearestMaster: true, fallback: []string{"a:1"}, excluded: map[string]Exclusion{"a:1": ExcludedSlow},
		},
		{
			name: "loopback with a margin: noise is not slowness", cfg: &Config{LatencyWindow: DefaultLatencyWindow, ExclusionMargin: ms},
			master: node("m:1", 50*time.Microsecond), replicas: []nodeInput{node("a:1", 400*time.Microsecond)},
			elected: []string{"a:1"},
		},
		{
			name: "a margin does not hide real distance", cfg: &Config{LatencyWindow: DefaultLatencyWindow, ExclusionMargin: ms},
			master: node("m:1", 500*time.Microsecond), replicas: []nodeInput{node("a:1", 2400*time.Microsecond)},
			nearestMaster: true, fallback: []string{"a:1"}, excluded: map[string]Exclusion{"a:1": ExcludedSlow},
		},
		{
			name: "exclusion off", cfg: &Config{LatencyWindow: DefaultLatencyWindow, ExclusionFactor: math.Inf(1)},
			master: node("m:1", 5*ms), replicas: []nodeInput{node("a:1", 300*ms)},
			elected: []string{"a:1"}, nearestMaster: true,
		},
		{
			name:   "before the first probe: master, and none for Replica",
			master: nodeInput{addr: "m:1"}, replicas: []nodeInput{{addr: "a:1"}, {addr: "b:1"}},
			nearestMaster: true, fallback: nil,
			excluded: map[string]Exclusion{"a:1": ExcludedUnprobed, "b:1": ExcludedUnprobed},
		},
		{
			name:   "unreachable replica",
			master: node("m:1", 5*ms), replicas: []nodeInput{node("a:1", 6*ms), unreachable},
			elected: []string{"a:1"}, excluded: map[string]Exclusion{"b:1": ExcludedUnreachable},
		},
		{
			name:   "every replica unreachable: none for Replica",
			master: node("m:1", 5*ms), replicas: []nodeInput{unreachable},
			nearestMaster: true, fallback: nil, excluded: map[string]Exclusion{"b:1": ExcludedUnreachable},
		},
		{
			name:   "unprobed newcomer is not elected yet",
			master: node("m:1", 5*ms), replicas: []nodeInput{node("a:1", 6*ms), unprobed},
			elected: []string{"a:1"}, excluded: map[string]Exclusion{"b:1": ExcludedUnprobed},
		},
		{
			name:   "link down",
			master: node("m:1", 8*ms), replicas: []nodeInput{node("a:1", 9*ms), linkDown},
			elected: []string{"a:1"}, excluded: map[string]Exclusion{"b:1": ExcludedLinkDown},
		},
		{
			name: "lagging beyond MaxStaleness", cfg: &Config{LatencyWindow: DefaultLatencyWindow, MaxStaleness: 2 * time.Second},
			master: node("m:1", 8*ms), replicas: []nodeInput{node("a:1", 9*ms), lagging},
			elected: []string{"a:1"}, excluded: map[string]Exclusion{"b:1": ExcludedStale},
		},
		{
			name:   "lag without a bound does not exclude",
			master: node("m:1", 8*ms), replicas: []nodeInput{node("a:1", 9*ms), lagging},
			elected: []string{"b:1"},
		},
		{
			name: "lag unknown under MaxStaleness: none for Replica", cfg: &Config{LatencyWindow: DefaultLatencyWindow, MaxStaleness: 2 * time.Second},
			master: node("m:1", 5*ms), replicas: []nodeInput{detached},
			nearestMaster: true, fallback: nil, excluded: map[string]Exclusion{"b:1": ExcludedStale},
		},
		{
			name: "every replica lagging beyond MaxStaleness: none for Replica", cfg: &Config{LatencyWindow: DefaultLatencyWindow, MaxStaleness: 2 * time.Second},
			master: node("m:1", 8*ms), replicas: []nodeInput{lagging},
			nearestMaster: true, fallback: nil, excluded: map[string]Exclusion{"b:1": ExcludedStale},
		},
		{
			name:   "every replica link-down: none for Replica",
			master: node("m:1", 8*ms), replicas: []nodeInput{linkDown},
			nearestMaster: true, fallback: nil, excluded: map[string]Exclusion{"b:1": ExcludedLinkDown},
		},
		{
			name:   "stale, link-down, unreachable and unprobed are never Replica's fallback, a slow one is",
			cfg:    &Config{LatencyWindow: DefaultLatencyWindow, MaxStaleness: 2 * time.Second},
			master: node("m:1", 1*ms),
			replicas: []nodeInput{
				node("a:1", 40*ms),
				{addr: "b:1", samples: 3, rtt: 2 * ms, healthy: true, linkKnown: true, linkUp: true, lag: lagEstimate{known: true, seconds: 3 * time.Second}},
				{addr: "c:1", samples: 3, rtt: 2 * ms, healthy: true, linkKnown: true, linkUp: false, lag: lagEstimate{known: true}},
				{addr: "d:1", healthy: false, err: errors.New("i/o timeout")},
				{addr: "e:1"},
			},
			nearestMaster: true, fallback: []string{"a:1"},
			excluded: map[string]Exclusion{"a:1": ExcludedSlow, "b:1": ExcludedStale, "c:1": ExcludedLinkDown, "d:1": ExcludedUnreachable, "e:1": ExcludedUnprobed},
		},
		{
			name:   "Replica's slow fallback shares the window",
			master: node("m:1", 5*ms), replicas: []nodeInput{node("c:1", 300*ms), node("b:1", 41*ms), node("a:1", 40*ms)},
			nearestMaster: true, fallback: []string{"a:1", "b:1"},
		},
		{
			name: "Replica's slow fallback with no window: the nearest alone", cfg: &Config{LatencyWindow: -1},
			master: node("m:1", 5*ms), replicas: []nodeInput{node("c:1", 300*ms), node("b:1", 41*ms), node("a:1", 40*ms)},
			nearestMaster: true, fallback: []string{"a:1"},
		},
		{
			name:   "master unreachable: no exclusion by factor, replicas serve Nearest",
			master: nodeInput{addr: "m:1", err: errors.New("refused"), lastIO: -1}, replicas: []nodeInput{node("a:1", 40*ms)},
			elected: []string{"a:1"},
		},
		{
			name:   "no master known",
			master: nodeInput{}, replicas: []nodeInput{node("a:1", 40*ms)},
			elected: []string{"a:1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Config{}
			if tc.cfg != nil {
				cfg = *tc.cfg
			}
			res := elect(defaults(t, cfg), tc.master, tc.replicas, tc.incumbents)
			if !slices.Equal(res.elected, tc.elected) {
				t.Errorf("elected %v, want %v", res.elected, tc.elected)
			}
			if res.nearestMaster != tc.nearestMaster {
				t.Errorf("nearestMaster %v, want %v", res.nearestMaster, tc.nearestMaster)
			}
			if !slices.Equal(res.fallback, tc.fallback) {
				t.Errorf("fallback %v, want %v", res.fallback, tc.fallback)
			}
			for _, st := range res.table {
				if want, ok := tc.excluded[st.Addr]; ok && st.Excluded != want {
					t.Errorf("%s excluded %q (%s), want %q", st.Addr, st.Excluded, st.Why, want)
				}
				if st.Why == "" && (st.Role == RoleReplica || st.Nearest) {
					t.Errorf("%s has no explanation", st.Addr)
				}
			}
			if t.Failed() {
				for _, st := range res.table {
					t.Logf("%+v", st)
				}
			}
		})
	}
}

// Properties of the election for arbitrary RTTs, health and lags.
func FuzzElect(f *testing.F) {
	f.Add(uint16(6000), []byte{6, 1, 0, 42, 1, 0}, uint8(2), uint8(30), uint8(0), uint8(0))
	f.Add(uint16(0), []byte{6, 0, 0, 6, 1, 9}, uint8(0), uint8(10), uint8(3), uint8(10))
	f.Add(uint16(50), []byte{2, 1, 0, 1, 1, 0}, uint8(0), uint8(20), uint8(0), uint8(0))
	f.Fuzz(func(t *testing.T, masterMicros uint16, raw []byte, windowMs, factorTenths, staleSec, marginTenthsMs uint8) {
		cfg := defaults(t, Config{LatencyWindow: time.Duration(windowMs) * ms, ExclusionFactor: 1 + float64(factorTenths)/10,
			ExclusionMargin: time.Duration(marginTenthsMs) * ms / 10,
			MaxStaleness:    time.Duration(staleSec) * time.Second, ProbeInterval: 100 * ms})
		master := node("m:1", time.Duration(masterMicros)*time.Microsecond*10)
		if masterMicros == 0 {
			master = nodeInput{addr: "m:1", err: errors.New("down")}
		}
		var replicas []nodeInput
		for i := 0; i+2 < len(raw) && len(replicas) < 8; i += 3 {
			r := node(string(rune('a'+len(replicas)))+":1", time.Duration(raw[i])*ms)
			switch raw[i+1] % 4 {
			case 0:
				r = nodeInput{addr: r.addr, err: errors.New("timeout")}
			case 2:
				r.linkUp = false
			}
			r.lag = lagEstimate{known: raw[i+2] != 255, seconds: time.Duration(raw[i+2]) * 100 * ms}
			replicas = append(replicas, r)
		}
		var incumbents []string
		for i, r := range replicas {
			if raw[3*i+1]%2 == 1 {
				incumbents = append(incumbents, r.addr)
			}
		}
		res := elect(cfg, master, replicas, incumbents)
		masterOK := master.healthy
		eligible := map[string]nodeInput{}
		for _, st := range res.table {
			if st.Role == RoleReplica && st.Excluded == NotExcluded {
				for _, r := range replicas {
					if r.addr == st.Addr {
						eligible[r.addr] = r
					}
				}
			}
		}
		if len(res.table) != len(replicas)+1 {
			t.Fatalf("table has %d rows for %d nodes", len(res.table), len(replicas)+1)
		}
		if (len(eligible) > 0) != (len(res.elected) > 0) {
			t.Fatalf("eligible %v but elected %v", eligible, res.elected)
		}
		best := time.Duration(math.MaxInt64)
		for _, r := range eligible {
			best = min(best, r.rtt)
		}
		for addr, r := range eligible {
			in := slices.Contains(res.elected, addr)
			limit := cfg.LatencyWindow
			if slices.Contains(incumbents, addr) {
				limit = limit * 3 / 2
			}
			if in != (r.rtt-best <= limit) {
				t.Fatalf("%s (rtt %v, best %v, limit %v) elected=%v", addr, r.rtt, best, limit, in)
			}
			if !r.healthy || r.samples == 0 || !r.linkUp {
				t.Fatalf("unhealthy or link-down %s is eligible", addr)
			}
			if masterOK && slow(r.rtt, master.rtt, cfg.ExclusionFactor, cfg.ExclusionMargin) {
				t.Fatalf("slow %s (%v vs master %v) is eligible", addr, r.rtt, master.rtt)
			}
			if cfg.MaxStaleness > 0 && (!r.lag.known || r.lag.seconds > cfg.MaxStaleness) {
				t.Fatalf("stale %s (%+v) is eligible", addr, r.lag)
			}
		}
		for _, addr := range res.elected {
			if _, ok := eligible[addr]; !ok {
				t.Fatalf("excluded %s elected", addr)
			}
		}
		wantNearestMaster := len(res.elected) == 0 || (masterOK && master.rtt+cfg.LatencyWindow < best)
		if res.nearestMaster != wantNearestMaster {
			t.Fatalf("nearestMaster %v, want %v", res.nearestMaster, wantNearestMaster)
		}
		// Replica's fallback: only when nothing is elected, and only
		// replicas excluded for slowness (never unreachable, unprobed,
		// link-down or stale ones), the nearest of them when there is one.
		if len(res.elected) > 0 && res.fallback != nil {
			t.Fatal("fallback set while replicas are elected")
		}
		anySlow := false
		for _, st := range res.table {
			in := slices.Contains(res.fallback, st.Addr)
			if in && st.Excluded != ExcludedSlow {
				t.Fatalf("%s (excluded %q: %s) is Replica's fallback", st.Addr, st.Excluded, st.Why)
			}
			anySlow = anySlow || st.Excluded == ExcludedSlow
		}
		if len(res.elected) == 0 && anySlow && len(res.fallback) == 0 {
			t.Fatal("no fallback for ReadFrom Replica though a replica is excluded only as slow")
		}
	})
}

func TestConfigDefaultsAndErrors(t *testing.T) {
	// The zero Config is the Sentinel client's default selector's: every
	// default, a 2 ms window included.
	c, err := Config{}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if c.ProbeInterval != DefaultProbeInterval || c.ProbeTimeout != DefaultProbeTimeout || c.ExclusionFactor != DefaultExclusionFactor ||
		c.LatencyWindow != DefaultLatencyWindow || c.EWMAAlpha != DefaultEWMAAlpha || c.MaxStaleness != 0 || c.ExclusionMargin != 0 {
		t.Fatalf("defaults: %+v", c)
	}
	// Setting one field keeps the others' defaults, the window included
	// (before, a Config with only MaxStaleness elected a single winner).
	if s, err := (Config{MaxStaleness: 5 * time.Second}).withDefaults(); err != nil || s.LatencyWindow != DefaultLatencyWindow {
		t.Fatalf("Config{MaxStaleness: 5s}: %+v, %v; want the default window", s, err)
	}
	// A negative window is no window, and stays so when the defaults are
	// filled in again.
	for _, w := range []time.Duration{-1, -5 * ms} {
		n, err := Config{LatencyWindow: w}.withDefaults()
		if err != nil || n.LatencyWindow >= 0 {
			t.Fatalf("LatencyWindow %v: %+v, %v; want no window", w, n, err)
		}
		if again, err := n.withDefaults(); err != nil || again.LatencyWindow != n.LatencyWindow {
			t.Fatalf("defaults twice: %+v, %v", again, err)
		}
	}
	bad := []struct {
		cfg   Config
		field string
		want  string // the whole message
	}{
		{Config{ProbeInterval: 10 * ms}, "ProbeInterval", "replica: Config.ProbeInterval must be at least 100ms (got 10ms)"},
		{Config{ProbeTimeout: -1}, "ProbeTimeout", "replica: Config.ProbeTimeout must not be negative (got -1ns)"},
		{Config{ExclusionFactor: 0.5}, "ExclusionFactor", "replica: Config.ExclusionFactor must be at least 1 (math.Inf(1) turns the rule off) (got 0.5)"},
		{Config{ExclusionFactor: math.NaN()}, "ExclusionFactor", "replica: Config.ExclusionFactor must be at least 1 (math.Inf(1) turns the rule off) (got NaN)"},
		{Config{ExclusionMargin: -ms}, "ExclusionMargin", "replica: Config.ExclusionMargin must not be negative (0 sets no floor) (got -1ms)"},
		{Config{MaxStaleness: -1}, "MaxStaleness", "replica: Config.MaxStaleness must not be negative (0 sets no bound) (got -1ns)"},
		{Config{MaxStaleness: time.Second}, "MaxStaleness", // below the 2 s interval
			"replica: Config.MaxStaleness must be at least ProbeInterval (2s): the lag is only known to about one interval (got 1s)"},
		{Config{EWMAAlpha: 1.5}, "EWMAAlpha", "replica: Config.EWMAAlpha must be in (0, 1] (got 1.5)"},
		{Config{EWMAAlpha: -0.1}, "EWMAAlpha", "replica: Config.EWMAAlpha must be in (0, 1] (got -0.1)"},
	}
	for _, b := range bad {
		_, err := b.cfg.withDefaults()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Package != "replica" || ce.Struct != "Config" || ce.Field != b.field {
			t.Errorf("%+v: got %v, want a ConfigError on %s", b.cfg, err, b.field)
			continue
		}
		if err.Error() != b.want {
			t.Errorf("%+v: message %q, want %q", b.cfg, err, b.want)
		}
	}
}
