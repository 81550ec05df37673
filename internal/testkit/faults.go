package testkit

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The random fault tests (sentinel's and cluster's TestRandomFaults) share
// their settings, their generator and their loop: a fault drawn at random,
// held, undone, the topology given time to settle, again until the time
// is up.

// DefaultFaultDuration is how long a random fault test injects faults
// when REDISKIT_FAULT_DURATION is unset: what make test runs.
const DefaultFaultDuration = 20 * time.Second

// FaultSettings returns a random fault test's seed and how long it
// injects faults: REDISKIT_FAULT_SEED (default: the clock) and
// REDISKIT_FAULT_DURATION (a Go duration; default DefaultFaultDuration;
// make faults runs longer).
func FaultSettings(t testing.TB) (uint64, time.Duration) {
	t.Helper()
	seed := uint64(time.Now().UnixNano()) //nolint:gosec // a clock reading, not negative
	if s := os.Getenv("REDISKIT_FAULT_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("REDISKIT_FAULT_SEED=%q: %v", s, err)
		}
		seed = v
	}
	d := DefaultFaultDuration
	if s := os.Getenv("REDISKIT_FAULT_DURATION"); s != "" {
		v, err := time.ParseDuration(s)
		if err != nil {
			t.Fatalf("REDISKIT_FAULT_DURATION=%q: %v", s, err)
		}
		d = v
	}
	return seed, d
}

// FaultRand is the generator of a random fault test's seed: every fault
// drawn, its hold and its target come from it, so a seed replays the
// same sequence.
func FaultRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)) //nolint:gosec // a replayable test sequence
}

// Fault is one fault a random fault test injects: Start picks its target
// with the test's generator (the same number of draws whatever happens, so
// that the sequence replays) and injects it; End undoes it.
type Fault struct {
	Name  string
	Start func(r *rand.Rand) error
	End   func() error
}

// FaultRun is what RunFaults injected: a line per fault (when, what, how
// long), and how many times each fault ran and was skipped (its Start
// failed).
type FaultRun struct {
	Lines   []string
	Ran     map[string]int
	Skipped map[string]int
}

// Summary counts the faults by name, in a stable order.
func (fr FaultRun) Summary() string {
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(fr.Ran)) {
		parts = append(parts, fmt.Sprintf("%s %d", name, fr.Ran[name]))
	}
	total := 0
	for _, n := range fr.Ran {
		total += n
	}
	s := fmt.Sprintf("%d faults: %s", total, strings.Join(parts, ", "))
	if len(fr.Skipped) > 0 {
		var sk []string
		for _, name := range slices.Sorted(maps.Keys(fr.Skipped)) {
			sk = append(sk, fmt.Sprintf("%s %d", name, fr.Skipped[name]))
		}
		s += "; skipped: " + strings.Join(sk, ", ")
	}
	return s
}

// RunFaults injects faults from menu one at a time until duration has
// passed: each drawn with r, held for 0.3-2.5 s (also drawn), undone,
// then settle is called (the topology given time to agree again; its
// error is logged, not fatal: the next fault starts anyway). A fault whose
// Start fails is logged and skipped; one whose End fails fails the test.
func RunFaults(t testing.TB, r *rand.Rand, duration time.Duration, menu []Fault, settle func() error) FaultRun {
	t.Helper()
	fr := FaultRun{Ran: map[string]int{}, Skipped: map[string]int{}}
	end := time.Now().Add(duration)
	for time.Now().Before(end) {
		f := menu[r.IntN(len(menu))]
		hold := 300*time.Millisecond + time.Duration(r.Int64N(int64(2200*time.Millisecond)))
		began := time.Now()
		if err := f.Start(r); err != nil {
			t.Logf("%v: %s: %v (skipped)", began.Format("15:04:05.000"), f.Name, err)
			fr.Skipped[f.Name]++
			continue
		}
		time.Sleep(hold)
		if err := f.End(); err != nil {
			t.Fatalf("%s: undo: %v", f.Name, err)
		}
		fr.Ran[f.Name]++
		fr.Lines = append(fr.Lines, fmt.Sprintf("%s %s for %v", began.Format("15:04:05.000"), f.Name, hold.Round(time.Millisecond)))
		if err := settle(); err != nil {
			t.Logf("after %s: not settled: %v", f.Name, err)
		}
	}
	return fr
}

// NewFault is a Fault: name, how to start it, how to undo it.
func NewFault(name string, start func(r *rand.Rand) error, end func() error) Fault {
	return Fault{Name: name, Start: start, End: end}
}

// WriterPause is how long a random fault test's writer sleeps after its
// n-th write: 2-5 ms, a cheap jitter that keeps writers out of step.
func WriterPause(n int) time.Duration {
	return time.Duration(2+((n*2654435761+1)>>7)%4) * time.Millisecond
}

// OnlyFaults keeps, when REDISKIT_FAULT_ONLY is set, only the faults of
// menu whose name holds it ("double fault", "pause"): replaying one kind
// of fault. It skips the test when none does (make faults runs two tests,
// whose faults differ).
func OnlyFaults(t testing.TB, menu []Fault) []Fault {
	t.Helper()
	only := os.Getenv("REDISKIT_FAULT_ONLY")
	if only == "" {
		return menu
	}
	menu = slices.DeleteFunc(slices.Clone(menu), func(f Fault) bool { return !strings.Contains(f.Name, only) })
	if len(menu) == 0 {
		t.Skipf("REDISKIT_FAULT_ONLY=%q names none of this test's faults", only)
	}
	return menu
}
