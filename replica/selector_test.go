package replica

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rediskit/rediskit/redisurl"
)

// envRecorder is an Env whose Evict calls are recorded. Its node addresses
// refuse connections, so a prober that starts fails fast.
type envRecorder struct {
	mu      sync.Mutex
	evicted []string
}

func (r *envRecorder) env(master string, sentinels ...string) Env {
	return Env{MasterName: master, Sentinels: sentinels, Evict: func(addr string) {
		r.mu.Lock()
		r.evicted = append(r.evicted, addr)
		r.mu.Unlock()
	}}
}

func (r *envRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.evicted
	r.evicted = nil
	return out
}

func newTestSelector(t *testing.T, cfg Config) *Selector {
	t.Helper()
	s, err := NewSelector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// meas builds a round's measurements: nodes with RTTs (0: unreachable).
func meas(round uint64, master string, rtts map[string]time.Duration) *measurements {
	m := &measurements{round: round, nodes: map[string]nodeInput{}, lags: map[[2]string]lagEstimate{}}
	for addr, rtt := range rtts {
		n := node(addr, rtt)
		if rtt == 0 {
			n = nodeInput{addr: addr, err: errors.New("i/o timeout"), lastIO: -1}
		}
		m.nodes[addr] = n
		if addr != master {
			m.lags[[2]string{master, addr}] = lagEstimate{known: true}
		}
	}
	return m
}

func TestNewSelectorRejectsABadConfig(t *testing.T) {
	var ce *ConfigError
	if _, err := NewSelector(Config{EWMAAlpha: 2}); !errors.As(err, &ce) || ce.Field != "EWMAAlpha" {
		t.Fatalf("got %v, want a ConfigError on EWMAAlpha", err)
	}
}

func TestPickBeforeTheFirstRound(t *testing.T) {
	s := newTestSelector(t, Config{LatencyWindow: -1})
	for _, pref := range []redisurl.ReadFrom{redisurl.Nearest, redisurl.ReplicaPreferred, redisurl.Replica, redisurl.Master} {
		if addr, done := s.Pick(pref); addr != "" || done != nil {
			t.Fatalf("unbound, no topology, %s: %q", pref, addr)
		}
	}
	s.UpdateTopology(Topology{Master: "m:1", Replicas: []string{"a:1", "b:1"}})
	for _, pref := range []redisurl.ReadFrom{redisurl.Nearest, redisurl.ReplicaPreferred, redisurl.Master} {
		if addr, _ := s.Pick(pref); addr != "" {
			t.Fatalf("before the first round, %s read from %q, want the master", pref, addr)
		}
	}
	// Replica: no replica has been vetted yet (its link, lag and RTT are
	// unknown), so none is handed out; the Sentinel client waits for the
	// round. Table says why.
	if addr, done := s.Pick(redisurl.Replica); addr != "" || done != nil {
		t.Fatalf("ReadFrom Replica before the first round: %q, want none", addr)
	}
	for _, st := range s.Table()[1:] {
		if st.Excluded != ExcludedUnprobed || st.Why == "" {
			t.Fatalf("before the first round: %+v", st)
		}
	}
}

func TestElectionEventsAndEviction(t *testing.T) {
	rec := &envRecorder{}
	var events []Event
	cfg := Config{} // the "window" step needs the 2 ms window
	cfg.Observer = func(ev Event) { events = append(events, ev) }
	s := newTestSelector(t, cfg)
	s.Bind(rec.env("evict-test", "127.0.0.1:1"))
	s.UpdateTopology(Topology{Master: "m:1", Replicas: []string{"a:1", "b:1"}})

	steps := []struct {
		name          string
		rtts          map[string]time.Duration
		topology      *Topology
		elected       []string
		nearestMaster bool
		reason        Reason // "" = no event
		evicted       []string
	}{
		{
			name: "first round", rtts: map[string]time.Duration{"m:1": 6 * ms, "a:1": 6 * ms, "b:1": 42 * ms},
			elected: []string{"a:1"}, reason: ReasonFirstRound,
		},
		{name: "steady", rtts: map[string]time.Duration{"m:1": 6 * ms, "a:1": 6500 * time.Microsecond, "b:1": 42 * ms}, elected: []string{"a:1"}},
		{
			name: "swap", rtts: map[string]time.Duration{"m:1": 6 * ms, "a:1": 42 * ms, "b:1": 6 * ms},
			elected: []string{"b:1"}, reason: ReasonSlow, evicted: []string{"a:1"},
		},
		{
			name: "window", rtts: map[string]time.Duration{"m:1": 6 * ms, "a:1": 7 * ms, "b:1": 6 * ms},
			elected: []string{"a:1", "b:1"}, reason: ReasonRecovered,
		},
		{
			name: "out of 1.5 × the window", rtts: map[string]time.Duration{"m:1": 6 * ms, "a:1": 11 * ms, "b:1": 6 * ms},
			elected: []string{"b:1"}, reason: ReasonRTT, evicted: []string{"a:1"},
		},
		{
			name: "elected unreachable, other slow", rtts: map[string]time.Duration{"m:1": 6 * ms, "a:1": 100 * ms, "b:1": 0},
			elected: nil, nearestMaster: true, reason: ReasonUnreachable, evicted: []string{"b:1"}, // a is Replica's fallback
		},
		{
			// The election is unchanged (no event), but Replica's
			// fallback lost a: its connections are closed.
			name: "the slow fallback unreachable too", rtts: map[string]time.Duration{"m:1": 6 * ms, "a:1": 0, "b:1": 0},
			elected: nil, nearestMaster: true, evicted: []string{"a:1"},
		},
		{
			name: "recovered", rtts: map[string]time.Duration{"m:1": 6 * ms, "a:1": 100 * ms, "b:1": 7 * ms},
			elected: []string{"b:1"}, reason: ReasonRecovered,
		},
		{
			name: "replica leaves the topology", topology: &Topology{Master: "m:1", Replicas: []string{"a:1"}},
			elected: nil, nearestMaster: true, reason: ReasonTopology,
		},
	}
	for i, st := range steps {
		if st.topology != nil {
			s.UpdateTopology(*st.topology)
		} else {
			s.onMeasurements(meas(uint64(i+1), "m:1", st.rtts))
		}
		settle(t, s) // events and evictions come from the notifier goroutine
		e := s.cur.Load()
		if !slices.Equal(e.electedAddrs, st.elected) || e.nearestMaster != st.nearestMaster {
			t.Fatalf("%s: elected %v nearestMaster %v, want %v %v; table %+v", st.name, e.electedAddrs, e.nearestMaster, st.elected, st.nearestMaster, s.Table())
		}
		switch {
		case st.reason == "" && len(events) > 0:
			t.Fatalf("%s: unexpected event %v", st.name, events)
		case st.reason != "" && (len(events) != 1 || events[0].Reason != st.reason):
			t.Fatalf("%s: events %v, want one with reason %s", st.name, events, st.reason)
		}
		if len(events) == 1 && (events[0].MasterName != "evict-test" || events[0].Detail == "") {
			t.Fatalf("%s: event %+v", st.name, events[0])
		}
		events = nil
		if got := rec.take(); !slices.Equal(got, st.evicted) && !(len(got) == 0 && len(st.evicted) == 0) {
			t.Fatalf("%s: evicted %v, want %v", st.name, got, st.evicted)
		}
	}
	if s.Rounds() != 8 {
		t.Fatalf("rounds %d, want 8", s.Rounds())
	}
	_ = s.Close()
	s.onMeasurements(meas(10, "m:1", map[string]time.Duration{"m:1": 6 * ms, "a:1": 6 * ms}))
	if len(events) != 0 {
		t.Fatal("Observer called after Close")
	}
}

// Two Selectors of one deployment (sentinels in another order) share one
// prober; it leaves the registry when the last one closes.
func TestRegistrySharesOneProberPerDeployment(t *testing.T) {
	rec := &envRecorder{}
	a, b, c := newTestSelector(t, Config{LatencyWindow: -1}), newTestSelector(t, Config{LatencyWindow: -1}), newTestSelector(t, Config{LatencyWindow: -1})
	a.Bind(rec.env("shared", "127.0.0.1:1", "127.0.0.1:2"))
	b.Bind(rec.env("shared", "127.0.0.1:2", "127.0.0.1:1", "127.0.0.1:1"))
	c.Bind(rec.env("other", "127.0.0.1:1", "127.0.0.1:2"))
	if a.prober.Load() != b.prober.Load() || a.prober.Load() == c.prober.Load() {
		t.Fatal("the probers are not shared per deployment")
	}
	key := deploymentKey(a.env)
	_ = a.Close()
	registry.Lock()
	_, still := registry.probers[key]
	registry.Unlock()
	if !still {
		t.Fatal("the prober left with a Selector still bound")
	}
	_ = b.Close()
	_ = c.Close()
	registry.Lock()
	n := len(registry.probers)
	registry.Unlock()
	if n != 0 {
		t.Fatalf("%d probers left in the registry", n)
	}
}

func TestStartWaitRoundAndClose(t *testing.T) {
	s := newTestSelector(t, Config{LatencyWindow: -1, ProbeInterval: 100 * ms, ProbeTimeout: 100 * ms})
	if err := s.Start(); !errors.Is(err, ErrNotBound) {
		t.Fatalf("Start unbound: %v", err)
	}
	s.Bind((&envRecorder{}).env("wait-test", "127.0.0.1:1"))
	s.UpdateTopology(Topology{Master: "127.0.0.1:1", Replicas: []string{"127.0.0.1:2"}})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.WaitRound(ctx, 2); err != nil {
		t.Fatal(err)
	}
	for _, st := range s.Table() {
		if st.Healthy || st.Err == nil || (st.Role == RoleReplica && st.Excluded != ExcludedUnreachable) {
			t.Fatalf("a refused node is in the table as %+v", st)
		}
	}
	done := make(chan error, 1)
	go func() { done <- s.WaitRound(context.Background(), 1000) }()
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("WaitRound after Close: %v", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %v", d)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Start(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Start after Close: %v", err)
	}
}

// electedSelector is a Selector whose election has the given replicas
// elected, without a prober.
func electedSelector(t testing.TB, replicas ...string) *Selector {
	s, err := NewSelector(Config{LatencyWindow: -1})
	if err != nil {
		t.Fatal(err)
	}
	s.UpdateTopology(Topology{Master: "m:1", Replicas: replicas})
	rtts := map[string]time.Duration{"m:1": 6 * ms}
	for _, r := range replicas {
		rtts[r] = 6 * ms
	}
	s.onMeasurements(meas(1, "m:1", rtts))
	if got := s.cur.Load().electedAddrs; len(got) != len(replicas) {
		t.Fatalf("elected %v", got)
	}
	return s
}

func TestPickDoesNotAllocate(t *testing.T) {
	for _, replicas := range [][]string{{"a:1"}, {"a:1", "b:1"}, {"a:1", "b:1", "c:1"}} {
		s := electedSelector(t, replicas...)
		for _, pref := range []redisurl.ReadFrom{redisurl.Nearest, redisurl.ReplicaPreferred, redisurl.Replica} {
			allocs := testing.AllocsPerRun(1000, func() {
				addr, done := s.Pick(pref)
				if addr == "" {
					t.Fatal("no replica")
				}
				if done != nil {
					done()
				}
			})
			if allocs != 0 {
				t.Fatalf("%d replicas, %s: %v allocations per Pick", len(replicas), pref, allocs)
			}
		}
		_ = s.Close()
	}
}

// Power of two choices on in-flight reads: equal replicas get equal
// shares, and a replica whose reads take longer gets fewer.
func TestPickBalancesByInFlight(t *testing.T) {
	s := electedSelector(t, "a:1", "b:1", "c:1")
	defer s.Close()
	// Sequential reads: every pick sees equal counts.
	count := map[string]int{}
	for range 30000 {
		addr, done := s.Pick(redisurl.ReplicaPreferred)
		count[addr]++
		done()
	}
	for addr, n := range count {
		if n < 9000 || n > 11000 {
			t.Fatalf("sequential picks: %v (%s got %d of 30000)", count, addr, n)
		}
	}
	// Reads held open: a replica whose reads are not finished is avoided.
	a, doneA := s.Pick(redisurl.ReplicaPreferred)
	var held []func()
	for range 20 {
		addr, done := s.Pick(redisurl.ReplicaPreferred)
		if addr == a && len(held) == 0 {
			t.Fatalf("picked %s again while it had the only read in flight", a)
		}
		held = append(held, done)
	}
	doneA()
	for _, d := range held {
		d()
	}
	for _, sl := range s.cur.Load().elected {
		if n := sl.inflight.Load(); n != 0 {
			t.Fatalf("%s has %d reads in flight after every done", sl.addr, n)
		}
	}
}
