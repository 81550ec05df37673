package guard_test

import (
	"context"
	"net"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/lab"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// waitFor polls cond until it holds (see guard.WaitFor).
func waitFor(t *testing.T, ctx context.Context, cond func() bool) {
	t.Helper()
	guard.WaitFor(t, ctx, cond)
}

// settings are the safe ClientConfig for a lab node, with the defaults'
// timeouts: for the tests that measure them.
func settings(n *lab.Node) guard.ClientConfig {
	o := n.Options()
	return guard.ClientConfig{Addr: n.Addr(), Username: o.Username, Password: o.Password, KeyPrefix: "test"}
}

// relaxed are settings with generous timeouts, for tests that check
// behaviour, not timing: on a loaded 2-core machine running -race, a
// 100 ms budget can run out for reasons that have nothing to do with Redis.
func relaxed(n *lab.Node) guard.ClientConfig {
	s := settings(n)
	s.DialTimeout, s.ReadTimeout, s.WriteTimeout = 2*time.Second, 2*time.Second, 2*time.Second
	s.CallLimit = 3 * time.Second
	return s
}

// open opens a guard for s and closes it when the test ends.
func open(t *testing.T, s guard.ClientConfig) *guard.Guard {
	t.Helper()
	g, err := guard.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })
	return g
}

// resumeOnCleanup resumes a paused node when the test ends, whatever
// happened.
func resumeOnCleanup(t *testing.T, n *lab.Node) {
	t.Cleanup(func() {
		if n.Paused() {
			_ = n.Resume()
		}
	})
}

// deadAddr is an address nothing listens on: a port just closed.
func deadAddr(tb testing.TB) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

// newChecker returns a checker on g, with or without the write probe.
func newChecker(t *testing.T, g *guard.Guard, write bool) *guard.Checker {
	t.Helper()
	c, err := guard.NewChecker(g, guard.HealthConfig{WriteProbe: write})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// pausable is a standalone lab node, resumed when the test ends, with a
// guard of the default (timed) settings on it.
func pausable(t *testing.T) (*lab.Node, *guard.Guard) {
	t.Helper()
	n := lab.New(t, lab.Standalone()).Node(0)
	resumeOnCleanup(t, n)
	return n, open(t, settings(n))
}
