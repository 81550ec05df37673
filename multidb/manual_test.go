package multidb

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestManualControl covers SetActive (pinned: failback does not undo it),
// SetActive refused for a dead or unknown database, and UpdateWeight
// switching at once when it makes a healthy database the top.
func TestManualControl(t *testing.T) {
	nodes := standalone(t, 3, lab.Standalone())
	c, log := newClient(t, fast(Config{FailbackDwell: 200 * time.Millisecond}), nodes, 10, 5, 1)
	ctx := testkit.Context(t, 30*time.Second)

	tests := []struct {
		name   string
		do     func() error
		active string
		reason Reason // of the switch it makes; 0: none
		err    error
	}{
		{"SetActive to the standby", func() error { return c.SetActive(ctx, "db1") }, "db1", ReasonManual, nil},
		{"SetActive to the active one changes nothing", func() error { return c.SetActive(ctx, "db1") }, "db1", 0, nil},
		{"SetActive to an unknown database", func() error { return c.SetActive(ctx, "nope") }, "db1", 0, ErrUnknownDatabase},
		{"SetActive to a dead database is refused", func() error {
			if err := nodes[2].Kill(); err != nil {
				t.Fatal(err)
			}
			return c.SetActive(ctx, "db2")
		}, "db1", 0, ErrUnhealthy},
		{"UpdateWeight ends the pin: the weights decide", func() error { return c.UpdateWeight(ctx, "db2", 2) }, "db0", ReasonManual, nil},
		{"SetActive to the standby again", func() error { return c.SetActive(ctx, "db1") }, "db1", ReasonManual, nil},
		{"UpdateWeight makes the active database the top: nothing to do", func() error { return c.UpdateWeight(ctx, "db1", 30) }, "db1", 0, nil},
		{"UpdateWeight makes db0 the top again: switch at once", func() error { return c.UpdateWeight(ctx, "db1", 5) }, "db0", ReasonManual, nil},
		{"UpdateWeight making a dead database the top: refused, weight kept", func() error { return c.UpdateWeight(ctx, "db2", 100) }, "db0", 0, ErrUnhealthy},
		{"UpdateWeight to an unknown database", func() error { return c.UpdateWeight(ctx, "nope", 1) }, "db0", 0, ErrUnknownDatabase},
		{"UpdateWeight negative", func() error { return c.UpdateWeight(ctx, "db0", -1) }, "db0", 0, nil},
	}
	for _, tt := range tests {
		before := len(log.switches())
		err := tt.do()
		switch {
		case tt.name == "UpdateWeight negative":
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Errorf("%s: err = %v, want a *ConfigError", tt.name, err)
			}
		case tt.err == nil && err != nil, tt.err != nil && !errors.Is(err, tt.err):
			t.Errorf("%s: err = %v, want %v", tt.name, err, tt.err)
		}
		if got := c.Active(); got != tt.active {
			t.Errorf("%s: active %q, want %q", tt.name, got, tt.active)
		}
		// Every event of tt.do (a switch, or a wrong one) is delivered
		// once the marker is.
		log.flush(t, c)
		after := log.switches()
		switch {
		case tt.reason == 0 && len(after) != before:
			t.Errorf("%s: switched: %v", tt.name, after[before:])
		case tt.reason != 0 && (len(after) != before+1 || after[before].Reason != tt.reason):
			t.Errorf("%s: switches %v, want one %s", tt.name, after[before:], tt.reason)
		}
		if tt.name == "SetActive to the standby" {
			// Pinned: db0 is healthy and heavier, yet no failback.
			time.Sleep(time.Second)
			if c.Active() != "db1" || !c.Stats().Pinned {
				t.Fatalf("failback undid SetActive: active %q", c.Active())
			}
		}
	}
	if st := stateOf(c, "db2"); st.Weight != 100 || st.State == Closed {
		t.Errorf("db2: weight %v, breaker %s; want 100 and not closed", st.Weight, st.State)
	}
	if c.Stats().Pinned {
		t.Error("UpdateWeight did not end the pin")
	}
}

// TestModuleUpgradeWalkthrough is the seed's planned upgrade: restart the
// standby, switch to it, restart the primary, switch back, while readers
// run without a single failed read.
func TestModuleUpgradeWalkthrough(t *testing.T) {
	nodes := standalone(t, 2, lab.Standalone())
	primary, standby := nodes[0], nodes[1]
	// The default grace period: a restarted node's breaker stays open, and
	// the operator's weight change checks it and closes it.
	c, log := newClient(t, fast(Config{GracePeriod: DefaultGracePeriod}), nodes, 10, 5)
	ctx := testkit.Context(t, 60*time.Second)
	for _, n := range nodes {
		if err := n.Do(ctx, "SET", "catalog", "v1").Err(); err != nil {
			t.Fatal(err)
		}
	}

	var reads, failed atomic.Int64
	var firstErr atomic.Value
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				reads.Add(1)
				if err := c.Get(ctx, "catalog").Err(); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		})
	}
	// The operator's steps; restarting a node is the module upgrade (the
	// operator then copies the data back, as replication would).
	upgrade := func(n *lab.Node) {
		t.Helper()
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		if err := n.Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if err := n.Do(ctx, "SET", "catalog", "v1").Err(); err != nil {
			t.Fatal(err)
		}
	}
	healthy := func(name string) func() bool {
		return func() bool {
			st := stateOf(c, name)
			return st.Healthy && st.LastCheck.After(time.Now().Add(-time.Second))
		}
	}

	time.Sleep(300 * time.Millisecond)
	upgrade(standby) // 1. the standby gets no traffic
	testkit.WaitFor(t, 5*time.Second, "the standby healthy", healthy("db1"))
	time.Sleep(200 * time.Millisecond)
	if err := c.UpdateWeight(ctx, "db1", 20); err != nil { // 2. switch to it
		t.Fatal(err)
	}
	if c.Active() != "db1" {
		t.Fatalf("active %q after raising the standby's weight", c.Active())
	}
	time.Sleep(300 * time.Millisecond)
	upgrade(primary) // 3. now the primary is idle
	testkit.WaitFor(t, 5*time.Second, "the primary healthy", healthy("db0"))
	time.Sleep(200 * time.Millisecond)
	if err := c.UpdateWeight(ctx, "db1", 5); err != nil { // 4. switch back
		t.Fatal(err)
	}
	if c.Active() != "db0" {
		t.Fatalf("active %q after restoring the weights", c.Active())
	}
	if st := stateOf(c, "db0"); st.State != Closed || st.Trips != 1 {
		t.Fatalf("primary: breaker %s after %d trips, want closed after 1", st.State, st.Trips)
	}
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()

	t.Logf("%d reads, %d failed", reads.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Fatalf("%d of %d reads failed during the planned switches; first: %v", failed.Load(), reads.Load(), firstErr.Load())
	}
	sw := log.awaitSwitches(t, 2)
	if len(sw) != 2 || sw[0].New != "db1" || sw[1].New != "db0" || sw[0].Reason != ReasonManual || sw[1].Reason != ReasonManual {
		t.Fatalf("switches %v, want db0 → db1 → db0, both manual", sw)
	}
}

// TestAddRemoveDatabase adds a heavier database at run time (it takes over
// by failback once it passed its checks for the dwell), removes the active
// one (traffic moves at once), and refuses to remove the last one.
func TestAddRemoveDatabase(t *testing.T) {
	nodes := standalone(t, 3, lab.Standalone())
	c, log := newClient(t, fast(Config{}), nodes[:1], 5)
	ctx := testkit.Context(t, 30*time.Second)

	added := time.Now()
	if err := c.AddDatabase(Database{Name: "big", Weight: 10, Options: opts(nodes[1])}); err != nil {
		t.Fatal(err)
	}
	if err := c.AddDatabase(Database{Name: "big", Weight: 1, Options: opts(nodes[2])}); err == nil {
		t.Fatal("a second database named big was added")
	}
	testkit.WaitFor(t, 5*time.Second, "failback to big", func() bool { return c.Active() == "big" })
	if d := time.Since(added); d < 500*time.Millisecond {
		t.Fatalf("big took over %v after it was added, before the dwell", d)
	}
	if err := c.AddDatabase(Database{Name: "small", Weight: 1, Options: opts(nodes[2])}); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", "big", 0).Err(); err != nil || get(t, nodes[1], "k") != "big" {
		t.Fatalf("SET via big: %v", err)
	}
	if err := c.RemoveDatabase("big"); err != nil {
		t.Fatal(err)
	}
	if c.Active() != "db0" {
		t.Fatalf("active %q after removing big, want db0", c.Active())
	}
	if err := c.Set(ctx, "k", "db0", 0).Err(); err != nil || get(t, nodes[0], "k") != "db0" {
		t.Fatalf("SET after removal: %v", err)
	}
	if err := c.RemoveDatabase("big"); !errors.Is(err, ErrUnknownDatabase) {
		t.Fatalf("second removal: %v", err)
	}
	if err := c.RemoveDatabase("small"); err != nil {
		t.Fatal(err)
	}
	var ce *ConfigError
	if err := c.RemoveDatabase("db0"); !errors.As(err, &ce) {
		t.Fatalf("removing the last database: %v", err)
	}
	sw := log.awaitSwitches(t, 2)
	if len(sw) != 2 || sw[0].New != "big" || sw[0].Reason != ReasonFailback || sw[1].New != "db0" || sw[1].Reason != ReasonManual {
		t.Fatalf("switches %v", sw)
	}
	if len(log.await(t, EventDatabaseAdded, 2)) != 2 || len(log.await(t, EventDatabaseRemoved, 2)) != 2 {
		t.Fatalf("events %v", log.all())
	}
}
