// Package failure classifies the errors of work a routed client ran on a
// node or a database: which ones are signs that the target failed, and
// which prove that the work did not execute, so that running it again
// elsewhere cannot run it twice.
//
// The Sentinel client (package sentinel) and the multi-database client
// (package multidb) share these rules.
package failure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/internal/routing"
)

// DialError marks a failure to connect: nothing was sent, so the command
// provably did not execute. Dialers of routed clients wrap their errors in
// it.
type DialError struct {
	Addr string
	Err  error
}

func (e *DialError) Error() string { return fmt.Sprintf("connect to %s: %v", e.Addr, e.Err) }
func (e *DialError) Unwrap() error { return e.Err }

// IsNil reports whether err is redis.Nil, the reply for a missing key:
// an answer, not a failure, and by far the most common error (every cache
// miss). The functions here test it first because their general tests
// (errors.As into a pointer, here and in go-redis's IsReadOnlyError and
// the like) allocate: a miss must cost no more than a hit.
func IsNil(err error) bool { return err == redis.Nil }

// Reply reports whether err is a reply from the server (redis.Nil,
// WRONGTYPE, READONLY, ...): whatever it says, the server answered.
func Reply(err error) bool {
	if IsNil(err) {
		return true
	}
	var re redis.Error
	return errors.As(err, &re)
}

// IsDial reports whether err is a failure to connect: a *DialError, or a
// *net.OpError of a dial (what go-redis's own dialer returns).
func IsDial(err error) bool {
	if err == nil || IsNil(err) {
		return false
	}
	var de *DialError
	if errors.As(err, &de) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// NotExecuted reports whether err proves that the command it ended did
// not run: it was never sent (no connection, a closed client, no pool
// slot), or the server refused it before execution (READONLY, MASTERDOWN,
// LOADING, EXECABORT), or a blocking command was ended before it was
// served (UNBLOCKED: by CLIENT UNBLOCK ... ERROR, or by the server when it
// became a replica): it popped, moved or delivered nothing.
func NotExecuted(err error) bool {
	if err == nil || IsNil(err) {
		return false
	}
	return IsDial(err) || Unblocked(err) ||
		errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, redis.ErrPoolExhausted) ||
		redis.IsReadOnlyError(err) ||
		redis.IsMasterDownError(err) ||
		redis.IsLoadingError(err) ||
		redis.IsExecAbortError(err)
}

// Unblocked reports whether err is the UNBLOCKED reply a blocking command
// gets when it is ended before it was served.
func Unblocked(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && strings.HasPrefix(re.Error(), "UNBLOCKED ")
}

// Network reports whether err is a connection that could not be made or
// was lost (refused, reset, closed, a broken pipe, EOF).
func Network(err error) bool {
	if err == nil || IsNil(err) {
		return false
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op)
}

// Timeout reports whether err is a network timeout (a socket deadline, set
// by the client's timeouts or the context's deadline, passed).
func Timeout(err error) bool {
	if err == nil || IsNil(err) {
		return false
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// Signal reports whether err suggests the target failed or moved: it
// proves the work did not run (see NotExecuted), or it is a network error
// or a timeout.
func Signal(err error) bool {
	return err != nil && (NotExecuted(err) || Network(err) || Timeout(err))
}

// WorkSignal reports whether work that failed with err is a Signal: for a
// pipeline, any command's error counts. The caller's own cancellation or
// deadline (ctx's) is not one, even when go-redis reports it as a socket
// timeout.
func WorkSignal(ctx context.Context, cmd redis.Cmder, cmds []redis.Cmder, err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || CallerEnded(ctx) {
		return false
	}
	if cmd != nil {
		return Signal(err)
	}
	if Signal(err) {
		return true
	}
	for _, q := range cmds {
		if Signal(q.Err()) {
			return true
		}
	}
	return false
}

// CallerEnded reports whether the caller's context is over: cancelled, or
// past its deadline. With ContextTimeoutEnabled, go-redis sets the socket
// deadline from the context's, so the read can time out a moment before
// the context's own timer fires: the deadline is compared with the clock.
func CallerEnded(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	d, ok := ctx.Deadline()
	return ok && !time.Now().Before(d)
}

// ProvablyNotExecuted reports whether writing work that failed with err
// certainly did not run: it was never sent (no connection, a closed
// client, no pool slot), or every write in it was refused before execution
// (READONLY, MASTERDOWN, LOADING; EXECABORT for a transaction). Anything
// else (a timeout, a connection lost after sending, a pipeline in which a
// write ran) may have executed. Reads in a pipeline, as cl classifies
// them, do not matter: running them again is harmless.
func ProvablyNotExecuted(cl *classify.Classifier, cmd redis.Cmder, cmds []redis.Cmder, err error) bool {
	if cmd != nil {
		return NotExecuted(err)
	}
	if routing.IsTx(cmds) {
		if NotExecuted(err) {
			return true
		}
		for _, q := range cmds[1 : len(cmds)-1] {
			if NotExecuted(q.Err()) {
				return true // a refused queued command aborts the whole EXEC
			}
		}
		return false
	}
	for _, q := range cmds {
		if cl.ReadOnly(q) {
			continue
		}
		if !NotExecuted(q.Err()) {
			return false
		}
	}
	return true
}
