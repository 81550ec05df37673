package testkit

import (
	"sort"
	"sync"
	"time"
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
