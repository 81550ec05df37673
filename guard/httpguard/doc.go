// Package httpguard answers a request that a guard refused, or that
// failed during a failover, with the HTTP status, Retry-After header and
// body a client can act on. It is apart from package guard so that guard,
// like the other core packages, does not import net/http: a service that
// is not an HTTP server uses guard without it.
//
// The mapping (StatusCode, RetryAfter, WriteError):
//
//	guard.ErrTooManyRequests (*guard.LimitError)  429, Retry-After: the time until the window ends
//	guard.ErrBusy (*guard.BusyError)               409: another attempt holds the admission key
//	a guard.Transient error, however wrapped       503, Retry-After from its RetryAdvice
//	guard.ErrUnavailable                           503, no Retry-After
//	the request's own context.Canceled or
//	context.DeadlineExceeded                       503
//	anything else                                  500
//
// Why these:
//
//   - 429 with Retry-After for a limit, since the limit says exactly when
//     the next attempt is counted again.
//   - 409 for busy: the same attempt (a payment for this order, a double
//     click) is already in progress. It conflicts with that attempt; the
//     service has not failed.
//   - 503 with Retry-After for a guard.Transient error (a failover under
//     way, a master changed or being discovered, writes held, no replica,
//     multidb's no healthy database or database changed): the condition
//     passes by itself, and the error says when and whether the failed
//     work may have taken effect. The body says which: "nothing was
//     changed: repeating the request is safe", or "a change may have been
//     made: check before repeating the request".
//   - 503 without Retry-After when Redis failed or a fallback is saturated
//     (guard.ErrUnavailable): the service cannot do this now, and Redis
//     being down says nothing of when it comes back.
//   - 503 for the request's own cancellation or deadline: the client is
//     most likely gone, and the status is for the logs.
//   - 500 for anything else: an error this package does not know.
//
// Bodies are short plain text that say what happened, with the
// component's name (a guard.Cache, Limiter or Gate's Name) but never a
// server address, a key or an error's internal details: those go to the
// logs. Handler adapts a handler that returns an error, answers a
// non-nil one with WriteError and logs it to the caller's *slog.Logger
// (5xx at Warn, 4xx at Info; nil: discarded).
package httpguard
