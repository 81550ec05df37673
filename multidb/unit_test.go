package multidb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
)

// TestBreakerTransitions drives the breaker's state machine: open (by
// traffic), halfOpen (the health loop at the grace period's end) and
// checked (applyCheck, for every health check's verdict).
func TestBreakerTransitions(t *testing.T) {
	t0 := time.Unix(1000, 0)
	grace := 10 * time.Second
	type step struct {
		op    string // "open", "half", "pass", "fail"
		at    time.Duration
		state BreakerState
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{"traffic opens a closed breaker", []step{{"open", 0, Open}}},
		{"open stays open within the grace period, whatever the checks say", []step{
			{"open", 0, Open}, {"pass", time.Second, Open}, {"fail", 2 * time.Second, Open}, {"half", 9 * time.Second, Open}}},
		{"grace over: half-open, a passing check closes", []step{
			{"open", 0, Open}, {"half", 10 * time.Second, HalfOpen}, {"pass", 11 * time.Second, Closed}}},
		{"grace over: half-open, a failing check reopens for another grace period", []step{
			{"open", 0, Open}, {"half", 10 * time.Second, HalfOpen}, {"fail", 11 * time.Second, Open},
			{"half", 20 * time.Second, Open}, {"half", 21 * time.Second, HalfOpen}}},
		{"a failing check opens a closed breaker", []step{{"fail", 0, Open}, {"half", 10 * time.Second, HalfOpen}}},
		{"a passing check leaves a closed breaker closed", []step{{"pass", 0, Closed}, {"half", time.Hour, Closed}}},
		{"opening an open breaker keeps its opening time", []step{
			{"open", 0, Open}, {"open", 5 * time.Second, Open}, {"half", 10 * time.Second, HalfOpen}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &breaker{grace: grace}
			for i, s := range tt.steps {
				now := t0.Add(s.at)
				switch s.op {
				case "open":
					b.open(now)
				case "half":
					b.halfOpen(now)
				case "pass":
					b.checked(true, now)
				case "fail":
					b.checked(false, now)
				}
				if got := b.get(); got != s.state {
					t.Fatalf("step %d (%s at %v): state %s, want %s", i, s.op, s.at, got, s.state)
				}
			}
		})
	}
}

func TestTripRule(t *testing.T) {
	tests := []struct {
		name                  string
		rule                  tripRule
		inARow, failed, calls int64
		want                  bool
	}{
		{"fast path below", tripRule{consecutive: 3, minFailures: 10, rate: 0.1}, 2, 2, 1000, false},
		{"fast path at", tripRule{consecutive: 3, minFailures: 10, rate: 0.1}, 3, 3, 1000, true},
		{"rate path: too few failures", tripRule{consecutive: 3, minFailures: 10, rate: 0.1}, 1, 9, 20, false},
		{"rate path: enough failures, rate too low", tripRule{consecutive: 3, minFailures: 10, rate: 0.1}, 1, 10, 101, false},
		{"rate path: enough failures at the rate", tripRule{consecutive: 3, minFailures: 10, rate: 0.1}, 1, 10, 100, true},
		{"fast path off", tripRule{consecutive: -1, minFailures: 10, rate: 0.1}, 50, 5, 5, false},
		{"rate path off", tripRule{consecutive: 3, minFailures: -1, rate: 0.1}, 1, 1000, 1000, false},
	}
	for _, tt := range tests {
		if why, got := tt.rule.trips(tt.inARow, tt.failed, tt.calls); got != tt.want {
			t.Errorf("%s: trips = %v (%s), want %v", tt.name, got, why, tt.want)
		}
	}
}

func TestWindowSlides(t *testing.T) {
	w := newWindow(time.Second) // ten buckets of 100 ms
	base := w.base
	at := func(ms int) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }
	for i := 0; i < 10; i++ {
		w.add(at(i*10), i%2 == 0) // 5 failures, 5 successes in the first bucket
	}
	if f, c := w.sum(at(50)); f != 5 || c != 10 {
		t.Fatalf("sum = %d/%d, want 5/10", f, c)
	}
	w.add(at(550), true)
	if f, c := w.sum(at(950)); f != 6 || c != 11 {
		t.Fatalf("sum within the window = %d/%d, want 6/11", f, c)
	}
	// 1.05 s: the first bucket (0-100 ms) has left the window.
	if f, c := w.sum(at(1050)); f != 1 || c != 1 {
		t.Fatalf("sum after the first bucket left = %d/%d, want 1/1", f, c)
	}
	// Its slot is reused for a new period and starts from zero.
	w.add(at(1010), false)
	if f, c := w.sum(at(1050)); f != 1 || c != 2 {
		t.Fatalf("sum after reuse = %d/%d, want 1/2", f, c)
	}
	w.reset()
	if f, c := w.sum(at(1050)); f != 0 || c != 0 {
		t.Fatalf("sum after reset = %d/%d, want 0/0", f, c)
	}
}

// TestDetector drives the detector with calls one after the other (each
// started after the previous one ended), so every failure is an event of
// its own; TestDetectorCoalesces has calls in flight together.
func TestDetector(t *testing.T) {
	d := detector{window: newWindow(2 * time.Second)}
	at := func(ms int) time.Time { return d.window.base.Add(time.Duration(ms) * time.Millisecond) }
	for i := 1; i <= 3; i++ {
		if f := d.failure(at(10*i), at(10*i+5), true); f.inARow != int64(i) || !f.counted || f.burst {
			t.Fatalf("failure %d: in a row %d, counted %v, burst %v", i, f.inARow, f.counted, f.burst)
		}
	}
	d.success(at(41))
	if got := d.at(d.answered.Load()); !got.Equal(at(41)) {
		t.Fatalf("the success that ended the run was seen at %v, recorded %v", at(41), got)
	}
	d.success(at(45)) // no run to end: nothing recorded
	if got := d.at(d.answered.Load()); !got.Equal(at(41)) {
		t.Fatalf("a success with no run to end moved answered to %v", got)
	}
	f := d.failure(at(50), at(51), true)
	if f.inARow != 1 || f.failed != 4 || f.calls != 6 || d.total.Load() != 4 || d.coalesced.Load() != 0 {
		t.Fatalf("after a success: in a row %d, window %d/%d, total %d, coalesced %d; want 1, 4/6, 4, 0",
			f.inARow, f.failed, f.calls, d.total.Load(), d.coalesced.Load())
	}
	d.reset(at(60))
	if f, c := d.window.sum(at(60)); d.consecutive.Load() != 0 || f != 0 || c != 0 {
		t.Fatalf("after reset: in a row %d, window %d/%d", d.consecutive.Load(), f, c)
	}
	// A call in flight when the breaker closed fails: it belongs to what
	// opened it. One started after counts.
	if f := d.failure(at(55), at(70), true); f.counted || f.burst {
		t.Fatalf("a call in flight across the reset: counted %v, burst %v; want neither", f.counted, f.burst)
	}
	// Nor is a timeout after it a burst's second sign: the check that
	// closed the breaker answered.
	if f := d.failure(at(61), at(71), true); !f.counted || f.inARow != 1 || f.confirms {
		t.Fatalf("a call started after the reset: counted %v, in a row %d, confirms %v", f.counted, f.inARow, f.confirms)
	}
}

// TestCheckDecisive runs checks whose probes fail in each way: a lost
// connection (reset, EOF, broken pipe) may be the burst a burst check
// follows, and does not make the check decisive; a timeout, a failure to
// connect or the probe's own error does.
func TestCheckDecisive(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	read := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	tests := []struct {
		err      error
		decisive bool
	}{
		{io.EOF, false},
		{read, false},
		{&net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, false},
		{context.DeadlineExceeded, true},
		{&net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, true},
		{dial, true},
		{redis.ErrClosed, true}, // not a network error: the probe's own
		{ErrReplicationLag, true},
	}
	for _, tt := range tests {
		probe := func(context.Context, redis.UniversalClient) error { return tt.err }
		r, err := check(context.Background(), nil, probe, HealthyAll, 3, time.Millisecond, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.healthy || r.decisive != tt.decisive || failure.ConnectionLost(tt.err) == tt.decisive {
			t.Errorf("%v: healthy %v, decisive %v (lost connection %v); want a failed check, decisive %v",
				tt.err, r.healthy, r.decisive, failure.ConnectionLost(tt.err), tt.decisive)
		}
	}
	// Decisive if any failed probe was (HealthyAny runs all three here).
	n := 0
	probe := func(context.Context, redis.UniversalClient) error {
		n++
		if n == 2 {
			return context.DeadlineExceeded
		}
		return io.EOF
	}
	if r, _ := check(context.Background(), nil, probe, HealthyAny, 3, time.Millisecond, time.Second); r.healthy || !r.decisive || r.probes != 3 {
		t.Fatalf("EOF, a timeout, EOF under HealthyAny: healthy %v, decisive %v after %d probes; want failed, decisive, 3", r.healthy, r.decisive, r.probes)
	}
}

// scripted is a probe that passes or fails in the given order, and counts
// its calls: the policy logic is pure, so no server is needed.
func scripted(results ...bool) (Probe, *int) {
	n := 0
	return func(context.Context, redis.UniversalClient) error {
		i := n
		n++
		if i < len(results) && results[i] {
			return nil
		}
		return fmt.Errorf("probe %d failed", i)
	}, &n
}

func TestHealthPolicies(t *testing.T) {
	tests := []struct {
		policy  HealthPolicy
		results []bool
		healthy bool
		probes  int // probes run (early stop)
	}{
		{HealthyAll, []bool{true, true, true}, true, 3},
		{HealthyAll, []bool{true, false, true}, false, 2},
		{HealthyAll, []bool{false}, false, 1},
		{HealthyMajority, []bool{true, true}, true, 2},
		{HealthyMajority, []bool{true, false, true}, true, 3},
		{HealthyMajority, []bool{false, true, false}, false, 3},
		{HealthyMajority, []bool{false, false}, false, 2},
		{HealthyAny, []bool{false, false, true}, true, 3},
		{HealthyAny, []bool{true}, true, 1},
		{HealthyAny, []bool{false, false, false}, false, 3},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v", tt.policy, tt.results), func(t *testing.T) {
			probe, calls := scripted(tt.results...)
			r, err := check(context.Background(), nil, probe, tt.policy, 3, time.Millisecond, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if r.healthy != tt.healthy || *calls != tt.probes || r.probes != tt.probes {
				t.Fatalf("healthy %v after %d probes (%d calls), want %v after %d", r.healthy, r.probes, *calls, tt.healthy, tt.probes)
			}
			if !r.healthy && r.err == nil {
				t.Fatal("an unhealthy result has no error")
			}
		})
	}
}

// TestPanickingProbeFails runs a check whose probe panics: the check
// returns, failed, with an error matching ErrProbePanicked, under every
// policy (a health loop or a burst check running it carries on).
func TestPanickingProbeFails(t *testing.T) {
	probe := func(context.Context, redis.UniversalClient) error { panic("probe bug") }
	for _, policy := range []HealthPolicy{HealthyAll, HealthyMajority, HealthyAny} {
		r, err := check(context.Background(), nil, probe, policy, 3, time.Millisecond, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if r.healthy || !errors.Is(r.err, ErrProbePanicked) || !strings.Contains(r.err.Error(), "probe bug") {
			t.Fatalf("%s: healthy %v, err %v; want a failed check naming the panic", policy, r.healthy, r.err)
		}
	}
}

func TestCheckStopsWithContext(t *testing.T) {
	probe, _ := scripted(true, true, true)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	start := time.Now()
	if _, err := check(ctx, nil, probe, HealthyAll, 3, time.Hour, time.Second); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("check took %v after its context ended", d)
	}
}

func TestConfigValidation(t *testing.T) {
	ok := &redis.Options{Addr: "127.0.0.1:1"}
	retrying := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer retrying.Close()
	dialRetrying := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, ContextTimeoutEnabled: true})
	defer dialRetrying.Close()
	noDeadlines := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	defer noDeadlines.Close()
	tests := []struct {
		name  string
		cfg   Config
		strct string // the ConfigError's Struct
		field string // and Field
		want  string // in its message
	}{
		{"no databases", Config{}, "Config", "Databases", "multidb: Config.Databases at least one database is required"},
		{"no name", Config{Databases: []Database{{Options: ok}}}, "Database", "Name", "multidb: Database.Name is required"},
		{"duplicate name", Config{Databases: []Database{{Name: "a", Options: ok}, {Name: "a", Options: ok}}}, "Config", `Databases["a"].Name`, `multidb: Config.Databases["a"].Name is used twice`},
		{"negative weight", Config{Databases: []Database{{Name: "a", Weight: -1, Options: ok}}}, "Config", `Databases["a"].Weight`, `multidb: Config.Databases["a"].Weight must be a finite number, not negative`},
		{"negative grace period", Config{Databases: []Database{{Name: "a", GracePeriod: -1, Options: ok}}}, "Config", `Databases["a"].GracePeriod`, "must not be negative"},
		{"neither client nor options", Config{Databases: []Database{{Name: "a"}}}, "Config", `Databases["a"].Client/Options`, "exactly one"},
		{"both client and options", Config{Databases: []Database{{Name: "a", Options: ok, Client: noDeadlines}}}, "Config", `Databases["a"].Client/Options`, "exactly one"},
		{"client retries commands", Config{Databases: []Database{{Name: "a", Client: retrying}}}, "Config", `Databases["a"].Client`, "MaxRetries 3"},
		{"client retries dials", Config{Databases: []Database{{Name: "a", Client: dialRetrying}}}, "Config", `Databases["a"].Client`, "retries dials"},
		{"client ignores deadlines", Config{Databases: []Database{{Name: "a", Client: noDeadlines}}}, "Config", `Databases["a"].Client`, "ContextTimeoutEnabled"},
		{"bad policy", Config{Databases: []Database{{Name: "a", Options: ok}}, HealthPolicy: 7}, "Config", "HealthPolicy", "multidb: Config.HealthPolicy unknown policy 7"},
		{"bad rate", Config{Databases: []Database{{Name: "a", Options: ok}}, FailureRateThreshold: 1.5}, "Config", "FailureRateThreshold", "between 0 and 1"},
		{"negative interval", Config{Databases: []Database{{Name: "a", Options: ok}}, HealthCheckInterval: -time.Second}, "Config", "HealthCheckInterval", "multidb: Config.HealthCheckInterval must not be negative"},
		{"negative probes", Config{Databases: []Database{{Name: "a", Options: ok}}, Probes: -1}, "Config", "Probes", "must not be negative"},
		{"negative attempts", Config{Databases: []Database{{Name: "a", Options: ok}}, FailoverAttempts: -1}, "Config", "FailoverAttempts", "must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(tt.cfg)
			if err == nil {
				_ = c.Close()
				t.Fatalf("NewClient accepted it, want an error about %q", tt.want)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Package != "multidb" || ce.Struct != tt.strct || ce.Field != tt.field || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a *ConfigError on %s.%s about %q", err, tt.strct, tt.field, tt.want)
			}
		})
	}
	cfg, err := Config{Databases: []Database{{Name: "a", Options: ok}}}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HealthCheckInterval != DefaultHealthCheckInterval || cfg.Probes != DefaultProbes || cfg.ProbeDelay != DefaultProbeDelay ||
		cfg.GracePeriod != DefaultGracePeriod || cfg.ConsecutiveFailures != DefaultConsecutiveFailures ||
		cfg.FailoverAttempts != DefaultFailoverAttempts || cfg.FailoverDelay != DefaultFailoverDelay ||
		cfg.FailbackDwell != DefaultFailbackDwell || cfg.HealthPolicy != HealthyAll {
		t.Fatalf("defaults: %+v", cfg)
	}
}

func TestErrors(t *testing.T) {
	cause := io.EOF
	dce := &DatabaseChangedError{Old: "primary", New: "standby", Cause: cause}
	wrapped := fmt.Errorf("call: %w", dce)
	var got *DatabaseChangedError
	if !errors.As(wrapped, &got) || !errors.Is(wrapped, ErrDatabaseChanged) || !errors.Is(wrapped, io.EOF) {
		t.Fatal("DatabaseChangedError does not work with errors.Is / errors.As")
	}
	if want := `multidb: active database changed from "primary" to "standby" while a write was in flight; it was not re-run (it may have executed on "primary": check before re-running); cause: EOF`; dce.Error() != want {
		t.Fatalf("got  %s\nwant %s", dce.Error(), want)
	}

	since := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	temp := &UnavailableError{Since: since, Attempts: 2, MaxAttempts: 10,
		Databases: []DatabaseStatus{{Name: "primary", State: Open, LastError: "connection refused"}, {Name: "standby", State: HalfOpen}}}
	if !errors.Is(temp, ErrTemporarilyUnavailable) || errors.Is(temp, ErrNoHealthyDatabase) {
		t.Fatal("a temporary UnavailableError matches the wrong sentinel")
	}
	if want := "multidb: no healthy database at the moment (since 2026-01-02T03:04:05Z, attempt 2 of 10); the call was not sent, try again shortly; primary: open (connection refused); standby: half-open"; temp.Error() != want {
		t.Fatalf("got  %s\nwant %s", temp.Error(), want)
	}
	exhausted := &UnavailableError{Exhausted: true, Since: since, Attempts: 10, MaxAttempts: 10}
	if !errors.Is(exhausted, ErrNoHealthyDatabase) || errors.Is(exhausted, ErrTemporarilyUnavailable) {
		t.Fatal("an exhausted UnavailableError matches the wrong sentinel")
	}

	ue := &UnhealthyError{Database: "standby", Policy: HealthyAll, Passed: 0, Probes: 1, Err: io.EOF}
	if !errors.Is(ue, ErrUnhealthy) || !errors.Is(ue, io.EOF) {
		t.Fatal("UnhealthyError does not work with errors.Is")
	}
	if want := `multidb: database "standby" is not healthy (0 of 1 probes passed, policy healthy-all); the active database did not change: EOF`; ue.Error() != want {
		t.Fatalf("got  %s\nwant %s", ue.Error(), want)
	}
}

func TestEventString(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	tests := []struct {
		ev   Event
		want string
	}{
		{Event{Kind: EventActiveChanged, Time: at, Old: "a", New: "b", Reason: ReasonFailback}, `03:04:05.006 active changed "a" → "b" (failback)`},
		{Event{Kind: EventBreakerChanged, Time: at, Database: "a", From: Closed, To: Open, Detail: "3 in a row", Err: io.EOF}, `03:04:05.006 breaker changed a: closed → open: 3 in a row err=EOF`},
		{Event{Kind: EventWeightChanged, Time: at, Database: "a", Weight: 2.5}, `03:04:05.006 weight changed a weight 2.5`},
		{Event{Kind: EventActivated, Time: at, New: "a"}, `03:04:05.006 activated "a"`},
		{Event{Kind: EventKind(99), Time: at}, `03:04:05.006 EventKind(99)`},
	}
	for _, tt := range tests {
		if got := tt.ev.String(); got != tt.want {
			t.Errorf("got  %s\nwant %s", got, tt.want)
		}
	}
}
