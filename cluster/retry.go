package cluster

import (
	"time"

	"github.com/rediskit/rediskit/replica"
)

// RetryAdvice methods: the errors that mean "try again" say how long to
// wait and whether the failed work may have taken effect (guard.Transient,
// which httpguard.StatusCode and WriteError answer with 503 and a
// Retry-After), as package sentinel's do. mayHaveExecuted is true only for
// a write that may have been applied: a read, or work that was not sent,
// is safe to repeat.

// DefaultRetryAfter is the wait suggested after a node's failure that the
// error cannot time: the client reads the slot map again at once after
// one, so a second covers a lost connection or a replaced master.
const DefaultRetryAfter = time.Second

// RetryAdvice suggests DefaultRetryAfter; a write that may have run must
// be checked for first.
func (e *NodeError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return DefaultRetryAfter, e.Write && e.MayHaveExecuted
}

// RetryAdvice suggests no wait (the client already routes to the new
// master), after checking whether the write took effect when
// MayHaveExecuted.
func (e *MasterChangedError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return 0, e.MayHaveExecuted
}

// RetryAdvice says when to try again: nothing was sent. A shard whose
// master failed gets a promoted replica within the cluster's node timeout;
// the client reads the map again at least every RefreshInterval:
// DefaultRefreshInterval.
func (e *NoMasterError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return DefaultRefreshInterval, false
}

// RetryAdvice says when to try again: a write that ran but was not
// confirmed may have executed, and its replicas get the durable timeout
// again to catch up; one refused unsent waits for a counted replica to
// come back, which the client sees at its next map read.
func (e *NotDurableError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	if e.NotSent {
		return DefaultRefreshInterval, false
	}
	if e.Timeout > 0 {
		return e.Timeout, true
	}
	return DefaultDurableTimeout, true
}

// RetryAdvice says when to try again: the read was not sent; a replica is
// usable again at a probe round of the replica selector or a map read.
func (e *NoReplicaError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return max(replica.DefaultProbeInterval, DefaultRefreshInterval), false
}

// RetryAdvice suggests restarting the SCAN at once: nothing was written.
func (e *CursorError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return 0, false
}
