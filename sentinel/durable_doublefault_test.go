//go:build unix

package sentinel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// durableWriter writes unique ids with RPUSH, durable, from two
// goroutines until stopped, and records every call.
type durableWriter struct {
	name string
	c    *Client
	key  string

	mu    sync.Mutex
	calls []durableCall
}

// durableCall is one write: its id, when it was sent and returned, and
// its error.
type durableCall struct {
	id          string
	began, took time.Time
	err         error
}

func (w *durableWriter) run(ctx context.Context, stop <-chan struct{}, wg *sync.WaitGroup) {
	for g := range 2 {
		wg.Go(func() {
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%s-%d-%d", w.name, g, n)
				octx, cancel := context.WithTimeout(ctx, 2*time.Second)
				began := time.Now()
				err := w.c.RPush(octx, w.key, id).Err()
				cancel()
				w.mu.Lock()
				w.calls = append(w.calls, durableCall{id: id, began: began, took: time.Now(), err: err})
				w.mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond)
				} else {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
}

// acked returns the calls acknowledged that were sent at or after from
// and returned before to.
func (w *durableWriter) acked(from, to time.Time) []durableCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []durableCall
	for _, c := range w.calls {
		if c.err == nil && !c.began.Before(from) && c.took.Before(to) {
			out = append(out, c)
		}
	}
	return out
}

// TestDurableDoubleFault reproduces the double fault of issue 35: the
// master (node0) is killed, a replica (node2) is promoted and takes
// writes, node2 is killed while node0 is still down, and node0 restarts
// from its append-only file, without any of node2's writes, and is
// promoted: Sentinel's choice admits a replica whose link to the master
// has been down only since it restarted. The third node (node1) is a
// replica Sentinel never promotes (replica-priority 0: a backup, or any
// replica Sentinel finds ineligible at that moment, paused or lagging),
// so node0 is the only candidate left and the failover is certain.
//
// While node2 is master, DurablePromotable does not count node0 (every
// sentinel flags it down) and its writes are confirmed by node1 alone:
// they are acknowledged, then lost when node1 and node2 resynchronise
// from node0. The default scope (the zero Config.DurableScope,
// DurableEveryKnownReplica) counts node0 whether down or not: its writes
// are refused with a *NotDurableError, unsent, from node0's kill until
// node2 is back and synchronised, and none it acknowledged is lost.
func TestDurableDoubleFault(t *testing.T) {
	ctx := testkit.Context(t, 2*time.Minute)
	cfg := lab.Sentinel(2)
	cfg.ExtraConfig = []string{"appendonly yes", "appendfsync always"}
	cfg.Nodes = []lab.NodeConfig{{}, {NeverPromote: true}}
	l := lab.New(t, cfg)
	t.Logf("server %s", l.ServerVersion())
	node0, node2 := l.Node(0), l.Node(2)

	writers := []*durableWriter{{name: "default", key: "dd:default"}, {name: "promotable", key: "dd:promotable"}}
	for _, w := range writers {
		scope := DurableScope(0) // the default
		if w.name == "promotable" {
			scope = DurablePromotable
		}
		w.c, _ = newTestClient(t, l, func(o *Config) {
			o.Durable, o.DurableScope = true, scope
			o.RefreshInterval = 200 * time.Millisecond
		})
		testkit.WaitFor(t, 10*time.Second, w.name+" counts both replicas", func() bool {
			return len(w.c.Stats().DurableReplicas) == 2
		})
	}
	def, prom := writers[0], writers[1]
	if got := def.c.opts.DurableScope; got != DurableEveryKnownReplica {
		t.Errorf("the default DurableScope is %v, want %v", got, DurableEveryKnownReplica)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, w := range writers {
		w.run(ctx, stop, &wg)
	}
	stopped := false
	stopWriters := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopWriters()
	started := time.Now()
	testkit.WaitFor(t, 10*time.Second, "durable writes acknowledged on node0", func() bool {
		return len(def.acked(started, time.Now())) >= 10 && len(prom.acked(started, time.Now())) >= 10
	})

	// Fault 1: the master dies; Sentinel promotes node2.
	if err := node0.Kill(); err != nil {
		t.Fatal(err)
	}
	killed0 := time.Now()
	if _, err := l.WaitEvent(ctx, killed0, func(ev lab.SentinelEvent) bool {
		return ev.Type == "+switch-master" && l.NodeByAddr(switchedTo(ev.Payload)) == node2
	}); err != nil {
		t.Fatal(err)
	}
	// Every sentinel ends the failover before node2 dies: Sentinel's
	// leader ends a failover only once the replica it promoted answers,
	// and one left mid-failover would name node2 until it is back.
	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "both clients on node2", func() bool {
		return def.c.Master() == node2.Addr() && prom.c.Master() == node2.Addr()
	})
	onNode2 := time.Now()
	// DurablePromotable confirms writes on node1 alone while node0 is
	// down. Some are needed for the loss to show.
	testkit.WaitFor(t, 20*time.Second, "DurablePromotable writes acknowledged on node2", func() bool {
		return len(prom.acked(onNode2, time.Now())) >= 20
	})

	// Fault 2: node2 dies while node0 is still down; node0 restarts from
	// its AOF, without node2's writes, and is the only replica Sentinel
	// may promote.
	if err := node2.Kill(); err != nil {
		t.Fatal(err)
	}
	killed2 := time.Now()
	if err := node0.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.WaitEvent(ctx, killed2, func(ev lab.SentinelEvent) bool {
		return ev.Type == "+switch-master" && l.NodeByAddr(switchedTo(ev.Payload)) == node0
	}); err != nil {
		t.Fatalf("Sentinel did not promote the restarted node0: %v", err)
	}
	promoted0 := time.Now()
	t.Logf("node0 killed, node2 master, node2 killed %v later, node0 restarted and promoted %v after that",
		killed2.Sub(killed0).Round(time.Millisecond), promoted0.Sub(killed2).Round(time.Millisecond))
	// node2 comes back and is made a replica of node0, as node1 is, once
	// the sentinels agree on node0 (a restart in the middle of the
	// failover can make a sentinel that has not finished it switch back).
	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}
	restarting2 := time.Now()
	if err := node2.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}
	// The default scope writes again once node2 is back and synchronised.
	settled := time.Now()
	testkit.WaitFor(t, 20*time.Second, "default-scope durable writes acknowledged after the faults", func() bool {
		return len(def.acked(settled, time.Now())) >= 10
	})
	stopWriters()

	if m, err := l.Master(ctx); err != nil || m != node0 {
		t.Fatalf("final master %s (%v), want node0", nodeName(m), err)
	}
	for _, w := range writers {
		present := map[string]bool{}
		ids, err := node0.Do(ctx, "LRANGE", w.key, 0, -1).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			present[id] = true
		}
		all := w.acked(time.Time{}, time.Now())
		lost := 0
		for _, c := range all {
			if !present[c.id] {
				lost++
			}
		}
		window := w.acked(killed0, restarting2)
		refused, notSent := 0, 0
		errs := map[string]int{}
		w.mu.Lock()
		for _, c := range w.calls {
			if c.err == nil || c.began.Before(killed0) || !c.took.Before(restarting2) {
				continue
			}
			errs[errKind(c.err)]++
			var nde *NotDurableError
			if errors.As(c.err, &nde) {
				refused++
				if nde.NotSent {
					notSent++
				}
			}
		}
		w.mu.Unlock()
		t.Logf("%s (%v): %d acknowledged, %d lost; between node0's kill and node2's restart: %d acknowledged, %d refused as not durable (%d unsent); errors: %s",
			w.name, w.c.opts.DurableScope, len(all), lost, len(window), refused, notSent, errSummary(errs))
		switch w {
		case def:
			if lost != 0 {
				t.Errorf("default scope: %d acknowledged durable writes lost", lost)
			}
			if len(window) != 0 {
				t.Errorf("default scope: %d durable writes acknowledged while a known replica was down", len(window))
			}
			if notSent == 0 {
				t.Error("default scope: no durable write refused unsent while node0 was down")
			}
		case prom:
			// The documented cost of DurablePromotable: the writes
			// node1 alone confirmed on node2 are gone.
			if lost == 0 {
				t.Error("DurablePromotable lost no write: the double fault did not happen as staged")
			}
		}
	}
}

// switchedTo is the new master's address in a +switch-master payload
// ("<name> <old ip> <old port> <new ip> <new port>").
func switchedTo(payload string) string {
	var name, oldIP, oldPort, newIP, newPort string
	if n, _ := fmt.Sscan(payload, &name, &oldIP, &oldPort, &newIP, &newPort); n != 5 {
		return ""
	}
	return newIP + ":" + newPort
}

// nodeName is n's name, or "none".
func nodeName(n *lab.Node) string {
	if n == nil {
		return "none"
	}
	return n.Name()
}
