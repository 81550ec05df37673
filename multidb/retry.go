package multidb

import "time"

// RetryAdvice methods: the errors that mean "try again" say how long to
// wait and whether the failed work may have taken effect, the interface
// guard.Transient describes (httpguard.StatusCode and httpguard.WriteError
// answer 503 with Retry-After from it; multidb's dependency on guard is its
// write probe only, and these methods do not use it). The errors do not
// carry the client's settings, so the waits are derived from the defaults
// of the settings that decide when the condition can pass.

// RetryAdvice says when to try again: the call was not sent, so repeating it is safe. Service
// resumes when a database passes a health check (its breaker closes, or a
// failover attempt finds it), and health checks run every
// HealthCheckInterval: DefaultHealthCheckInterval, whether or not the
// failover attempts are used up (Exhausted), since the client keeps
// checking either way.
func (e *UnavailableError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return DefaultHealthCheckInterval, false
}

// RetryAdvice suggests no wait (the client already routes to New), but
// the write may have executed on Old: check before repeating it.
func (e *DatabaseChangedError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return 0, true
}

// RetryAdvice suggests no wait (the next call is routed as usual), and
// says whether the work may have executed.
func (e *DatabaseError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	return 0, e.MayHaveExecuted
}
