//go:build unix

package sentinel

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/internal/testkit/errplace"
	"github.com/rediskit/rediskit/lab"
)

// faultSeed and faultDuration are the random fault test's seed and how
// long it injects faults: REDISKIT_FAULT_SEED (default: the clock) and
// REDISKIT_FAULT_DURATION (a Go duration; default 20 s, which make test
// runs; make faults runs it for longer).
func faultSettings(t *testing.T) (uint64, time.Duration) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("REDISKIT_FAULT_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("REDISKIT_FAULT_SEED=%q: %v", s, err)
		}
		seed = v
	}
	d := 20 * time.Second
	if s := os.Getenv("REDISKIT_FAULT_DURATION"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("REDISKIT_FAULT_DURATION=%q: %v", s, err)
		}
		d = v
	}
	return seed, d
}

// fault is one injected fault: start it, and undo it.
type fault struct {
	name       string
	start, end func() error
}

// TestRandomFaults runs writers through random faults, one at a time
// (each held for 0.3-2.5 s, then undone, then the topology given time to
// settle): kills and restarts of data nodes, SIGSTOP pauses, black holes,
// partitions (Drop and Refuse, random sides), sentinel restarts and
// planned failovers, on a lab whose data nodes persist every write
// (appendonly yes, appendfsync always) and require a password. Three
// clients write unique ids: rediskit in its default mode, and in durable
// mode with each DurableScope. No client may run a write twice; no durable
// write acknowledged may be lost; every call returns within its deadline
// and a margin; the clients' logs never quote the password. On failure
// the seed is printed: REDISKIT_FAULT_SEED=<seed> replays the same faults.
func TestRandomFaults(t *testing.T) {
	seed, duration := faultSettings(t)
	t.Logf("seed %d (REDISKIT_FAULT_SEED=%d replays it), faults for %v", seed, seed, duration)
	defer func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: REDISKIT_FAULT_SEED=%d REDISKIT_FAULT_DURATION=%v go test -race -run TestRandomFaults ./sentinel/", seed, seed, duration)
		}
	}()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	const password = "f4ult-s3cret"
	ctx := testkit.Context(t, duration+3*time.Minute)
	l := lab.New(t, lab.Config{Replicas: 2, Sentinels: 3, Partitions: true, Password: password,
		ExtraConfig: []string{"appendonly yes", "appendfsync always"}})

	var logs testkit.Buffer
	type writer struct {
		name string
		c    *Client
	}
	var clients []writer
	for _, w := range []struct {
		name    string
		durable bool
		scope   DurableScope
	}{{"default", false, DurablePromotable}, {"durable", true, DurablePromotable}, {"durable-strict", true, DurableEveryKnownReplica}} {
		c, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), Password: password,
			Durable: w.durable, DurableScope: w.scope, Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		clients = append(clients, writer{w.name, c})
	}

	faults := faultMenu(ctx, l, rng)
	type result struct {
		acked   []string
		errs    map[string]int
		overrun time.Duration
	}
	results := make([]*result, len(clients))
	placed := errplace.NewTally(typedOutcome) // every error typed, or the command's answer
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const deadline = 2 * time.Second
	for i, w := range clients {
		results[i] = &result{errs: map[string]int{}}
		for k := range 3 {
			key := fmt.Sprintf("ops:%s:%d", w.name, k)
			wg.Go(func() {
				for n := 0; ; n++ {
					select {
					case <-stop:
						return
					default:
					}
					id := fmt.Sprintf("%s-%d", key, n)
					octx, cancel := context.WithTimeout(ctx, deadline)
					began := time.Now()
					err := w.c.RPush(octx, key, id).Err()
					took := time.Since(began)
					cancel()
					mu.Lock()
					r := results[i]
					r.overrun = max(r.overrun, took-deadline)
					if err == nil {
						r.acked = append(r.acked, id)
					} else {
						r.errs[errKind(err)]++
						placed.Add(w.name+" RPUSH", err)
					}
					mu.Unlock()
					time.Sleep(time.Duration(2+rng2(n)%4) * time.Millisecond)
				}
			})
		}
	}

	end := time.Now().Add(duration)
	var ran []string
	for time.Now().Before(end) {
		f := faults[rng.IntN(len(faults))]
		hold := 300*time.Millisecond + time.Duration(rng.Int64N(int64(2200*time.Millisecond)))
		began := time.Now()
		if err := f.start(); err != nil {
			t.Logf("%v: %s: %v (skipped)", began.Format("15:04:05.000"), f.name, err)
			continue
		}
		time.Sleep(hold)
		if err := f.end(); err != nil {
			t.Fatalf("%s: undo: %v", f.name, err)
		}
		ran = append(ran, fmt.Sprintf("%s %s for %v", began.Format("15:04:05.000"), f.name, hold.Round(time.Millisecond)))
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		err := l.WaitSettled(sctx)
		cancel()
		if err != nil {
			t.Logf("after %s: not settled within 20 s: %v", f.name, err)
		}
	}
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("faults:\n%s", strings.Join(ran, "\n"))

	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	for _, n := range l.Nodes() {
		if !n.Running() {
			if err := n.Restart(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}
	master, err := l.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range clients {
		r := results[i]
		present := map[string]int{}
		for k := range 3 {
			ids, err := master.Do(ctx, "LRANGE", fmt.Sprintf("ops:%s:%d", w.name, k), 0, -1).StringSlice()
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				present[id]++
			}
		}
		dups, lost := 0, 0
		for _, n := range present {
			dups += n - 1
		}
		for _, id := range r.acked {
			if present[id] == 0 {
				lost++
			}
		}
		t.Logf("%s: %d acknowledged, %d lost, %d duplicated; longest past its deadline: %v; errors: %s",
			w.name, len(r.acked), lost, dups, max(r.overrun, 0).Round(time.Millisecond), errSummary(r.errs))
		if dups != 0 {
			t.Errorf("%s: %d writes ran twice", w.name, dups)
		}
		if w.c.opts.Durable && lost != 0 {
			t.Errorf("%s: %d acknowledged durable writes lost", w.name, lost)
		}
		if r.overrun > time.Second {
			t.Errorf("%s: a call returned %v past its %v deadline", w.name, r.overrun, deadline)
		}
	}
	if strings.Contains(logs.String(), password) {
		t.Error("the clients' logs quote the data password")
	}
	t.Logf("errors placed: %s", placed.Line())
	placed.Check(t)
}

// rng2 is a cheap per-writer jitter.
func rng2(n int) int { return (n*2654435761 + 1) >> 7 }

// faultMenu lists the faults the random test draws from; each picks its
// target when it starts.
func faultMenu(ctx context.Context, l *lab.Lab, rng *rand.Rand) []fault {
	pickNode := func() *lab.Node { return l.Nodes()[rng.IntN(len(l.Nodes()))] }
	master := func() *lab.Node {
		if m, err := l.Master(ctx); err == nil {
			return m
		}
		return pickNode()
	}
	var target *lab.Node
	var sentinel *lab.SentinelNode
	endpoints := func() []lab.Endpoint { return l.Endpoints() }
	var faults []fault
	for _, who := range []struct {
		name string
		pick func() *lab.Node
	}{{"the master", master}, {"a node", pickNode}} {
		faults = append(faults,
			fault{"kill " + who.name,
				func() error { target = who.pick(); return target.Kill() },
				func() error { return target.Restart(ctx) }},
			fault{"pause " + who.name,
				func() error { target = who.pick(); return target.Pause() },
				func() error { return target.Resume() }},
			fault{"black-hole " + who.name,
				func() error { target = who.pick(); target.BlackHole(); return nil },
				func() error { target.Restore(); return nil }},
		)
	}
	for _, mode := range []lab.CutMode{lab.Drop, lab.Refuse} {
		faults = append(faults,
			fault{"partition the master from the rest (" + mode.String() + ")",
				func() error {
					m := master()
					var rest []lab.Endpoint
					for _, e := range endpoints() {
						if e != lab.Endpoint(m) {
							rest = append(rest, e)
						}
					}
					return l.Partition(mode, []lab.Endpoint{m}, rest)
				},
				l.Heal},
			fault{"partition at random (" + mode.String() + ")",
				func() error {
					var a, b []lab.Endpoint
					for _, e := range endpoints() {
						if rng.IntN(2) == 0 {
							a = append(a, e)
						} else {
							b = append(b, e)
						}
					}
					return l.Partition(mode, a, b)
				},
				l.Heal},
		)
	}
	faults = append(faults,
		fault{"restart a sentinel",
			func() error {
				sentinel = l.Sentinels()[rng.IntN(len(l.Sentinels()))]
				return sentinel.Kill()
			},
			func() error { return sentinel.Restart(ctx) }},
		fault{"fail over",
			func() error {
				fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
				defer cancel()
				_, err := l.Failover(fctx)
				return err
			},
			func() error { return nil }},
	)
	return faults
}
