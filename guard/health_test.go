package guard_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func check(t *testing.T, ctx context.Context, s guard.ClientConfig, write bool) guard.Report {
	t.Helper()
	r, err := newChecker(t, open(t, s), write).Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("report: %v (took %v, err %v)", r, r.Took, r.Err)
	return r
}

func TestHealthPrimaryIsWritable(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	r := check(t, ctx, relaxed(l.Node(0)), true)
	if r.State != guard.StateWritable || !r.Writable() || !r.PingOK || !r.WriteProbed || r.Err != nil {
		t.Fatalf("report %+v, want writable", r)
	}
	if r.Ping <= 0 || r.Write <= 0 || r.Took < r.Ping+r.Write || r.At.IsZero() || r.Server != l.Node(0).Addr() {
		t.Errorf("latencies or fields missing: %+v", r)
	}
	ttl, err := l.Node(0).Do(ctx, "TTL", "test:health:write").Int()
	if err != nil || ttl <= 0 || ttl > 60 {
		t.Fatalf("probe key TTL %d, %v; want at most 60 s", ttl, err)
	}
	// Without the write probe, PING alone.
	r = check(t, ctx, relaxed(l.Node(0)), false)
	if r.State != guard.StateReachable || r.WriteProbed || r.Writable() {
		t.Fatalf("PING-only report %+v, want reachable", r)
	}
}

func TestHealthOutOfMemoryIsNotWritable(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{ExtraConfig: []string{"maxmemory 1mb", "maxmemory-policy noeviction"}})
	n := l.Node(0)
	big := strings.Repeat("x", 64<<10)
	filled := false
	for i := range 200 {
		err := n.Do(ctx, "SET", fmt.Sprint("fill:", i), big).Err()
		if redis.IsOOMError(err) {
			filled = true
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if !filled {
		t.Fatal("Redis never reached maxmemory")
	}
	r := check(t, ctx, relaxed(n), true)
	if r.State != guard.StateOutOfMemory || r.Writable() || !r.PingOK {
		t.Fatalf("report %+v, want out-of-memory with PING ok", r)
	}
	var re *guard.RedisError
	if !errors.As(r.Err, &re) || re.Kind != guard.FailureOutOfMemory {
		t.Fatalf("report error %v, want a RedisError of kind out-of-memory", r.Err)
	}
}

func TestHealthReplicaIsReadOnly(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Replicated(1))
	r := check(t, ctx, relaxed(l.Node(1)), true)
	if r.State != guard.StateReadOnly || r.Writable() || !r.PingOK {
		t.Fatalf("report %+v, want read-only with PING ok", r)
	}
}

func TestHealthWrongPasswordIsAuthFailure(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Password: "the-right-one"})
	s := relaxed(l.Node(0))
	s.Password = "wrong-secret-5d1"
	r := check(t, ctx, s, true)
	if r.State != guard.StateAuthFailed || r.PingOK {
		t.Fatalf("report %+v, want auth-failed", r)
	}
	for _, text := range []string{r.String(), r.Err.Error(), fmt.Sprintf("%+v", r)} {
		if strings.Contains(text, s.Password) {
			t.Fatalf("the report shows the password: %s", text)
		}
	}
	// The right password: writable.
	if r := check(t, ctx, relaxed(l.Node(0)), true); r.State != guard.StateWritable {
		t.Fatalf("with the right password: %v", r)
	}
}

func TestHealthPausedTimesOutWithinTheBound(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	n := l.Node(0)
	resumeOnCleanup(t, n)
	s := settings(n)
	s.ReadTimeout = time.Second // the call limit, not the socket timeout, must end it
	g := open(t, s)
	c := newChecker(t, g, true)
	if r, _ := c.Check(ctx); r.State != guard.StateWritable {
		t.Fatalf("before the pause: %v", r)
	}
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	r, err := c.Check(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bound := g.CallLimit() + 50*time.Millisecond
	t.Logf("paused: %v, took %v (bound %v)", r, r.Took, bound)
	if r.State != guard.StateTimeout || r.PingOK {
		t.Fatalf("report %+v, want timeout", r)
	}
	if r.Took > bound {
		t.Fatalf("the check took %v, want at most %v", r.Took, bound)
	}
}

func TestHealthUnreachable(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	r := check(t, ctx, guard.ClientConfig{Addr: deadAddr(t), KeyPrefix: "test"}, true)
	if r.State != guard.StateUnreachable || r.PingOK {
		t.Fatalf("report %+v, want unreachable", r)
	}
}

func TestHealthCheckCallerCancellation(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	n, g := pausable(t)
	c := newChecker(t, g, false)
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(20*time.Millisecond, cancel)
	if _, err := c.Check(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled check: %v, want context.Canceled", err)
	}
}

func TestMonitorKeepsTheLastReport(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	n, g := pausable(t)
	c := newChecker(t, g, true)
	var reports atomic.Int64
	m, err := guard.NewMonitor(c, guard.MonitorConfig{Interval: 20 * time.Millisecond,
		OnReport: func(guard.Report) { reports.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	waitFor(t, ctx, func() bool { return m.Last().State == guard.StateWritable })
	first := m.Last()
	if time.Since(first.At) > 5*time.Second {
		t.Fatalf("last report is %v old", time.Since(first.At))
	}
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool { return m.Last().State == guard.StateTimeout })
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, ctx, func() bool { return m.Last().State == guard.StateWritable })
	if last := m.Last(); !last.At.After(first.At) {
		t.Fatalf("the report did not advance: %v then %v", first.At, last.At)
	}
	if reports.Load() < 3 {
		t.Fatalf("OnReport called %d times", reports.Load())
	}
	start := time.Now()
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil { // twice is fine
		t.Fatal(err)
	}
	if took := time.Since(start); took > g.CallLimit()*2+50*time.Millisecond {
		t.Fatalf("Close took %v", took)
	}
	got := reports.Load()
	time.Sleep(60 * time.Millisecond)
	if reports.Load() != got {
		t.Fatal("the monitor kept checking after Close")
	}
}

func TestMonitorBeforeFirstCheck(t *testing.T) {
	g, err := guard.Open(guard.ClientConfig{Addr: "127.0.0.1:1", KeyPrefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	c := newChecker(t, g, false)
	m, err := guard.NewMonitor(c, guard.MonitorConfig{Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	r := m.Last()
	_ = m.Close()
	if r.State != guard.StateUnknown && r.State != guard.StateUnreachable {
		t.Fatalf("first report %v", r)
	}
	if s := (guard.Report{}).String(); s != "unknown" {
		t.Fatalf("zero report prints %q", s)
	}
}
