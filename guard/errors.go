package guard

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
)

// The three outcomes a route maps to an HTTP status (see httpguard.StatusCode). Every
// refusal the package returns matches exactly one of them with errors.Is.
var (
	// ErrUnavailable: the guard could not do its job, because Redis failed
	// (a *RedisError, or an *UnavailableError with ReasonRedis) or because a
	// fallback is saturated or too slow (an *UnavailableError with
	// ReasonBusy or ReasonLoadTimeout). HTTP 503.
	ErrUnavailable = errors.New("guard: unavailable")
	// ErrTooManyRequests: a rate limit is reached (a *LimitError, which
	// carries the time until the window ends). HTTP 429 with Retry-After.
	ErrTooManyRequests = errors.New("guard: too many requests")
	// ErrBusy: another attempt holds the admission key (a *BusyError).
	// HTTP 409.
	ErrBusy = errors.New("guard: an attempt is already in progress")
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=Failure -linecomment

// Failure is what kind of Redis failure a *RedisError is. Health reports
// use the same classification.
type Failure int

const (
	// FailureUnreachable: no connection could be made or kept (refused,
	// reset, closed, DNS), or the client is closed.
	FailureUnreachable Failure = iota + 1 // unreachable
	// FailureTimeout: Redis did not answer within the call's limit or the
	// client's socket timeout. A command that was sent may still run.
	FailureTimeout // timeout
	// FailurePoolFull: every connection of the client's pool was in use, and
	// the client does not queue for one (ClientConfig.PoolSize).
	FailurePoolFull // pool-full
	// FailureAuth: the server refused the credentials (NOAUTH, WRONGPASS,
	// NOPERM, or a password sent to a server that has none).
	FailureAuth // auth-failed
	// FailureReadOnly: the server is a read-only replica (READONLY).
	FailureReadOnly // read-only
	// FailureOutOfMemory: the server is at maxmemory and refuses writes
	// (OOM, under maxmemory-policy noeviction).
	FailureOutOfMemory // out-of-memory
	// FailureReply: any other error reply (LOADING, MASTERDOWN, MISCONF,
	// WRONGTYPE, ...).
	FailureReply // error-reply
)

// advice is what to do about each kind of failure, for error messages.
var advice = map[Failure]string{
	FailureUnreachable: "check that Redis runs at this address and the network reaches it",
	FailureTimeout:     "Redis did not answer in time; a command that was sent may still run on the server",
	FailurePoolFull:    "every pooled connection was busy; size PoolSize for the process's concurrent Redis calls",
	FailureAuth:        "check the username and password",
	FailureReadOnly:    "the server is a read-only replica; point the client at the primary",
	FailureOutOfMemory: "the server is at maxmemory under noeviction; free memory or raise maxmemory",
	FailureReply:       "the server refused the command",
}

// RedisError is a Redis failure seen by Guard.Call: the call's limit was
// hit, or the client or server returned an error. It matches
// ErrUnavailable. A caller's own cancellation is never a RedisError.
type RedisError struct {
	// Op names the operation, e.g. "price get" or "login limit".
	Op string
	// Server is the client's address, when the client exposes one.
	Server string
	// Kind classifies the failure.
	Kind Failure
	// Elapsed is how long the call ran before it failed.
	Elapsed time.Duration
	// Limit is the call's time limit.
	Limit time.Duration
	// Err is the underlying error. When the call's limit was hit it does not
	// wrap context.DeadlineExceeded, so that callers testing for their own
	// deadline with errors.Is are not misled.
	Err error
}

func (e *RedisError) Error() string {
	var b strings.Builder
	b.WriteString("guard: ")
	b.WriteString(e.Op)
	if e.Server != "" {
		b.WriteString(" on ")
		b.WriteString(e.Server)
	}
	fmt.Fprintf(&b, ": %s after %v (limit %v)", e.Kind, roundDuration(e.Elapsed), e.Limit)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if a := advice[e.Kind]; a != "" {
		b.WriteString("; ")
		b.WriteString(a)
	}
	return b.String()
}

func (e *RedisError) Unwrap() error { return e.Err }

// roundDuration keeps three significant digits or so: 412µs, 150ms, 2.31s.
func roundDuration(d time.Duration) time.Duration {
	switch {
	case d < time.Millisecond:
		return d.Round(time.Microsecond)
	case d < time.Second:
		return d.Round(100 * time.Microsecond)
	}
	return d.Round(10 * time.Millisecond)
}

// Is makes a RedisError match ErrUnavailable.
func (e *RedisError) Is(target error) bool { return target == ErrUnavailable }

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=Reason -linecomment

// Reason says why an *UnavailableError refused.
type Reason int

const (
	// ReasonRedis: Redis failed; Err is the *RedisError.
	ReasonRedis Reason = iota + 1 // redis unavailable
	// ReasonBusy: every loader slot was taken and none freed within the
	// cache's SlotWait.
	ReasonBusy // busy
	// ReasonLoadTimeout: the loader did not return within the cache's
	// LoadTimeout.
	ReasonLoadTimeout // load timed out
)

// UnavailableError is a component's refusal: the named guard (a cache, a
// limiter, an admission gate) cannot do its job. It matches
// ErrUnavailable.
type UnavailableError struct {
	// Name is the component's name, e.g. "login" or "price".
	Name   string
	Reason Reason
	// Err is the cause: a *RedisError for ReasonRedis, else nil or the
	// loader's error.
	Err error
}

func (e *UnavailableError) Error() string {
	msg := fmt.Sprintf("guard: %s unavailable (%s)", e.Name, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// Is makes an UnavailableError match ErrUnavailable.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// LimitError is a rate limiter's refusal. It matches ErrTooManyRequests.
type LimitError struct {
	// Name is the limiter's name.
	Name string
	// Limit attempts are allowed per Window.
	Limit  int64
	Window time.Duration
	// Count is the number of attempts in this window, this one included.
	Count int64
	// RetryAfter is the time until the window ends.
	RetryAfter time.Duration
}

func (e *LimitError) Error() string {
	return fmt.Sprintf("guard: %s: limit of %d per %v reached; retry after %v",
		e.Name, e.Limit, e.Window, roundDuration(e.RetryAfter))
}

// Is makes a LimitError match ErrTooManyRequests.
func (e *LimitError) Is(target error) bool { return target == ErrTooManyRequests }

// BusyError is an admission gate's refusal: the key is held by another
// attempt until its TTL ends. It matches ErrBusy.
type BusyError struct {
	// Name is the gate's name.
	Name string
	// TTL is the gate's admission TTL: the key expires at the latest this
	// long after the attempt that holds it was admitted.
	TTL time.Duration
}

func (e *BusyError) Error() string {
	return fmt.Sprintf("guard: %s: another attempt was admitted within the last %v", e.Name, e.TTL)
}

// Is makes a BusyError match ErrBusy.
func (e *BusyError) Is(target error) bool { return target == ErrBusy }

// classify tells what kind of Redis failure err is. limitHit reports that
// the call's own time limit expired.
func classify(err error, limitHit bool) Failure {
	switch {
	case limitHit:
		return FailureTimeout
	case errors.Is(err, redis.ErrPoolTimeout), errors.Is(err, redis.ErrPoolExhausted):
		return FailurePoolFull
	case redis.IsAuthError(err), redis.IsPermissionError(err), failure.NoPasswordConfigured(err):
		return FailureAuth
	case redis.IsReadOnlyError(err):
		return FailureReadOnly
	case redis.IsOOMError(err):
		return FailureOutOfMemory
	}
	var re redis.Error
	if errors.As(err, &re) {
		return FailureReply
	}
	if failure.Timeout(err) {
		return FailureTimeout
	}
	return FailureUnreachable
}
