package testkit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Versions is a staleness checker's record of acknowledged writes: a
// writer stores increasing versions in keys and records each one when its
// write is acknowledged; a reader checks what it read. A read that began
// after version w of its key was acknowledged and returned a version
// older than w is stale, by the time since the first such w was
// acknowledged.
type Versions struct {
	mu           sync.Mutex
	acked        map[string][]ack
	reads, stale int
	worst        time.Duration
}

type ack struct {
	v  int64
	at time.Time
}

// Acked records that key holds version v since at (the reply's arrival).
// Versions of one key must be recorded in increasing order.
func (vs *Versions) Acked(key string, v int64, at time.Time) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.acked == nil {
		vs.acked = map[string][]ack{}
	}
	vs.acked[key] = append(vs.acked[key], ack{v, at})
}

// Check records a read of key that began at start and returned version
// got (0: none), and returns by how much it was stale (0: it was not).
func (vs *Versions) Check(key string, start time.Time, got int64) time.Duration {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.reads++
	as := vs.acked[key]
	// The first write acknowledged before start whose version is newer
	// than what was read.
	i := sort.Search(len(as), func(i int) bool { return as[i].v > got })
	if i == len(as) || !as[i].at.Before(start) {
		return 0
	}
	by := start.Sub(as[i].at)
	vs.stale++
	vs.worst = max(vs.worst, by)
	return by
}

// StalenessReport is what a checker saw.
type StalenessReport struct {
	Reads, Stale int
	Worst        time.Duration // the stalest read's staleness
}

// Report returns the counts so far.
func (vs *Versions) Report() StalenessReport {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return StalenessReport{Reads: vs.reads, Stale: vs.stale, Worst: vs.worst}
}

// StalenessRun is one run of the staleness checker: one writer storing
// increasing versions in Keys (a write a millisecond, in turn), Readers
// goroutines reading them through the client under test, and Fault run
// once, a third of the way through Duration.
type StalenessRun struct {
	Keys     []string
	Duration time.Duration
	Readers  int
	// ReadPause is how long each reader sleeps between reads: 0 for
	// readers that saturate the CPUs (a benchmark's worst case); a test in
	// make test pauses, so that the packages tested beside it keep their
	// share of the machine.
	ReadPause time.Duration
	// Write stores version v in key; Read returns what key holds (a
	// version, or redis.Nil for none). A failed write is not recorded
	// (its version is skipped); a failed read is not checked.
	Write func(ctx context.Context, key string, v int64) error
	Read  func(ctx context.Context, key string) (string, error)
	// Fault, when set, is run from the caller's goroutine while the
	// writer and readers go on; the run ends Duration after it began, or
	// when Fault returns if later.
	Fault func()
}

// StalenessKeys returns n keys named prefix0..prefix(n-1).
func StalenessKeys(prefix string, n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = prefix + strconv.Itoa(i)
	}
	return ks
}

// Run runs the checker and returns what it saw; the error is a read that
// returned no version.
func (r StalenessRun) Run(ctx context.Context) (StalenessReport, error) {
	var vs Versions
	ctx, cancel := context.WithTimeout(ctx, r.Duration)
	defer cancel()
	var wg sync.WaitGroup
	wg.Go(func() { r.write(ctx, &vs) })
	errs := make([]error, r.Readers)
	for g := range r.Readers {
		wg.Go(func() { errs[g] = r.read(ctx, &vs, g) })
	}
	if r.Fault != nil {
		select {
		case <-ctx.Done():
		case <-time.After(r.Duration / 3):
			r.Fault()
		}
	}
	wg.Wait()
	return vs.Report(), errors.Join(errs...)
}

// write is the writer: a version a millisecond, the keys in turn, each
// acknowledged one recorded.
func (r StalenessRun) write(ctx context.Context, vs *Versions) {
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	versions := make([]int64, len(r.Keys))
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		k := i % len(r.Keys)
		versions[k]++
		// A write refused, or whose fate is unknown, is not recorded:
		// the next one uses a higher version all the same.
		if err := r.Write(ctx, r.Keys[k], versions[k]); err == nil {
			vs.Acked(r.Keys[k], versions[k], time.Now())
		}
	}
}

// read is reader g: the keys in turn from the g-th, each read checked,
// until ctx ends or a read returns no version.
func (r StalenessRun) read(ctx context.Context, vs *Versions, g int) error {
	for i := g; ctx.Err() == nil; i++ {
		key := r.Keys[i%len(r.Keys)]
		start := time.Now()
		s, err := r.Read(ctx, key)
		if errors.Is(err, redis.Nil) {
			s, err = "0", nil
		}
		if err != nil {
			continue // a fault's failures: not a read
		}
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("%s: %q is no version", key, s)
		}
		vs.Check(key, start, v)
		if r.ReadPause > 0 {
			time.Sleep(r.ReadPause)
		}
	}
	return nil
}

// Check logs the report of a scenario and fails t unless the run made at
// least 100 reads and none was stale by more than limit.
func (r StalenessReport) Check(t testing.TB, scenario string, limit time.Duration) {
	t.Helper()
	t.Logf("%s: %d reads, %d stale (%.2f %%), worst %v", scenario, r.Reads, r.Stale,
		100*float64(r.Stale)/float64(max(r.Reads, 1)), r.Worst.Round(time.Microsecond))
	if r.Reads < 100 {
		t.Fatalf("%s: only %d reads", scenario, r.Reads)
	}
	if r.Worst > limit {
		t.Errorf("%s: a read stale by %v, more than %v", scenario, r.Worst, limit)
	}
}

// SwitchLag is how much later the cached client moved to a new master
// than the writer did (cached and wrote: when each last did; zero when it
// did not in the run): how long the cached client could still serve the
// old master's entries while the writer wrote to the new one, which a
// staleness bound through a failover adds. Zero when either never
// switched: a writer that did not wrote nothing to the new master, and a
// cached client that did not read nothing from its cache there (its
// entries on the old master ended with their tracking, or are
// invalidated as the old master replicates).
func SwitchLag(cached, wrote time.Time) time.Duration {
	if cached.IsZero() || wrote.IsZero() {
		return 0
	}
	return max(cached.Sub(wrote), 0)
}
