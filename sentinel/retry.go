package sentinel

import (
	"time"

	"github.com/rediskit/rediskit/replica"
)

// RetryAdvice methods: the errors that mean "try again" say how long to
// wait and whether the failed work may have taken effect, the interface
// guard.Transient describes (httpguard.StatusCode and httpguard.WriteError
// answer 503 with Retry-After from it; this package imports neither). The
// wait is derived from the client's own settings where the error carries
// them, and is otherwise the default of the setting that decides when the
// condition can pass (the error does not know the client's value).
// mayHaveExecuted is true only for a write that may have been applied: a
// read, or work that was not sent, is safe to repeat.

// DefaultRetryAfter is the wait suggested after a failure of a data node
// that the error cannot time: the client checks the topology at once
// after such a failure and redials on the next call, so a second covers a
// lost connection or a master Sentinel has already replaced.
const DefaultRetryAfter = time.Second

// RetryAdvice suggests DefaultRetryAfter; a write that may have run must
// be checked for first, a read or unsent work can be repeated.
func (e *NodeError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return DefaultRetryAfter, e.Write && e.MayHaveExecuted
}

// RetryAdvice says when to try again: the write was not sent, so repeating it is safe. When the
// hold ran its course, the wait suggested is as long again (Waited, to
// 100 ms, is then the client's FailoverHold): a failover not confirmed
// within one hold is given another. When the caller's context cut the
// wait short, the hold's remaining time is unknown: DefaultFailoverHold.
func (e *WriteHeldError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	if e.Cause == nil && e.Waited > 0 {
		return e.Waited.Round(100 * time.Millisecond), false
	}
	return DefaultFailoverHold, false
}

// RetryAdvice suggests no wait (the client already routes to the new
// master), after checking whether the write took effect when
// MayHaveExecuted.
func (e *MasterChangedError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return 0, e.MayHaveExecuted
}

// RetryAdvice says when to try again: a write that ran but was not confirmed may have executed;
// its replicas get the durable timeout (Timeout, the client's
// DurableTimeout) again to catch up. A write refused unsent (NotSent)
// waits for a counted replica to come back, which the client sees at its
// next topology refresh: DefaultRefreshInterval.
func (e *NotDurableError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	if e.NotSent {
		return DefaultRefreshInterval, false
	}
	if e.Timeout > 0 {
		return e.Timeout, true
	}
	return DefaultDurableTimeout, true
}

// RetryAdvice says when to try again: the read was not sent. A replica becomes usable again at a
// probe round of the replica selector or a topology refresh, whichever
// is later by default: replica.DefaultProbeInterval and
// DefaultRefreshInterval.
func (e *NoReplicaError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return max(replica.DefaultProbeInterval, DefaultRefreshInterval), false
}

// RetryAdvice says when to try again: nothing was sent, since no master was known. The client
// looks for one again at least every RefreshInterval:
// DefaultRefreshInterval.
func (e *DiscoveryError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return DefaultRefreshInterval, false
}
