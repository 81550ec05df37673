package sentinel

import (
	"context"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/redis/go-redis/v9"
)

// failureSignal reports whether a call's failure suggests the master may
// have moved: a connection that could not be made or dropped, a timeout, or
// a reply that only a demoted, unsynced or loading node gives (READONLY,
// MASTERDOWN, LOADING). The caller's own cancellation is not one. For a
// pipeline, any command's error counts.
func (c *Client) failureSignal(cmd redis.Cmder, cmds []redis.Cmder, err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if cmd != nil {
		return isSignal(err)
	}
	if isSignal(err) {
		return true
	}
	for _, q := range cmds {
		if isSignal(q.Err()) {
			return true
		}
	}
	return false
}

func isSignal(err error) bool {
	return err != nil && (notExecutedErr(err) || isNetworkError(err) || isTimeout(err))
}

// provablyNotExecuted reports whether writing work certainly did not run:
// it was never sent (no connection, a retired client, no pool slot), or
// every write in it was refused before execution (READONLY, MASTERDOWN,
// LOADING; EXECABORT for a transaction). Anything else (a timeout, a
// connection lost after sending, a pipeline in which a write ran) may have
// executed. Reads in a pipeline do not matter: running them again is
// harmless.
func (c *Client) provablyNotExecuted(cmd redis.Cmder, cmds []redis.Cmder, err error) bool {
	if cmd != nil {
		return notExecutedErr(err)
	}
	if isTx(cmds) {
		if notExecutedErr(err) {
			return true
		}
		for _, q := range cmds[1 : len(cmds)-1] {
			if notExecutedErr(q.Err()) {
				return true // a refused queued command aborts the whole EXEC
			}
		}
		return false
	}
	for _, q := range cmds {
		if c.classifier.ReadOnly(q) {
			continue
		}
		if !notExecutedErr(q.Err()) {
			return false
		}
	}
	return true
}

func notExecutedErr(err error) bool {
	if err == nil {
		return false
	}
	return isDialError(err) ||
		errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, redis.ErrPoolExhausted) ||
		redis.IsReadOnlyError(err) ||
		redis.IsMasterDownError(err) ||
		redis.IsLoadingError(err) ||
		redis.IsExecAbortError(err)
}

func isNetworkError(err error) bool {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EPIPE) {
		return true
	}
	var op *net.OpError
	return errors.As(err, &op)
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
