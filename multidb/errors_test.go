package multidb

import (
	"errors"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/internal/testkit/errplace"
	"github.com/rediskit/rediskit/lab"
)

// typedOutcome is what a failed call of this client says of itself: the
// kind of its typed error and whether the work may have run; ok is false
// for an error of no type of the package (errplace.Typed).
func typedOutcome(err error) (kind string, mayHaveRun, ok bool) {
	var (
		de  *DatabaseError
		dce *DatabaseChangedError
		ue  *UnavailableError
		ce  *CursorError
	)
	switch {
	case errors.As(err, &dce):
		return "DatabaseChangedError", true, true // a write that may have run, not re-run
	case errors.As(err, &de):
		return "DatabaseError", de.MayHaveExecuted, true
	case errors.As(err, &ue):
		return "UnavailableError", false, true // not sent
	case errors.As(err, &ce):
		return "CursorError", false, true
	}
	return "", true, false
}

// placeOps fails the test on an error of ops that no type of the package
// places.
func placeOps(t *testing.T, ops []op) {
	t.Helper()
	tally := errplace.NewTally(typedOutcome)
	for _, o := range ops {
		tally.Add(o.key, o.err)
	}
	t.Logf("errors: %s", tally.Line())
	tally.Check(t)
}

// TestErrorsPlaced: pipelines, transactions, Watch and single writes to
// the active database stalled past their callers' deadlines fail with a
// typed error, and those that ran once the stall ended said they may
// have; under a workload of every
// kind of call (deadlines of their own, some cancelled) while the active
// database is black-holed, then killed (the client switches), every error
// is typed or the command's answer, and no write whose call said it did
// not run is found.
func TestErrorsPlaced(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	nodes := standalone(t, 2, lab.Config{Proxy: true})
	c, log := newClient(t, fast(Config{}), nodes, 10, 5)
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	// Writes that stall the database past their callers' deadline (for
	// less than a health check's timeout), then run.
	stalled := errplace.StallCalls(ctx, t, c, typedOutcome, "stalled", 60*time.Millisecond)
	// On a loaded machine a stall can outlast the health checks' timeout:
	// after a switch, what ran on db0 is not where the client reads.
	log.flush(t, c)
	stalled.CheckRan(ctx, t, c, len(log.switches()) == 0)

	w := errplace.NewWorkload(c, typedOutcome, []string{"a", "b"})
	w.Start(ctx, 3, 400*time.Millisecond)
	defer w.Stop()
	time.Sleep(300 * time.Millisecond)
	nodes[0].BlackHole()
	time.Sleep(300 * time.Millisecond)
	nodes[0].Restore()
	time.Sleep(300 * time.Millisecond)
	if err := nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "a switch to db1", func() bool { return c.Active() == "db1" })
	time.Sleep(300 * time.Millisecond)
	w.Check(ctx, t)
}
