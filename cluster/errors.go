package cluster

import (
	"errors"
	"fmt"
	"strings"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
)

// ErrClosed is returned by calls on a closed Client.
var ErrClosed = errors.New("cluster: client closed")

// ErrSubscriptionMoved is matched (errors.Is) by the error a
// subscription's Receive returns when the client moved it to another node
// (the slot's new master, or another master for classic pub/sub): go-redis's
// PubSub subscribes again on its next call, and messages published during
// the move may be lost. Nothing to wait out: call Receive again at once.
// The same error as sentinel.ErrSubscriptionMoved and
// multidb.ErrSubscriptionMoved.
var ErrSubscriptionMoved = routing.ErrSwitched

// MasterChangedError is a write whose outcome is unknown (a timeout, or
// the connection lost after it was sent) on a master the cluster has since
// replaced: it was not run again, because it may have run on the old
// master. Check the data, or make the write idempotent, before repeating
// it.
type MasterChangedError struct {
	Slot            int
	OldMaster       string
	NewMaster       string
	MayHaveExecuted bool
	Cause           error
}

func (e *MasterChangedError) Error() string {
	ran := "may have executed"
	if !e.MayHaveExecuted {
		ran = "did not execute"
	}
	return fmt.Sprintf("cluster: slot %d: master changed from %s to %s; the write %s there and was not run again: %v",
		e.Slot, e.OldMaster, e.NewMaster, ran, e.Cause)
}

func (e *MasterChangedError) Unwrap() error { return e.Cause }

// NodeError is work that failed on a node without an answer from it (no
// connection, a connection lost, a timeout, the caller's context's end),
// when no other node took its slot, or that the node kept refusing, until
// WriteHoldTimeout or the caller's deadline, with a reply that proves it
// did not run (TRYAGAIN, CLUSTERDOWN, LOADING, MOVED past MaxRedirects, a
// transaction's EXECABORT; Err is that reply, MayHaveExecuted false). In
// a pipeline, each command that failed so has its own, naming the node it
// was sent to and its slot; a transaction's say the same of all its
// commands (see the package documentation, "The errors a caller sees").
type NodeError struct {
	Addr            string
	Slot            int // -1 for a command without a key
	Write           bool
	MayHaveExecuted bool
	Err             error
}

func (e *NodeError) Error() string {
	what := "read"
	if e.Write {
		what = "write"
	}
	ran := "did not execute"
	if e.MayHaveExecuted {
		ran = "may have executed"
	}
	return fmt.Sprintf("cluster: %s on %s (slot %d) failed and %s: %v", what, e.Addr, e.Slot, ran, e.Err)
}

func (e *NodeError) Unwrap() error { return e.Err }

// NoMasterError is work refused because no master serves its slot: the
// map has none, or the shard's master failed and no replica was promoted
// within Config.WriteHoldTimeout; or because its master is cut off from
// its replicas and the majority (Isolated: see "Split brain" in the
// package documentation) and neither was it replaced nor did the signs
// clear within WriteHoldTimeout. Nothing was sent: running it again is
// safe.
type NoMasterError struct {
	Slot int
	// Isolated is the address of the master held as cut off, with why
	// (IsolatedReason); "" when the slot had no master to write to.
	Isolated, IsolatedReason string
	Cause                    error
}

func (e *NoMasterError) Error() string {
	if e.Isolated != "" {
		return fmt.Sprintf("cluster: write of slot %d not sent: its master %s is cut off (%s), and the cluster may replace it and lose what it acknowledges (held: %v); running it again is safe",
			e.Slot, e.Isolated, e.IsolatedReason, e.Cause)
	}
	if e.Cause == nil {
		return fmt.Sprintf("cluster: no master serves slot %d", e.Slot)
	}
	return fmt.Sprintf("cluster: no master serves slot %d: %v", e.Slot, e.Cause)
}

func (e *NoMasterError) Unwrap() error { return e.Cause }

// CrossSlotError is a transaction (TxPipeline, Watch) refused before it
// was sent because its keys hash to more than one slot: a cluster runs a
// transaction on one node, and splitting it would lose its atomicity. Put
// the keys under one hash tag ("{user:1}:a", "{user:1}:b").
type CrossSlotError struct {
	Slots []int
}

func (e *CrossSlotError) Error() string {
	s := make([]string, len(e.Slots))
	for i, v := range e.Slots {
		s[i] = fmt.Sprint(v)
	}
	return "cluster: transaction keys hash to slots " + strings.Join(s, ", ") + ": a transaction must stay in one slot (use a hash tag); nothing was sent"
}

// SubscriptionError is every error a subscription's connection reports
// to the PubSub Subscribe, PSubscribe and SSubscribe return (Receive,
// ReceiveTimeout, Ping, the end of Channel...): it names the node, says
// whether the connection could not be made, timed out, was lost or moved
// to the slot's new master (errors.Is ErrSubscriptionMoved), and unwraps
// to the cause (a *NoMasterError, a *SubscribeCrossSlotError, ...); the
// PubSub subscribes again by itself on its next call. The same type in
// packages sentinel, cluster and multidb.
type SubscriptionError = failure.SubscriptionError
