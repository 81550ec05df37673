package sentinel

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
		nde *NotDurableError
		mce *MasterChangedError
		ne  *NodeError
		whe *WriteHeldError
		nre *NoReplicaError
		de  *DiscoveryError
		ce  *CursorError
	)
	switch {
	case errors.As(err, &nde): // first: its cause may be of another type
		return "NotDurableError", !nde.NotSent, true
	case errors.As(err, &mce):
		return "MasterChangedError", mce.MayHaveExecuted, true
	case errors.As(err, &ne):
		return "NodeError", ne.MayHaveExecuted, true
	case errors.As(err, &whe):
		return "WriteHeldError", false, true // not sent
	case errors.As(err, &nre):
		return "NoReplicaError", false, true
	case errors.As(err, &de):
		return "DiscoveryError", false, true
	case errors.As(err, &ce):
		return "CursorError", false, true
	}
	return "", true, false
}

// TestErrorsPlaced: pipelines, transactions, Watch and single writes to a
// master stalled past their callers' deadlines fail with a typed error,
// and those that ran once the stall ended said they may have; and under a workload of every kind of call, with deadlines of
// their own and some cancelled, while the master is black-holed, then
// killed and replaced, every error is typed or the command's answer, and
// no write whose call said it did not run is found.
func TestErrorsPlaced(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, Proxy: true})
	c, _ := newTestClient(t, l, nil)
	master, err := l.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	// Writes that stall the master past their callers' deadline, then
	// run (under the sentinels' down-after: no failover).
	stalled := errplace.StallCalls(ctx, t, c, typedOutcome, "stalled", 100*time.Millisecond)
	// On a loaded machine a stall can outlast down-after: what ran on a
	// master since replaced is not where the client reads.
	stalled.CheckRan(ctx, t, c, c.Master() == master.Addr())

	// The workload, through a black hole and a master killed.
	w := errplace.NewWorkload(c, typedOutcome, []string{"a", "b"})
	w.Start(ctx, 3, 400*time.Millisecond)
	defer w.Stop()
	time.Sleep(300 * time.Millisecond)
	master.BlackHole()
	time.Sleep(600 * time.Millisecond)
	master.Restore()
	time.Sleep(300 * time.Millisecond)
	if err := master.Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 30*time.Second, "a new master", func() bool {
		m, err := l.Master(ctx)
		return err == nil && m != master
	})
	time.Sleep(500 * time.Millisecond)
	w.Stop()
	if err := master.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the client to write again", func() bool {
		return c.RPush(ctx, "after", 2).Err() == nil
	})
	w.Check(ctx, t)
}
