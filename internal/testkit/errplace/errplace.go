package errplace

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
)

// Typed is a package's typed errors: the kind of err's (its type's name)
// and whether it says the work may have run; ok false for an error of no
// type of the package.
type Typed func(err error) (kind string, mayHaveRun, ok bool)

// Placement is what an error says of itself.
type Placement struct {
	// Placed: typed, an answer, or nil.
	Placed bool
	// Kind names it: the typed error's kind, "answer", "ok" for nil; for
	// an unplaced error its failure class (timeout, context, network,
	// CLUSTERDOWN, redirect, ...).
	Kind string
	// Typed is true for one of the package's errors; MayHaveRun is then
	// what it says. An answer ran (true); an unplaced error may have.
	Typed      bool
	MayHaveRun bool
}

// String is the kind, with whether a typed error says the work may have
// run, "unplaced" before an unplaced error's class.
func (p Placement) String() string {
	switch {
	case !p.Placed:
		return "unplaced " + p.Kind
	case p.Typed && p.MayHaveRun:
		return p.Kind + "(may have run)"
	case p.Typed:
		return p.Kind + "(did not run)"
	}
	return p.Kind
}

// Place places err.
func Place(err error, typed Typed) Placement {
	if err == nil {
		return Placement{Placed: true, Kind: "ok", MayHaveRun: true}
	}
	if kind, ran, ok := typed(err); ok {
		return Placement{Placed: true, Kind: kind, Typed: true, MayHaveRun: ran}
	}
	if failure.Answer(err) {
		return Placement{Placed: true, Kind: "answer", MayHaveRun: true}
	}
	if failure.ExactlyOnceVerdict(err) {
		// The exactly-once path's own refusal, before anything was sent.
		return Placement{Placed: true, Kind: "exactly-once refusal", Typed: true}
	}
	return Placement{Kind: Class(err), MayHaveRun: true}
}

// Class names the failure class of an error no type placed, for a
// report.
func Class(err error) string {
	switch {
	case failure.ClusterDown(err):
		return "CLUSTERDOWN"
	case failure.TryAgain(err):
		return "TRYAGAIN"
	case redis.IsReadOnlyError(err):
		return "READONLY"
	case redis.IsExecAbortError(err):
		return "EXECABORT"
	case failure.NotExecuted(err):
		if _, ok := failure.ParseRedirect(err); ok {
			return "redirect"
		}
		return "other refusal"
	case failure.ContextError(err):
		return "context"
	case failure.Timeout(err):
		return "timeout"
	case failure.Network(err):
		return "network"
	}
	return "other"
}

// Tally counts the placements of many calls' errors, from any number of
// goroutines, and keeps the first unplaced ones for the report.
type Tally struct {
	typed Typed

	mu       sync.Mutex
	kinds    map[string]int
	unplaced []string
	nUnplace int
}

// NewTally returns a Tally placing errors with typed.
func NewTally(typed Typed) *Tally { return &Tally{typed: typed, kinds: map[string]int{}} }

// keepUnplaced is how many unplaced errors a Tally quotes.
const keepUnplaced = 10

// Add places err, the error of the call what names (a command, "pipeline
// exec", ...), and counts it; nil and redis.Nil are not counted.
func (t *Tally) Add(what string, err error) Placement {
	p := Place(err, t.typed)
	if err == nil || failure.IsNil(err) { // a miss: not worth a count
		return p
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.kinds[p.String()]++
	if !p.Placed {
		t.nUnplace++
		if len(t.unplaced) < keepUnplaced {
			t.unplaced = append(t.unplaced, fmt.Sprintf("%s: %T %v", what, err, err))
		}
	}
	return p
}

// AddCmds adds the error of each command of a pipeline or transaction
// (its MULTI and EXEC, which go-redis gives no reply of their own, left
// out), and the error its Exec returned.
func (t *Tally) AddCmds(what string, cmds []redis.Cmder, exec error) {
	for _, q := range cmds {
		if n := q.Name(); n == "multi" || n == "exec" {
			continue
		}
		t.Add(what+" "+q.Name(), q.Err())
	}
	t.Add(what+" exec", exec)
}

// Unplaced is the count of unplaced errors.
func (t *Tally) Unplaced() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nUnplace
}

// Line is the counts by kind, in a stable order.
func (t *Tally) Line() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return KindsLine(t.kinds)
}

// Check fails the test if any error was unplaced, quoting the first ones.
func (t *Tally) Check(tb testing.TB) {
	tb.Helper()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.nUnplace > 0 {
		tb.Errorf("%d errors no type of the package places (errors.As), e.g.:\n  %s\nall: %s",
			t.nUnplace, strings.Join(t.unplaced, "\n  "), KindsLine(t.kinds))
	}
}

// KindsLine is a count of kinds in a stable order.
func KindsLine(kinds map[string]int) string {
	if len(kinds) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, kinds[k]))
	}
	return strings.Join(parts, ", ")
}

// Require fails the test at once if err is not placed, or is placed with
// a different may-have-run than mayHaveRun says (nil: either); it returns
// the placement.
func Require(tb testing.TB, what string, err error, typed Typed, mayHaveRun *bool) Placement {
	tb.Helper()
	p := Place(err, typed)
	if !p.Placed {
		tb.Fatalf("%s: %T %v: %s", what, err, err, p)
	}
	if mayHaveRun != nil && p.MayHaveRun != *mayHaveRun {
		tb.Fatalf("%s: %v: %s, want may-have-run %v", what, err, p, *mayHaveRun)
	}
	return p
}
