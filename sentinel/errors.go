package sentinel

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/replica"
)

var (
	// ErrClosed is returned by calls on a closed Client. It is go-redis's
	// redis.ErrClosed, so existing checks keep working.
	ErrClosed = redis.ErrClosed

	// ErrNoReplica matches a *NoReplicaError: under ReadFrom Replica, no
	// replica may serve the read. ReplicaPreferred and Nearest read from
	// the master instead.
	ErrNoReplica error = routing.NewTransient("sentinel: no replica may serve the read (ReadFrom is replica only)", DefaultRetryAfter, false)

	// ErrFailoverInProgress is returned for a write held during a failover
	// (the old master is about to be demoted) when the new master was not
	// confirmed within Config.FailoverHold or the caller's context. The
	// write was not sent: re-running it is safe.
	ErrFailoverInProgress error = routing.NewTransient("sentinel: failover in progress; the write was not sent", DefaultRetryAfter, false)

	// ErrFailoverNotConfirmed is matched by the Err of an
	// EventFailoverHoldEnded when writes stopped being held without a new
	// master: the failover was aborted, the candidate did not become
	// master within FailoverHold, or no sentinel named it.
	ErrFailoverNotConfirmed error = routing.NewTransient("sentinel: failover hold ended without a new master", DefaultRetryAfter, false)

	// ErrNotDurable matches a *NotDurableError.
	ErrNotDurable error = routing.NewTransient("sentinel: write not confirmed durable", DefaultRetryAfter, true)

	// ErrAOFUnavailable is wrapped by the *NotDurableError of a
	// Config.DurableAOF write refused unsent because the master cannot
	// confirm an AOF fsync: it has no WAITAOF (Redis before 7.2) or runs
	// without appendonly.
	ErrAOFUnavailable = errors.New("sentinel: the master cannot confirm AOF fsyncs (WAITAOF)")

	// ErrMasterChanged matches a *MasterChangedError.
	ErrMasterChanged error = routing.NewTransient("sentinel: master changed", DefaultRetryAfter, true)

	// ErrSubscriptionMoved is matched (errors.Is) by the error a
	// subscription's Receive returns when the client moved its
	// subscriptions to a new master: go-redis's PubSub subscribes again
	// on its next call, and messages published during the switch may be
	// lost. Nothing to wait out: call Receive again at once.
	ErrSubscriptionMoved = routing.ErrSwitched

	// ErrUnsupported is matched by the *UnsupportedError of a go-redis
	// method the routed client does not offer.
	ErrUnsupported = errors.New("sentinel: not supported by the routed client")
)

// UnsupportedError reports a go-redis method the client does not offer
// (Method), why, and what to use instead. It matches ErrUnsupported.
type UnsupportedError = routing.UnsupportedError

// SubscriptionError is every error a subscription's connection reports
// to the PubSub Subscribe, PSubscribe and SSubscribe return (Receive,
// ReceiveTimeout, Ping, the end of Channel...): it names the node, says
// whether the connection could not be made, timed out, was lost or moved
// (errors.Is ErrSubscriptionMoved), and unwraps to the cause; the PubSub
// subscribes again by itself on its next call. The same type in
// packages sentinel, cluster and multidb.
type SubscriptionError = failure.SubscriptionError

// NodeError reports work that failed on a data node without an answer
// from it: the connection could not be made, was lost, or timed out, or
// the caller's context ended while it waited; or that the node refused
// before running it (READONLY, LOADING, MASTERDOWN, a transaction's
// EXECABORT) and no new master took it. The command's own answers
// (WRONGTYPE, a script's error, a missing key) are returned as go-redis
// returns them, never as a NodeError (see the package documentation, "The
// errors a caller sees"). It unwraps to the underlying error (io.EOF, a
// *net.OpError, the reply, ...), and reports Timeout as that error does,
// so checks written for go-redis's errors (redis.IsReadOnlyError,
// errors.Is context.DeadlineExceeded) keep working.
type NodeError struct {
	MasterName string
	// Addr is the node the work ran on; Role is "master" or "replica".
	Addr, Role string
	// Write says whether the work writes (per the classifier).
	Write bool
	// MayHaveExecuted is false only when the work provably did not run:
	// the connection was never made, or nothing was sent. A read that may
	// have run is harmless; a write that may have run must be checked for
	// before it is re-run.
	MayHaveExecuted bool
	Err             error
}

func (e *NodeError) Error() string {
	what := "read"
	if e.Write {
		what = "write"
	}
	outcome := failure.Outcome(e.Write, e.MayHaveExecuted, "it was not sent")
	return fmt.Sprintf("%s%s on %s %s%s failed: %s (%s)", topologyPrefix(e.MasterName), what, e.Role, e.Addr, ofMaster(" of", e.MasterName),
		failure.BriefErr(e.Err), outcome)
}

// Unwrap returns the underlying error.
func (e *NodeError) Unwrap() error { return e.Err }

// Timeout reports whether the underlying error is a timeout (net.Error).
func (e *NodeError) Timeout() bool { return failure.Timeout(e.Err) }

// Temporary is false: the node may be gone (net.Error).
func (e *NodeError) Temporary() bool { return false }

// WriteHeldError reports a write that was not sent because writes to the
// master were held, for Config.FailoverHold or until the caller's context
// ended (Cause): a failover was under way (Candidate is the replica being
// promoted), or the master was cut off from the sentinels that were about
// to replace it. Re-running it is safe. It matches ErrFailoverInProgress.
type WriteHeldError struct {
	MasterName string
	// Master is the master writes were held from.
	Master    string
	Candidate string
	// Reason says why writes were held.
	Reason string
	Waited time.Duration
	// Cause is the caller's context error when that ended the wait.
	Cause error
}

func (e *WriteHeldError) Error() string {
	msg := fmt.Sprintf("%swrite%s held for %v and not sent (re-running it is safe): %s (%s %s)",
		topologyPrefix(e.MasterName), ofMaster(" to", e.MasterName), e.Waited.Round(time.Millisecond), e.Reason, masterWord(e.MasterName), e.Master)
	if e.Cause != nil {
		msg += "; " + e.Cause.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrFailoverInProgress) true.
func (e *WriteHeldError) Is(target error) bool { return target == ErrFailoverInProgress }

// Unwrap returns the caller's context error, if that ended the wait.
func (e *WriteHeldError) Unwrap() error { return e.Cause }

// NoReplicaError reports that a read under ReadFrom Replica found no
// replica that may serve it, and why for each replica the client knows.
// ReadFrom Replica never reads the master (ReplicaPreferred would have);
// with the default selector, a replica is not used while it is
// unreachable, not probed yet, link-down or stale (see package replica).
// It matches ErrNoReplica. Nothing was sent: re-running the read is safe.
type NoReplicaError struct {
	MasterName string
	// Master is the master's address, which was not read.
	Master string
	// Replicas are the replicas the client knew (Sentinel reports them
	// healthy and ROLE confirms them), each with why it was not used.
	// Empty: Sentinel reports no healthy replica.
	Replicas []ReplicaExclusion
}

// ReplicaExclusion is a replica a read under ReadFrom Replica did not use,
// and why: its Reason is the selector's exclusion in a word
// (replica.ExcludedStale, ...), or "" when the selector gave none (one
// without an RTT table, NewRoundRobinSelector, or a replica leaving the
// topology), its Why a sentence.
type ReplicaExclusion = replica.Unused

func (e *NoReplicaError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%sno replica%s may serve the read (ReadFrom is replica only: the %s", topologyPrefix(e.MasterName), ofMaster(" of", e.MasterName), masterWord(e.MasterName))
	if e.Master != "" {
		fmt.Fprintf(&b, " %s", e.Master)
	}
	b.WriteString(" is not read)")
	none := "Sentinel reports no healthy replica"
	if e.MasterName == "" {
		none = "the primary lists no healthy replica"
	}
	replica.WriteUnused(&b, e.Replicas, none)
	return b.String()
}

// Is makes errors.Is(err, ErrNoReplica) true.
func (e *NoReplicaError) Is(target error) bool { return target == ErrNoReplica }

// MasterChangedError reports that the master changed while a write was in
// flight and the write was not re-run, because it may have executed on the
// old master (or because Config.StrictWrites forbids re-running writes).
// The client already points at the new master: re-running the work there is
// the caller's decision, after checking whether it took effect.
type MasterChangedError struct {
	MasterName string
	// Sentinel is the address of the sentinel that named the new master
	// (empty when the client learned it from the promoted replica's ROLE).
	Sentinel  string
	NewMaster string
	OldMaster string
	// MayHaveExecuted is false only when the write provably did not run
	// (it was refused before execution, or never sent) and StrictWrites
	// kept it from being re-run.
	MayHaveExecuted bool
	// Cause is the error the write failed with on the old master.
	Cause error
}

func (e *MasterChangedError) Error() string {
	var b strings.Builder
	b.WriteString("master changed, re-run — ")
	if e.Sentinel != "" {
		fmt.Fprintf(&b, "sentinel %s now names %s as the master of %q (was %s)", e.Sentinel, e.NewMaster, e.MasterName, e.OldMaster)
	} else {
		fmt.Fprintf(&b, "%s is now the master of %q (was %s)", e.NewMaster, e.MasterName, e.OldMaster)
	}
	if e.MayHaveExecuted {
		b.WriteString("; the command writes, so it was not retried (it may have executed: check before re-running)")
	} else {
		b.WriteString("; the command writes and strict mode forbids retries (it did not execute: re-running is safe)")
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, "; cause: %s", failure.BriefErr(e.Cause))
	}
	return b.String()
}

// Is makes errors.Is(err, ErrMasterChanged) true.
func (e *MasterChangedError) Is(target error) bool { return target == ErrMasterChanged }

// Unwrap returns the cause.
func (e *MasterChangedError) Unwrap() error { return e.Cause }

// NotDurableError reports that a durable write was not confirmed: it ran on
// the master but fewer replicas than required confirmed it within the
// durable timeout (WAIT), so it may be lost in a failover, and may have
// executed (check before re-running); or, with NotSent, it was refused
// before it was sent because a counted replica could not have confirmed
// it (re-running it later is safe). The replicas required are those of
// Config.DurableScope: with DurablePromotable, a write confirmed can
// still be lost if Sentinel later promotes a replica that was down and not
// counted when it was confirmed (see the package documentation, "What is
// promised, exactly").
type NotDurableError struct {
	Master   string
	Required int // replicas that had to confirm
	Acked    int // replicas that did
	// Replicas are the replicas counted in Required: every replica the
	// master had connected and every one Config.DurableScope counts (by
	// default every replica any sentinel knows; see the package
	// documentation). WAIT does not say which ones confirmed.
	Replicas []string
	Timeout  time.Duration
	Cause    error // set when WAIT itself failed
	// Unconfirmable are the counted replicas the master did not list as
	// connected at the last topology refresh (WAIT cannot count them): a
	// replica down, resynchronising, or promoted; after a failover, the
	// old master until Sentinel has made it a replica of the new one.
	Unconfirmable []string
	// NotSent is true when the write was refused before it was sent
	// (re-running it later is safe): the master had no replica to confirm
	// it, some counted replica could not confirm it (Unconfirmable), or,
	// with AOF, the master cannot confirm an fsync (Cause wraps
	// ErrAOFUnavailable).
	NotSent bool
	// AOF is true for a Config.DurableAOF write, confirmed with WAITAOF:
	// Acked counts the replicas that fsynced it to their AOF, and
	// LocalFsynced says whether the master did.
	AOF          bool
	LocalFsynced bool
}

func (e *NotDurableError) Error() string {
	if e.NotSent && len(e.Unconfirmable) > 0 {
		return fmt.Sprintf("sentinel: durable write refused: %d replicas %v must confirm it, and %v cannot (not connected to the master %s at the last topology refresh; it was not sent: re-running later is safe)",
			e.Required, e.Replicas, e.Unconfirmable, e.Master)
	}
	if e.NotSent && e.Cause != nil {
		return fmt.Sprintf("sentinel: durable write refused: %s: %s (it was not sent: re-running later is safe)", e.Master, failure.BriefErr(e.Cause))
	}
	if e.NotSent {
		return fmt.Sprintf("sentinel: durable write refused: %s has no replica to confirm it (it was not sent: re-running later is safe)", e.Master)
	}
	var msg string
	if e.AOF {
		local := "fsynced it to its AOF"
		if !e.LocalFsynced {
			local = "did not fsync it to its AOF"
		}
		msg = fmt.Sprintf("sentinel: write on %s not confirmed durable: the master %s, and %d of %d replicas %v fsynced it to theirs within %v (WAITAOF; it may have executed: check before re-running)",
			e.Master, local, e.Acked, e.Required, e.Replicas, e.Timeout)
	} else {
		msg = fmt.Sprintf("sentinel: write on %s not confirmed durable: %d of %d replicas %v acknowledged within %v (it may have executed: check before re-running)",
			e.Master, e.Acked, e.Required, e.Replicas, e.Timeout)
	}
	if e.Cause != nil {
		msg += "; cause: " + failure.BriefErr(e.Cause)
	}
	return msg
}

// Is makes errors.Is(err, ErrNotDurable) true.
func (e *NotDurableError) Is(target error) bool { return target == ErrNotDurable }

// Unwrap returns the cause, if any.
func (e *NotDurableError) Unwrap() error { return e.Cause }

// ErrUnknownMaster is matched by a *DiscoveryError when every sentinel
// answered and none monitors Config.MasterName (its Monitored lists the
// names they do). Discovery does not wait for that to change.
var ErrUnknownMaster = errors.New("sentinel: no sentinel monitors a master by that name")

// DiscoveryError reports that no sentinel named a master that ROLE
// confirmed. Attempts lists every sentinel asked and why it was skipped.
type DiscoveryError struct {
	MasterName string
	// Primary is the standalone primary's address (Config.Primary) when
	// the client serves one: it did not answer ROLE as a master (its one
	// attempt says why); "" for a Sentinel deployment.
	Primary  string
	Attempts []SentinelAttempt
	Cause    error // the context's error when the deadline ended the search
	// Monitored, when every sentinel answered that it does not monitor
	// MasterName, lists the names they do monitor.
	Monitored []string
}

// SentinelAttempt is one sentinel asked during discovery.
type SentinelAttempt struct {
	Sentinel string
	// Named is the master address the sentinel gave, if it answered.
	Named string
	// Reason and Err say why the answer was not used.
	Reason SkipReason
	Err    error
}

// SkipReason says, in a word, why a sentinel's answer was not used.
type SkipReason string

// The reasons a sentinel is skipped during discovery.
const (
	SkipDown          SkipReason = "down"           // no connection
	SkipSlow          SkipReason = "slow"           // no answer within SentinelTimeout
	SkipAuth          SkipReason = "auth"           // the sentinel refused our credentials
	SkipUnknownMaster SkipReason = "unknown master" // it does not monitor MasterName
	SkipStale         SkipReason = "stale"          // an older config epoch than one already seen
	SkipRoleMismatch  SkipReason = "role mismatch"  // the node it named is not a master
	SkipUnverified    SkipReason = "unverified"     // the node it named did not answer ROLE
	SkipBadAddress    SkipReason = "bad address"    // it named an address the client will not dial (*AddressError)
	SkipOther         SkipReason = "error"
)

// skipError carries a SkipReason with the error it explains.
type skipError struct {
	reason SkipReason
	err    error
}

func (e *skipError) Error() string { return failure.BriefErr(e.err) }
func (e *skipError) Unwrap() error { return e.err }

func skipped(reason SkipReason, err error) error { return &skipError{reason: reason, err: err} }

// skipReason reads the reason back from an error of discovery.
func skipReason(err error) SkipReason {
	var se *skipError
	var rm *RoleMismatchError
	switch {
	case errors.As(err, &rm):
		return SkipRoleMismatch
	case errors.As(err, &se):
		return se.reason
	}
	return SkipOther
}

func (e *DiscoveryError) Error() string {
	var b strings.Builder
	if e.Primary != "" {
		for _, a := range e.Attempts {
			var rme *RoleMismatchError
			if errors.As(a.Err, &rme) && rme.MasterOf != "" {
				return fmt.Sprintf("standalone primary %s is a replica of %s (ROLE %q): writes are refused, nothing was sent; writes go to the primary %s (point Config.Primary, or the URL, at it)",
					e.Primary, rme.MasterOf, failure.Brief(rme.Role), rme.MasterOf)
			}
			if errors.As(a.Err, &rme) {
				return fmt.Sprintf("standalone primary %s answers ROLE as a %s, not a master: writes are refused, nothing was sent (point Config.Primary, or the URL, at the primary)", e.Primary, failure.Brief(rme.Role))
			}
		}
		fmt.Fprintf(&b, "standalone primary %s does not answer as a master", e.Primary)
		if e.Cause != nil {
			fmt.Fprintf(&b, " (%v)", e.Cause)
		}
		for _, a := range e.Attempts {
			fmt.Fprintf(&b, ": %s", failure.BriefErr(a.Err))
		}
		b.WriteString("; nothing was sent")
		return b.String()
	}
	if e.Monitored != nil || e.unknownEverywhere() {
		fmt.Fprintf(&b, "sentinel: none of the %d sentinels monitors a master named %q", len(e.Attempts), e.MasterName)
		if len(e.Monitored) > 0 {
			fmt.Fprintf(&b, "; they monitor: %s", strings.Join(e.Monitored, ", "))
		}
		b.WriteString(" (check Config.MasterName, or the URL's path)")
		return b.String()
	}
	fmt.Fprintf(&b, "sentinel: no sentinel named a verified master for %q", e.MasterName)
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	for _, a := range e.Attempts {
		fmt.Fprintf(&b, "; %s: %s", a.Sentinel, failure.BriefErr(a.Err))
	}
	return b.String()
}

// unknownEverywhere reports whether every sentinel answered that it does
// not monitor the name.
func (e *DiscoveryError) unknownEverywhere() bool {
	if len(e.Attempts) == 0 {
		return false
	}
	for _, a := range e.Attempts {
		if a.Reason != SkipUnknownMaster {
			return false
		}
	}
	return true
}

// Unwrap returns the context error when it ended discovery, and the
// attempts' errors.
func (e *DiscoveryError) Unwrap() []error {
	errs := make([]error, 0, len(e.Attempts)+1)
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	for _, a := range e.Attempts {
		errs = append(errs, a.Err)
	}
	return errs
}

// RoleMismatchError reports that a sentinel named a node as the master but
// ROLE on the node says otherwise (a stale sentinel mid-failover, or a
// misconfigured one).
type RoleMismatchError struct {
	Addr string
	Role string
	// MasterOf is, when the node is a replica, the master its ROLE names:
	// where writes go instead ("" when ROLE named none).
	MasterOf string
}

func (e *RoleMismatchError) Error() string {
	return fmt.Sprintf("named %s, but ROLE there says %q (a stale answer, mid-failover?)", e.Addr, failure.Brief(e.Role))
}

// topologyPrefix starts a routed error's message: "sentinel: " for a
// Sentinel master (named), "standalone: " for a standalone primary
// (Config.Primary, no name), whose caller configured no sentinel and
// would be misled by one in the message.
func topologyPrefix(name string) string {
	if name == "" {
		return "standalone: "
	}
	return "sentinel: "
}

// masterWord is what the message calls the node writes go to: a Sentinel
// deployment's "master", a standalone deployment's "primary".
func masterWord(name string) string {
	if name == "" {
		return "primary"
	}
	return "master"
}

// ofMaster is " of \"name\"" (with the given preposition) for a Sentinel
// master, and nothing for a standalone primary (Config.Primary), which has
// no name: its address follows in the message.
func ofMaster(prep, name string) string {
	if name == "" {
		return ""
	}
	return fmt.Sprintf("%s %q", prep, name)
}
