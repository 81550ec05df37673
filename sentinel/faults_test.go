//go:build unix

package sentinel

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

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
	seed, duration := testkit.FaultSettings(t)
	t.Logf("seed %d (REDISKIT_FAULT_SEED=%d replays it), faults for %v", seed, seed, duration)
	defer func() {
		if t.Failed() {
			t.Logf("FAILED with seed %d: REDISKIT_FAULT_SEED=%d REDISKIT_FAULT_DURATION=%v go test -race -run TestRandomFaults ./sentinel/", seed, seed, duration)
		}
	}()
	rng := testkit.FaultRand(seed)
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

	faults := faultMenu(ctx, l)
	type result struct {
		acked   []string
		errs    map[string]int
		overrun time.Duration
	}
	results := make([]*result, len(clients))
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
					}
					mu.Unlock()
					time.Sleep(testkit.WriterPause(n))
				}
			})
		}
	}

	run := testkit.RunFaults(t, rng, duration, faults, func() error {
		sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		return l.WaitSettled(sctx)
	})
	time.Sleep(time.Second)
	close(stop)
	wg.Wait()
	t.Logf("faults:\n%s\n%s", strings.Join(run.Lines, "\n"), run.Summary())

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
}

// faultMenu lists the faults the random test draws from; each picks its
// target when it starts, with the test's generator.
func faultMenu(ctx context.Context, l *lab.Lab) []testkit.Fault {
	pickNode := func(rng *rand.Rand) *lab.Node { return l.Nodes()[rng.IntN(len(l.Nodes()))] }
	master := func(rng *rand.Rand) *lab.Node {
		if m, err := l.Master(ctx); err == nil {
			return m
		}
		return pickNode(rng)
	}
	var target *lab.Node
	var sentinel *lab.SentinelNode
	endpoints := func() []lab.Endpoint { return l.Endpoints() }
	var faults []testkit.Fault
	for _, who := range []struct {
		name string
		pick func(*rand.Rand) *lab.Node
	}{{"the master", master}, {"a node", pickNode}} {
		faults = append(faults,
			testkit.NewFault("kill "+who.name,
				func(rng *rand.Rand) error { target = who.pick(rng); return target.Kill() },
				func() error { return target.Restart(ctx) }),
			testkit.NewFault("pause "+who.name,
				func(rng *rand.Rand) error { target = who.pick(rng); return target.Pause() },
				func() error { return target.Resume() }),
			testkit.NewFault("black-hole "+who.name,
				func(rng *rand.Rand) error { target = who.pick(rng); target.BlackHole(); return nil },
				func() error { target.Restore(); return nil }),
		)
	}
	for _, mode := range []lab.CutMode{lab.Drop, lab.Refuse} {
		faults = append(faults,
			testkit.NewFault("partition the master from the rest ("+mode.String()+")",
				func(rng *rand.Rand) error {
					m := master(rng)
					var rest []lab.Endpoint
					for _, e := range endpoints() {
						if e != lab.Endpoint(m) {
							rest = append(rest, e)
						}
					}
					return l.Partition(mode, []lab.Endpoint{m}, rest)
				},
				l.Heal),
			testkit.NewFault("partition at random ("+mode.String()+")",
				func(rng *rand.Rand) error {
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
				l.Heal),
		)
	}
	faults = append(faults,
		testkit.NewFault("restart a sentinel",
			func(rng *rand.Rand) error {
				sentinel = l.Sentinels()[rng.IntN(len(l.Sentinels()))]
				return sentinel.Kill()
			},
			func() error { return sentinel.Restart(ctx) }),
		testkit.NewFault("fail over",
			func(*rand.Rand) error {
				fctx, cancel := context.WithTimeout(ctx, 15*time.Second)
				defer cancel()
				_, err := l.Failover(fctx)
				return err
			},
			func() error { return nil }),
	)
	return faults
}
