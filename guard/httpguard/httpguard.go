package httpguard

import (
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/failure"
)

// transient returns the guard.Transient in err's chain, or nil.
func transient(err error) guard.Transient {
	var t guard.Transient
	if errors.As(err, &t) {
		return t
	}
	return nil
}

// StatusCode maps an error to the HTTP status a route should answer:
//
//   - nil: 200;
//   - guard.ErrTooManyRequests (a *guard.LimitError): 429;
//   - guard.ErrBusy (a *guard.BusyError): 409;
//   - a guard.Transient error (a failover, a master or database switch:
//     see guard.Transient), however wrapped: 503. The exported error
//     values of sentinel, cluster and multidb that name a condition which
//     passes (sentinel.ErrFailoverInProgress, multidb.ErrNoHealthyDatabase,
//     ...) are Transient too, bare or wrapped;
//   - guard.ErrUnavailable (Redis failed, a fallback is saturated): 503;
//   - the request's own context.Canceled or context.DeadlineExceeded: 503
//     (the client is most likely gone; the status is for the logs);
//   - anything else: 500.
func StatusCode(err error) int {
	switch {
	case err == nil:
		return http.StatusOK
	case errors.Is(err, guard.ErrTooManyRequests):
		return http.StatusTooManyRequests
	case errors.Is(err, guard.ErrBusy):
		return http.StatusConflict
	case transient(err) != nil,
		errors.Is(err, guard.ErrUnavailable),
		failure.ContextError(err):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// RetryAfter is the Retry-After value for err, in whole seconds rounded
// up (at least 1), when err carries one (a *guard.LimitError's
// RetryAfter, a guard.Transient error's RetryAdvice), else "".
func RetryAfter(err error) string {
	var le *guard.LimitError
	var after time.Duration
	switch t := transient(err); {
	case errors.As(err, &le):
		after = le.RetryAfter
	case t != nil:
		after, _ = t.RetryAdvice()
	default:
		return ""
	}
	secs := int64((after + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(secs, 1), 10)
}

// WriteError answers the request with err's status (StatusCode), a
// Retry-After header for a 429 and for a guard.Transient error's 503, and
// a short plain-text body that says what happened without internal
// details (no server address, no key); for a guard.Transient error it
// also says whether repeating the request is safe. It returns the status
// written. It writes nothing for a nil err.
func WriteError(w http.ResponseWriter, err error) int {
	if err == nil {
		return http.StatusOK
	}
	code := StatusCode(err)
	if ra := RetryAfter(err); ra != "" {
		w.Header().Set("Retry-After", ra)
	}
	http.Error(w, publicMessage(err, code), code)
	return code
}

func publicMessage(err error, code int) string {
	var (
		ue *guard.UnavailableError
		le *guard.LimitError
		be *guard.BusyError
	)
	switch t := transient(err); {
	case errors.As(err, &le):
		return le.Name + ": too many attempts, retry after " + RetryAfter(err) + " s"
	case errors.As(err, &be):
		return be.Name + ": an attempt is already in progress"
	case t != nil:
		what := http.StatusText(code)
		if errors.As(err, &ue) {
			what = ue.Name + " unavailable"
		}
		msg := what + ", retry after " + RetryAfter(err) + " s; "
		if _, may := t.RetryAdvice(); may {
			return msg + "a change may have been made: check before repeating the request"
		}
		return msg + "nothing was changed: repeating the request is safe"
	case errors.As(err, &ue) && ue.Reason == guard.ReasonRedis:
		return ue.Name + " unavailable, try again later"
	case errors.As(err, &ue):
		return ue.Name + " busy, try again later"
	}
	return http.StatusText(code)
}

// Handler adapts a handler that returns an error: a nil error means the
// handler has answered; a non-nil one is answered with WriteError. Errors
// are logged to log (nil: discarded): 5xx at Warn level, 4xx at Info.
func Handler(log *slog.Logger, fn func(http.ResponseWriter, *http.Request) error) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := fn(w, r)
		if err == nil {
			return
		}
		code := WriteError(w, err)
		level := slog.LevelInfo
		if code >= 500 {
			level = slog.LevelWarn
		}
		log.Log(r.Context(), level, "guard: request refused", "method", r.Method, "path", r.URL.Path, "status", code, "err", err)
	})
}
