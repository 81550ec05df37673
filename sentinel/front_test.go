package sentinel

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func TestFrontMethods(t *testing.T) {
	testkit.CheckFrontMethods(t, reflect.TypeFor[*Client]())
}

// The shadowed methods work on the node the client routes to, or say what
// to use instead.
func TestShadowedMethods(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, Proxy: true, DownAfter: 30 * time.Second})
	c, _ := newTestClient(t, l, nil)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// WithTimeout: routed, bounded (a slow master times out within it).
	short := c.WithTimeout(200 * time.Millisecond)
	defer short.Close()
	if v, err := short.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET through WithTimeout: %q, %v", v, err)
	}
	l.Node(0).SetLatency(600 * time.Millisecond)
	began := time.Now()
	err := short.Get(ctx, "k").Err()
	if took := time.Since(began); err == nil || took > 550*time.Millisecond {
		t.Fatalf("GET through WithTimeout(200ms) to a 600 ms master: %v after %v", err, took)
	}
	l.Node(0).SetLatency(0)
	if err := c.Get(ctx, "k").Err(); err != nil {
		t.Fatalf("GET on c after its WithTimeout view was used and closed: %v", err)
	}
	// Options and NodeAddress: the master's.
	if o := c.Options(); o.Addr != l.Node(0).Addr() || o.ReadTimeout != DefaultReadTimeout {
		t.Fatalf("Options: Addr %s ReadTimeout %v; want the master %s, %v", o.Addr, o.ReadTimeout, l.Node(0).Addr(), DefaultReadTimeout)
	}
	if c.NodeAddress() != l.Node(0).Addr() {
		t.Fatalf("NodeAddress = %s", c.NodeAddress())
	}
	// EphemeralConn: the master's.
	conn := c.EphemeralConn()
	if v, err := conn.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET on EphemeralConn: %q, %v", v, err)
	}
	_ = conn.Close()
	// The auto-pipeliners work through the routing.
	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatalf("AutoPipeline: %v", err)
	}
	if v, err := ap.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET through AutoPipeline: %q, %v", v, err)
	}
	aap, err := c.AsyncAutoPipeline()
	if err != nil {
		t.Fatalf("AsyncAutoPipeline: %v", err)
	}
	if v, err := aap.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET through AsyncAutoPipeline: %q, %v", v, err)
	}
	// Wait, WaitAOF, push handlers: refused, saying what to use.
	for name, err := range map[string]error{
		"Wait":                            c.Wait(ctx, 1, time.Second).Err(),
		"WaitAOF":                         c.WaitAOF(ctx, 0, 1, time.Second).Err(),
		"RegisterPushNotificationHandler": c.RegisterPushNotificationHandler("x", nil, false),
	} {
		var ue *UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) || ue.Method != name || ue.Instead == "" ||
			!strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v; want an UnsupportedError naming it and what to use", name, err)
		}
	}
}
