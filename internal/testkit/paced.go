package testkit

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// PacedRun is what callers paced by Paced did: the operations that
// succeeded and their latencies, sorted.
type PacedRun struct {
	Acked int
	Took  []time.Duration
}

// Quantile is the q quantile of the latencies (0 when none succeeded).
func (r PacedRun) Quantile(q float64) time.Duration {
	if len(r.Took) == 0 {
		return 0
	}
	return r.Took[min(len(r.Took)-1, int(q*float64(len(r.Took))))]
}

// Paced runs callers goroutines for d, each calling do every interval, or
// at once when it has fallen behind: one operation in flight per caller,
// as a request handler has. The callers' ticks are spread over the
// interval, as independent requests arrive. do gets the caller's number
// and its operation's.
func Paced(ctx context.Context, callers int, interval, d time.Duration, do func(ctx context.Context, caller, i int) error) PacedRun {
	var mu sync.Mutex
	var run PacedRun
	var wg sync.WaitGroup
	start := time.Now()
	for g := range callers {
		wg.Go(func() {
			next := start.Add(interval * time.Duration(g) / time.Duration(callers))
			for i := 0; ; i++ {
				time.Sleep(time.Until(next))
				if time.Since(start) >= d || ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				err := do(ctx, g, i)
				took := time.Since(t0)
				if err == nil {
					mu.Lock()
					run.Acked++
					run.Took = append(run.Took, took)
					mu.Unlock()
				}
				next = next.Add(interval)
			}
		})
	}
	wg.Wait()
	slices.Sort(run.Took)
	return run
}

// CheckPacedAlike fails t unless got did as well as plain, within 5 % of
// plain's acknowledged operations, p50 and p90, plus the difference
// between plain and twin: two runs of the same client at the same time,
// whose difference is what the machine's load alone made of the same
// work in the same run.
func CheckPacedAlike(t *testing.T, plain, twin, got PacedRun) {
	t.Helper()
	if plain.Acked == 0 || twin.Acked == 0 {
		t.Fatalf("the plain clients acknowledged %d and %d operations", plain.Acked, twin.Acked)
	}
	if floor := plain.Acked - plain.Acked/20 - max(plain.Acked-twin.Acked, twin.Acked-plain.Acked); got.Acked < floor {
		t.Errorf("%d operations acknowledged, plain %d and %d: want at least %d", got.Acked, plain.Acked, twin.Acked, floor)
	}
	for _, q := range []float64{0.5, 0.9} {
		pq, tq, gq := plain.Quantile(q), twin.Quantile(q), got.Quantile(q)
		if bound := pq + pq/20 + max(pq-tq, tq-pq); gq > bound {
			t.Errorf("p%.0f: %v, plain %v and %v: want at most %v", q*100, gq, pq, tq, bound)
		}
	}
}

// PacedAlike runs plain, twin (the same client as plain, another
// instance) and got side by side, each with Paced, logs what each did and
// checks got against the two with CheckPacedAlike.
func PacedAlike(ctx context.Context, t *testing.T, callers int, interval, d time.Duration, plain, twin, got func(ctx context.Context, caller, i int) error) {
	t.Helper()
	names := []string{"plain", "plain twin", "tested"}
	runs := make([]PacedRun, 3)
	var wg sync.WaitGroup
	for i, do := range []func(context.Context, int, int) error{plain, twin, got} {
		wg.Go(func() { runs[i] = Paced(ctx, callers, interval, d, do) })
	}
	wg.Wait()
	for i, r := range runs {
		t.Logf("%-10s acknowledged %d, p50 %v, p90 %v", names[i], r.Acked, r.Quantile(0.5), r.Quantile(0.9))
	}
	CheckPacedAlike(t, runs[0], runs[1], runs[2])
}
