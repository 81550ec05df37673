package hashring

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ring builds a snapshot of the given nodes (host "n<i>", pid 1) with the
// given replica counts, all alive.
func testSnapshot(t testing.TB, rng *rand.Rand, replicas ...int) *Snapshot {
	t.Helper()
	now := time.Now()
	var es []entry
	for i, n := range replicas {
		for j := range n {
			m := Member{Start: rng.Uint32(), Hostname: "n" + strconv.Itoa(i), PID: "1", ID: fmt.Sprintf("%08x", j)}
			es = append(es, entry{member: m.String(), score: timeScore(now)})
		}
	}
	return buildSnapshot("k", XXHash, now, timeScore(now.Add(-time.Minute)), es, func(m string, err error) {
		t.Fatalf("malformed %q: %v", m, err)
	})
}

// bruteOwner is the ownership rule written the slow way.
func bruteOwner(s *Snapshot, p uint32) string {
	best, top := -1, -1
	for i, r := range s.replicas {
		if r.Start <= p && (best < 0 || r.Start >= s.replicas[best].Start) {
			best = i // equal starts: the later (greater member) wins
		}
		if top < 0 || r.Start >= s.replicas[top].Start {
			top = i
		}
	}
	if best < 0 {
		best = top
	}
	return s.replicas[best].NodeID()
}

func TestOwnerMatchesRule(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shape := range [][]int{{1}, {1, 1}, {1, 1, 2}, {16, 16, 16}, {3, 40, 1, 7}} {
		s := testSnapshot(t, rng, shape...)
		points := []uint32{0, 1, RingSize - 1}
		for _, r := range s.replicas {
			points = append(points, r.Start, r.Start-1, r.Start+1)
		}
		for range 2000 {
			points = append(points, rng.Uint32())
		}
		for _, p := range points {
			got, ok := s.OwnerOfPoint(p)
			if want := bruteOwner(s, p); !ok || got != want {
				t.Fatalf("shape %v point %d: owner %q, want %q", shape, p, got, want)
			}
		}
	}
}

func TestRangesPartitionTheRing(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, shape := range [][]int{{1}, {1, 1}, {1, 1, 2}, {16, 16, 16}, {5}} {
		s := testSnapshot(t, rng, shape...)
		var all []Range
		var total uint64
		for _, n := range s.Nodes() {
			rs := s.RangesOf(n.ID)
			var pts uint64
			for _, r := range rs {
				if r.Len() == 0 || r.End > RingSize {
					t.Fatalf("bad range %+v", r)
				}
				pts += r.Len()
				// Every point of the node's ranges belongs to it.
				for _, p := range []uint64{r.Start, r.End - 1, (r.Start + r.End) / 2} {
					if o, _ := s.OwnerOfPoint(uint32(p)); o != n.ID {
						t.Fatalf("point %d of %s's range %+v is owned by %s", p, n.ID, r, o)
					}
				}
			}
			if pts != n.Points {
				t.Errorf("%s: ranges cover %d points, NodeInfo says %d", n.ID, pts, n.Points)
			}
			all = append(all, rs...)
			total += pts
		}
		if total != RingSize {
			t.Errorf("shape %v: ranges cover %d points, want 2^32", shape, total)
		}
		slices.SortFunc(all, func(a, b Range) int { return int(int64(a.Start) - int64(b.Start)) })
		for i := 1; i < len(all); i++ {
			if all[i].Start != all[i-1].End {
				t.Fatalf("shape %v: ranges %+v and %+v leave a gap or overlap", shape, all[i-1], all[i])
			}
		}
	}
}

// Our ranges are Python's update() ranges, for rings with distinct starts.
func TestRangesMatchPythonUpdate(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, shape := range [][]int{{1}, {1, 1}, {1, 1, 2}, {16, 16, 16}, {2, 9}} {
		s := testSnapshot(t, rng, shape...)
		var members []string
		for _, r := range s.replicas {
			members = append(members, r.String())
		}
		rng.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
		for _, n := range s.Nodes() {
			own := map[string]bool{}
			for _, r := range s.replicas {
				if r.NodeID() == n.ID {
					own[r.Hostname+":"+r.PID+":"+r.ID] = true
				}
			}
			want, count, err := pyRanges(members, own)
			if err != nil {
				t.Fatal(err)
			}
			if got := s.RangesOf(n.ID); !slices.Equal(got, want) {
				t.Errorf("shape %v %s: ranges %v, Python %v", shape, n.ID, got, want)
			}
			if count != s.NodeCount() {
				t.Errorf("node count %d, Python %d", s.NodeCount(), count)
			}
		}
	}
}

func TestEqualStartsLastMemberWins(t *testing.T) {
	now := time.Now()
	es := []entry{
		{"100:b:1:00000001", timeScore(now)},
		{"100:a:1:00000002", timeScore(now)},
		{"200:c:1:00000003", timeScore(now)},
	}
	s := buildSnapshot("k", XXHash, now, timeScore(now.Add(-time.Minute)), es, nil)
	if o, _ := s.OwnerOfPoint(150); o != "b:1" {
		t.Errorf("owner of 150 = %s, want b:1 (member \"100:b…\" sorts after \"100:a…\")", o)
	}
	if rs := s.RangesOf("a:1"); len(rs) != 0 {
		t.Errorf("a:1 owns %v, want nothing", rs)
	}
	if o, _ := s.OwnerOfPoint(50); o != "c:1" {
		t.Errorf("owner of 50 = %s, want c:1 (wrap)", o)
	}
}

func TestExpiredAndMalformedEntries(t *testing.T) {
	now := time.Now()
	var bad []string
	es := []entry{
		{"100:a:1:00000001", timeScore(now)},
		{"300:b:1:00000002", timeScore(now.Add(-2 * time.Minute))},
		{"nonsense", timeScore(now)},
	}
	s := buildSnapshot("k", XXHash, now, timeScore(now.Add(-time.Minute)), es, func(m string, _ error) { bad = append(bad, m) })
	if s.NodeCount() != 1 || len(s.expired) != 1 || !slices.Equal(bad, []string{"nonsense"}) {
		t.Fatalf("nodes %d expired %v bad %v", s.NodeCount(), s.expired, bad)
	}
	if rs := s.RangesOf("a:1"); !slices.Equal(rs, []Range{{0, RingSize}}) {
		t.Errorf("lone replica ranges %v", rs)
	}
	empty := buildSnapshot("k", XXHash, now, timeScore(now), nil, nil)
	if _, ok := empty.Owner("x"); ok || empty.NodeCount() != 0 {
		t.Error("empty ring has an owner")
	}
}

func TestScoreTime(t *testing.T) {
	now := time.Now()
	back := scoreTime(timeScore(now))
	if d := back.Sub(now); d < -time.Microsecond || d > time.Microsecond {
		t.Errorf("score round trip off by %v", d)
	}
}

func TestBackoff(t *testing.T) {
	for attempt, limit := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 3: 4 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 30: 10 * time.Second} {
		var top time.Duration
		for range 500 {
			d := backoff(attempt, time.Second, 10*time.Second)
			if d < 0 || d > limit {
				t.Fatalf("attempt %d: wait %v outside [0, %v]", attempt, d, limit)
			}
			top = max(top, d)
		}
		if top < limit/2 {
			t.Errorf("attempt %d: longest of 500 waits %v, want near %v", attempt, top, limit)
		}
	}
}

func TestConfigChecks(t *testing.T) {
	for _, tc := range []struct {
		cfg   Config
		field string
		kind  error
		want  string // in the message
	}{
		{Config{Hostname: "h", OwnershipDeadline: time.Minute, Expiry: time.Minute}, "OwnershipDeadline", ErrInvalidConfig,
			"hashring: Config.OwnershipDeadline (1m0s) must be shorter than Expiry (1m0s)"},
		{Config{Hostname: "h", HeartbeatInterval: time.Minute}, "HeartbeatInterval", ErrInvalidConfig, "must be shorter than OwnershipDeadline (50s)"},
		{Config{Hostname: "h", Replicas: -1}, "Replicas", ErrInvalidConfig, "hashring: Config.Replicas must not be negative (got -1"},
		{Config{Hostname: "h", RetryWait: time.Second, MaxRetryWait: time.Millisecond}, "MaxRetryWait", ErrInvalidConfig, "must not be shorter than RetryWait (1s)"},
		{Config{Hostname: "h", Hash: Hash(7)}, "Hash", ErrInvalidConfig, "hashring: Config.Hash 7 is unknown"},
		{Config{Hostname: "h", Expiry: -time.Second}, "Expiry", ErrInvalidConfig, "hashring: Config.Expiry must not be negative (got -1s"},
		{Config{Hostname: "h", PID: -2}, "PID", ErrInvalidConfig, "hashring: Config.PID must not be negative (got -2"},
		{Config{Hostname: "a:b"}, "Hostname", ErrInvalidHostname, `hashring: Config.Hostname "a:b" contains ':'`},
	} {
		_, err := tc.cfg.resolved(true)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Struct != "Config" || ce.Field != tc.field || !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want a ConfigError on Config.%s matching %v, with %q", tc.cfg, err, tc.field, tc.kind, tc.want)
		}
	}
	o, err := Config{}.resolved(true)
	if err != nil {
		t.Fatal(err)
	}
	if o.Replicas != 16 || o.HeartbeatInterval != 10*time.Second || o.Expiry != time.Minute ||
		o.OwnershipDeadline != 50*time.Second || o.CleanupInterval != 2*time.Minute || o.Hostname == "" || o.PID == 0 {
		t.Errorf("defaults %+v", o)
	}
}
