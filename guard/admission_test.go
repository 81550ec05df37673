package guard_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func newGate(t *testing.T, g *guard.Guard, ttl time.Duration) *guard.Gate {
	t.Helper()
	gate, err := guard.NewGate(g, guard.GateConfig{Name: "payment", TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return gate
}

func TestGateAdmitsOneConcurrentAttempt(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	gate := newGate(t, g, 30*time.Second)

	const n = 6
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() { <-start; errs <- gate.Admit(ctx, "order-1") })
	}
	close(start)
	wg.Wait()
	close(errs)
	var admitted, busy int
	for err := range errs {
		var be *guard.BusyError
		switch {
		case err == nil:
			admitted++
		case errors.As(err, &be) && errors.Is(err, guard.ErrBusy):
			busy++
		default:
			t.Errorf("unexpected: %v", err)
		}
	}
	if admitted != 1 || busy != n-1 {
		t.Fatalf("%d admitted, %d busy; want 1 and %d", admitted, busy, n-1)
	}
	// SET pending NX with the TTL.
	v, err := l.Node(0).Do(ctx, "GET", gate.Key("order-1")).Text()
	ttl, _ := l.Node(0).Do(ctx, "TTL", gate.Key("order-1")).Int()
	if err != nil || v != "pending" || ttl <= 0 || ttl > 30 {
		t.Fatalf("admission key = %q (TTL %d s), %v", v, ttl, err)
	}
	// Another id is independent.
	if err := gate.Admit(ctx, "order-2"); err != nil {
		t.Fatal(err)
	}
	if s := gate.Stats(); s != (guard.GateStats{Admitted: 2, Busy: n - 1}) {
		t.Errorf("stats %+v", s)
	}
}

func TestGateRedisDownAdmitsNothing(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Proxy: true})
	n := l.Node(0)
	g := open(t, relaxed(n))
	gate := newGate(t, g, 30*time.Second)

	n.Proxy().Suspend()
	err := gate.Admit(ctx, "order-1")
	var ue *guard.UnavailableError
	if !errors.As(err, &ue) || !errors.Is(err, guard.ErrUnavailable) || errors.Is(err, guard.ErrBusy) {
		t.Fatalf("Admit with Redis down: %v, want UnavailableError", err)
	}
	if err := n.Proxy().Resume(); err != nil {
		t.Fatal(err)
	}
	if err := gate.Admit(ctx, "order-1"); err != nil {
		t.Fatalf("Admit after recovery: %v (the refused attempt must not hold the key)", err)
	}
}

func TestGateAdmitsAgainAfterTTL(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	gate := newGate(t, g, 150*time.Millisecond)
	if err := gate.Admit(ctx, "order-1"); err != nil {
		t.Fatal(err)
	}
	if err := gate.Admit(ctx, "order-1"); !errors.Is(err, guard.ErrBusy) {
		t.Fatalf("second attempt within TTL: %v, want ErrBusy", err)
	}
	time.Sleep(200 * time.Millisecond)
	if err := gate.Admit(ctx, "order-1"); err != nil {
		t.Fatalf("attempt after TTL: %v", err)
	}
}

func TestGateConfigErrors(t *testing.T) {
	g, err := guard.Open(guard.ClientConfig{Addr: "127.0.0.1:1", KeyPrefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, tc := range []struct {
		cfg   guard.GateConfig
		field string
		want  string // in the message
	}{
		{guard.GateConfig{}, "Name", "guard: GateConfig.Name is required"},
		{guard.GateConfig{Name: "x", TTL: -1}, "TTL", "guard: GateConfig.TTL must not be negative"},
		{guard.GateConfig{Name: "x", TTL: time.Microsecond}, "TTL", "guard: GateConfig.TTL must be at least 1ms"},
	} {
		var ce *guard.ConfigError
		if _, err := guard.NewGate(g, tc.cfg); !errors.As(err, &ce) || ce.Struct != "GateConfig" || ce.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewGate(%+v) = %v, want a ConfigError %q", tc.cfg, err, tc.want)
		}
	}
	gate, err := guard.NewGate(g, guard.GateConfig{Name: "x"})
	if err != nil || gate.TTL() != guard.DefaultAdmissionTTL {
		t.Fatalf("default gate: %v, TTL %v", err, gate.TTL())
	}
	if err := gate.Admit(context.Background(), ""); err == nil || errors.Is(err, guard.ErrUnavailable) {
		t.Fatalf("Admit with an empty id: %v", err)
	}
}
