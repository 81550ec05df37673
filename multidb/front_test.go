package multidb

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func TestFrontMethods(t *testing.T) {
	testkit.CheckFrontMethods(t, reflect.TypeFor[*Client]())
}

// The shadowed methods work on the active database, or say what to use.
func TestShadowedMethods(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	nodes := standalone(t, 2, lab.Config{})
	c, _ := newClient(t, fast(Config{}), nodes, 10, 5)
	short := c.WithTimeout(time.Second)
	defer short.Close()
	if err := short.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := get(t, nodes[0], "k"); v != "v" {
		t.Fatalf("SET through WithTimeout reached db0 as %q", v)
	}
	if o := c.Options(); o.Addr != nodes[0].Addr() || c.NodeAddress() != nodes[0].Addr() {
		t.Fatalf("Options().Addr %s, NodeAddress %s; want db0's %s", o.Addr, c.NodeAddress(), nodes[0].Addr())
	}
	conn := c.EphemeralConn()
	if v, err := conn.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET on EphemeralConn: %q, %v", v, err)
	}
	_ = conn.Close()
	ap, err := c.AutoPipeline()
	if err != nil {
		t.Fatalf("AutoPipeline: %v", err)
	}
	if v, err := ap.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET through AutoPipeline: %q, %v", v, err)
	}
	for name, err := range map[string]error{
		"Wait":    c.Wait(ctx, 1, time.Second).Err(),
		"WaitAOF": c.WaitAOF(ctx, 0, 1, time.Second).Err(),
	} {
		var ue *UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, ErrUnsupported) || ue.Method != name || ue.Instead == "" {
			t.Errorf("%s: %v; want an UnsupportedError naming it and what to use", name, err)
		}
	}
}

// A hook added with AddHook sees the caller's commands, not the client's
// health checks; Config.InternalHook sees those.
func TestHooksSeeTheirOwnCalls(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	nodes := standalone(t, 1, lab.Config{})
	internal := &testkit.CommandCounter{}
	c, _ := newClient(t, fast(Config{InternalHook: internal}), nodes, 10)
	user := &testkit.CommandCounter{}
	c.AddHook(user)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // health checks every 100 ms
	u, in := user.Counts(), internal.Counts()
	if u["set"] != 1 || u["ping"] != 0 {
		t.Fatalf("the caller's hook saw %v; want its SET and no health check", u)
	}
	if in["ping"] == 0 || in["set"] != 0 {
		t.Fatalf("InternalHook saw %v; want the health checks' PINGs only", in)
	}
}
