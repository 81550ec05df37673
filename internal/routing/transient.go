package routing

import "time"

// TransientError is an exported error value of a rediskit package that
// names a condition which passes (a failover under way, no healthy
// replica or database for now): besides matching with errors.Is, it
// answers RetryAdvice (guard.Transient), so that httpguard and callers
// map it, bare or wrapped, as they map the typed errors that match it.
type TransientError struct {
	msg        string
	after      time.Duration
	mayHaveRun bool
}

// NewTransient returns an error value saying msg, whose RetryAdvice is
// after and mayHaveRun (whether the work it reports may have taken
// effect).
func NewTransient(msg string, after time.Duration, mayHaveRun bool) *TransientError {
	return &TransientError{msg: msg, after: after, mayHaveRun: mayHaveRun}
}

func (e *TransientError) Error() string { return e.msg }

// RetryAdvice says how long to wait before trying again and whether the
// failed work may have taken effect.
func (e *TransientError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return e.after, e.mayHaveRun
}
