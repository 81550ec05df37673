package multidb

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/configerr"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
)

var (
	// ErrTemporarilyUnavailable matches an *UnavailableError returned while
	// no database is healthy and the client is still within its failover
	// attempts: the call was not sent; try again shortly.
	ErrTemporarilyUnavailable error = routing.NewTransient("multidb: no healthy database at the moment", time.Second, false)
	// ErrNoHealthyDatabase matches an *UnavailableError returned once the
	// failover attempts are used up: the call was not sent. The client
	// still checks every database and resumes when one recovers.
	ErrNoHealthyDatabase error = routing.NewTransient("multidb: no healthy database", time.Second, false)
	// ErrDatabaseChanged matches a *DatabaseChangedError.
	ErrDatabaseChanged error = routing.NewTransient("multidb: active database changed", time.Second, true)
	// ErrUnhealthy matches an *UnhealthyError (SetActive refused).
	ErrUnhealthy error = routing.NewTransient("multidb: database failed its health check", time.Second, false)
	// ErrProbePanicked matches the error of a probe that panicked: the
	// probe failed (see Probe).
	ErrProbePanicked = errors.New("multidb: the health probe panicked")
	// ErrUnknownDatabase is returned for a name the client does not have.
	ErrUnknownDatabase = errors.New("multidb: unknown database")
	// ErrClosed is returned by calls on a closed Client. It is go-redis's
	// redis.ErrClosed, so existing checks keep working.
	ErrClosed = redis.ErrClosed
	// ErrUnsupported is matched by the *UnsupportedError of a go-redis
	// method the routed client does not offer.
	ErrUnsupported = errors.New("multidb: not supported by the routed client")
)

// ConfigError reports a setting the client cannot use: "multidb:
// Config.<Field> <problem>", with a database's field named by the
// database (`Config.Databases["main"].Weight must be ...`).
type ConfigError = configerr.Error

// configError reports a Config field.
func configError(field, problem string) *ConfigError {
	return &ConfigError{Package: "multidb", Struct: "Config", Field: field, Problem: problem}
}

// databaseError reports a field of the named database.
func databaseError(name, field, problem string) *ConfigError {
	return configError(fmt.Sprintf("Databases[%q].%s", name, field), problem)
}

// DatabaseStatus is one database as an *UnavailableError saw it.
type DatabaseStatus struct {
	Name  string
	State BreakerState
	// LastError is the last failure seen on the database (a health check's
	// or traffic's), "" if none.
	LastError string
}

// UnavailableError reports that no database was healthy, so the call was
// not sent (re-running it later is safe). It matches
// ErrTemporarilyUnavailable while the client is within its failover
// attempts, and ErrNoHealthyDatabase after them.
type UnavailableError struct {
	// Exhausted is true once FailoverAttempts looks found no database.
	Exhausted bool
	// Since is when the last healthy database was lost.
	Since time.Time
	// Attempts is how many looks for a healthy database failed so far, of
	// MaxAttempts.
	Attempts, MaxAttempts int
	// Databases is every database's state when the error was made.
	Databases []DatabaseStatus
}

func (e *UnavailableError) Error() string {
	var b strings.Builder
	if e.Exhausted {
		fmt.Fprintf(&b, "multidb: no healthy database since %s, after %d attempts; calls fail until one recovers (the client keeps checking)",
			e.Since.Format(time.RFC3339), e.Attempts)
	} else {
		fmt.Fprintf(&b, "multidb: no healthy database at the moment (since %s, attempt %d of %d); the call was not sent, try again shortly",
			e.Since.Format(time.RFC3339), e.Attempts, e.MaxAttempts)
	}
	for _, d := range e.Databases {
		fmt.Fprintf(&b, "; %s: %s", d.Name, d.State)
		if d.LastError != "" {
			fmt.Fprintf(&b, " (%s)", d.LastError)
		}
	}
	return b.String()
}

// Is makes errors.Is match ErrNoHealthyDatabase or ErrTemporarilyUnavailable.
func (e *UnavailableError) Is(target error) bool {
	if e.Exhausted {
		return target == ErrNoHealthyDatabase
	}
	return target == ErrTemporarilyUnavailable
}

// DatabaseChangedError reports that the active database changed while a
// write was in flight on the old one and the write was not re-run on the
// new one, because it may have executed on the old one (a write that
// provably did not execute is re-run instead). The client already
// points at the new database: whether to re-run the write there is the
// caller's decision, after checking whether it took effect.
type DatabaseChangedError struct {
	Old, New string
	// Cause is the error the write failed with on the old database.
	Cause error
}

func (e *DatabaseChangedError) Error() string {
	msg := fmt.Sprintf("multidb: active database changed from %q to %q while a write was in flight; it was not re-run (it may have executed on %q: check before re-running)",
		e.Old, e.New, e.Old)
	if e.Cause != nil {
		msg += "; cause: " + e.Cause.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrDatabaseChanged) true.
func (e *DatabaseChangedError) Is(target error) bool { return target == ErrDatabaseChanged }

// Unwrap returns the cause.
func (e *DatabaseChangedError) Unwrap() error { return e.Cause }

// DatabaseError reports work that failed on a database without its
// answer: the connection could not be made, was lost, or timed out, the
// caller's context ended while it waited, or the database refused it
// before it ran (a refusal such as READONLY or LOADING, its client closed
// under it). The database's own answers (WRONGTYPE, a script's error, a
// missing key) are returned as go-redis returns them, never as a
// DatabaseError; so are the typed errors of a database that is itself a
// rediskit client (a *sentinel.NodeError, say), which Err then holds. It
// unwraps to the underlying error.
type DatabaseError struct {
	// Database is the name of the database the work ran on.
	Database string
	// Write says whether the work writes (per Config.Classifier).
	Write bool
	// MayHaveExecuted is false only when the work provably did not run
	// (never sent, or refused before execution): re-running it is safe. A
	// write that may have run must be checked for before it is re-run.
	MayHaveExecuted bool
	Err             error
}

func (e *DatabaseError) Error() string {
	what := "read"
	if e.Write {
		what = "write"
	}
	outcome := failure.Outcome(e.Write, e.MayHaveExecuted, "it did not execute")
	return fmt.Sprintf("multidb: %s on database %q failed: %s (%s)", what, e.Database, failure.BriefErr(e.Err), outcome)
}

// Unwrap returns the underlying error.
func (e *DatabaseError) Unwrap() error { return e.Err }

// UnhealthyError reports that SetActive (or UpdateWeight's switch) was
// refused because the database failed its health check.
type UnhealthyError struct {
	Database string
	Policy   HealthPolicy
	Passed   int // probes that passed
	Probes   int // probes run
	Err      error
}

func (e *UnhealthyError) Error() string {
	msg := fmt.Sprintf("multidb: database %q is not healthy (%d of %d probes passed, policy %s); the active database did not change",
		e.Database, e.Passed, e.Probes, e.Policy)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes errors.Is(err, ErrUnhealthy) true.
func (e *UnhealthyError) Is(target error) bool { return target == ErrUnhealthy }

// Unwrap returns the last probe's error.
func (e *UnhealthyError) Unwrap() error { return e.Err }

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
