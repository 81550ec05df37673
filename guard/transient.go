package guard

import "time"

// Transient is implemented by errors of a condition expected to pass by
// itself: a failover under way, a master changed or being discovered, a
// database switch, a replica catching up. The request may succeed if it
// is made again later. It is an error contract, not an HTTP one: package
// httpguard's StatusCode answers 503 for an error with one in its chain
// (errors.As), and its WriteError adds Retry-After and says in the body
// whether repeating the request is safe.
//
// The errors of packages sentinel and multidb that mean "try again" have
// the method (guard imports neither: any error type can implement it).
type Transient interface {
	error
	// RetryAdvice says how long to wait before trying again (0: at once;
	// Retry-After is at least 1 s), and whether the failed work may have
	// taken effect: a write that may have been applied, which must be
	// checked for before it is repeated. false means repeating it cannot
	// do anything twice: it was not sent, or it only read.
	RetryAdvice() (after time.Duration, mayHaveExecuted bool)
}
