package failure

// The one rule every routed client (sentinel, the standalone client,
// cluster, multidb) applies after work failed on a node with a failure
// signal (no answer, or a refusal that proves it did not run), once it
// knows where the work would go now: re-run it, or say why not. The
// clients differ in how they learn where the work goes (a Sentinel
// switch, a slot map, the active database) and how long they wait for it;
// what may be sent again is decided here, once, so that a later rule
// (exactly-once writes, a cache's in-flight markers) is written once.

// Attempt is what a routed client knows about work that failed.
type Attempt struct {
	// Write is whether the work writes (per the classifier); a
	// transaction writes.
	Write bool
	// NotExecuted is whether the failure proves the work did not run
	// (ProvablyNotExecuted, or NotExecuted for one command).
	NotExecuted bool
	// Moved is whether the topology now sends the work to another node
	// than the one it failed on (a new master, another database).
	Moved bool
	// Again is whether the node it failed on may serve it now: it
	// refused it with TRYAGAIN, LOADING or CLUSTERDOWN and the hold
	// allows a pause, or it is a standalone primary that answers again
	// after a restart.
	Again bool
	// Reran is whether a read was already re-run once.
	Reran bool
	// Strict is the client's StrictWrites: a write is never sent twice,
	// even when it provably did not run.
	Strict bool
	// ExactlyOnce is whether every write of the work is in its
	// exactly-once form (package exactlyonce): sent again, it returns the
	// first run's reply instead of running twice.
	ExactlyOnce bool
}

// Verdict is what follows a failed attempt.
type Verdict int

const (
	// Fail returns the error, said of the node the work failed on (a
	// *NodeError saying whether it may have run).
	Fail Verdict = iota
	// Rerun sends the work again, where the topology now sends it.
	Rerun
	// Refuse returns the client's "moved and may have run" error
	// (*MasterChangedError, *DatabaseChangedError): the work may have run
	// on the node it left, and running it again could run it twice.
	Refuse
)

// Next decides what follows a failed attempt:
//   - work that provably did not run (a write only unless Strict) is
//     re-run when it now goes to another node or its node may serve it
//     again, as often as the client's hold allows: nothing ran, so
//     nothing can run twice;
//   - any other read is re-run once, wherever it goes now (a read twice is
//     harmless; twice is enough to step over one failed node);
//   - an exactly-once write is re-run whatever its failure, wherever it
//     goes now (its node again included), as often as the client's hold
//     and the caller's context allow: its token makes a second run return
//     the first one's reply (StrictWrites does not stop it: nothing runs
//     twice);
//   - any other write is never re-run: when the work now goes elsewhere it
//     is refused with the client's "changed" error, else it fails on its
//     node, both saying it may have run.
func Next(a Attempt) Verdict {
	switch {
	case a.Write && a.ExactlyOnce:
		return Rerun
	case a.NotExecuted && !(a.Write && a.Strict) && (a.Moved || a.Again):
		return Rerun
	case !a.Write && !a.Reran:
		return Rerun
	case !a.Write:
		return Fail
	case a.Moved:
		return Refuse
	default:
		return Fail
	}
}

func (v Verdict) String() string {
	switch v {
	case Fail:
		return "fail"
	case Rerun:
		return "rerun"
	case Refuse:
		return "refuse"
	}
	return "unknown"
}
