package failure

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
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
// slot, its caller's context ended while it waited for a batch: a
// *routing.UnsentError), or the server refused it before execution (READONLY, MASTERDOWN,
// LOADING, EXECABORT), or a blocking command was ended before it was
// served (UNBLOCKED: by CLIENT UNBLOCK ... ERROR, or by the server when it
// became a replica): it popped, moved or delivered nothing.
func NotExecuted(err error) bool {
	if err == nil || IsNil(err) {
		return false
	}
	var unsent *routing.UnsentError
	return IsDial(err) || Unblocked(err) || errors.As(err, &unsent) ||
		errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, redis.ErrPoolTimeout) ||
		errors.Is(err, redis.ErrPoolExhausted) ||
		redis.IsReadOnlyError(err) ||
		redis.IsMasterDownError(err) ||
		redis.IsLoadingError(err) ||
		redis.IsExecAbortError(err) ||
		isRedirect(err) || TryAgain(err) || ClusterDown(err)
}

// Redirect is a Redis Cluster MOVED or ASK reply: the command was not run,
// and Addr serves Slot (for ASK: for this one command, after ASKING).
type Redirect struct {
	Ask  bool
	Slot int
	Addr string
}

// ParseRedirect returns the redirect err is (MOVED <slot> <addr>, ASK
// <slot> <addr>), or false.
func ParseRedirect(err error) (Redirect, bool) {
	if err == nil || IsNil(err) {
		return Redirect{}, false
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return Redirect{}, false
	}
	kind, rest, ok := strings.Cut(re.Error(), " ")
	if !ok || (kind != "MOVED" && kind != "ASK") {
		return Redirect{}, false
	}
	slotText, addr, ok := strings.Cut(rest, " ")
	if !ok || addr == "" || strings.ContainsAny(addr, " \r\n") {
		return Redirect{}, false
	}
	slot, err2 := strconv.Atoi(slotText)
	if err2 != nil || slot < 0 || slot >= 16384 {
		return Redirect{}, false
	}
	return Redirect{Ask: kind == "ASK", Slot: slot, Addr: addr}, true
}

func isRedirect(err error) bool {
	_, ok := ParseRedirect(err)
	return ok
}

// TryAgain reports whether err is TRYAGAIN: a multi-key command on a slot
// being migrated whose keys are split between the two nodes; it did not
// run, and may once the migration is over.
func TryAgain(err error) bool { return replyPrefix(err, "TRYAGAIN") }

// ClusterDown reports whether err is CLUSTERDOWN: the node does not serve
// (a slot without a master, or the node cut from the majority); the
// command did not run.
func ClusterDown(err error) bool { return replyPrefix(err, "CLUSTERDOWN") }

// Loading reports whether err is LOADING: the server is loading its
// dataset and serves nothing yet; the command did not run.
func Loading(err error) bool { return replyPrefix(err, "LOADING") }

// MasterDown reports whether err is MASTERDOWN: a replica that lost its
// master and does not serve stale data; the command did not run.
func MasterDown(err error) bool { return replyPrefix(err, "MASTERDOWN") }

// PubSubPayload reports whether err is go-redis's refusal of a pubsub
// message it cannot read as a channel message: the invalidation without
// keys a server sends for FLUSHALL and FLUSHDB arrives so on a RESP2
// tracking subscription.
func PubSubPayload(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "redis: unsupported pubsub message payload")
}

// retryAdvisor is guard.Transient's method: the errors of rediskit's
// clients that mean "no server can do this now, try again" (no master, a
// failover under way, no healthy database).
type retryAdvisor interface {
	RetryAdvice() (after time.Duration, mayHaveExecuted bool)
}

// Unreachable reports whether err says work could not reach a server that
// would run it: a connection refused, lost or timed out (the caller's
// deadline included), no pool connection in time, a node that does not
// serve (CLUSTERDOWN, LOADING, MASTERDOWN), or a client's error that
// means "try again" (it has a RetryAdvice method). Not: any other answer
// of the server, the caller's cancellation, a closed client. A client-side
// cache's fail-open reads (clientcache.Config.MaxStale) fall back on it.
func Unreachable(err error) bool {
	var ra retryAdvisor
	switch {
	case err == nil, errors.Is(err, context.Canceled), errors.Is(err, redis.ErrClosed):
		return false
	case ClusterDown(err), Loading(err), MasterDown(err):
		return true
	case Reply(err):
		return false
	case errors.As(err, &ra):
		return true
	}
	return Network(err) || Timeout(err) || IsDial(err) || errors.Is(err, redis.ErrPoolTimeout)
}

// CrossSlot reports whether err is CROSSSLOT: a multi-key command whose
// keys hash to different slots, refused by a cluster node. It did not run,
// and never will as it is: not a failure signal.
func CrossSlot(err error) bool { return replyPrefix(err, "CROSSSLOT") }

// Unblocked reports whether err is the UNBLOCKED reply a blocking command
// gets when it is ended before it was served.
func Unblocked(err error) bool {
	if err == nil || IsNil(err) {
		return false
	}
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

// Timeout reports whether a deadline ended the call err ended: err is, or
// wraps, an error whose Timeout method reports true (a net.Error), or a
// tree of errors (errors.Join) holds context.DeadlineExceeded or
// os.ErrDeadlineExceeded in any branch. That is:
//
//   - a socket read or write deadline (a *net.OpError around
//     os.ErrDeadlineExceeded, "i/o timeout"), set by the client's
//     ReadTimeout/WriteTimeout or, with ContextTimeoutEnabled, from the
//     context's deadline;
//   - a dial that timed out (a dial *net.OpError: IsDial too);
//   - context.DeadlineExceeded, however wrapped, whoever's context it was
//     (it is a net.Error whose Timeout is true).
//
// Not: context.Canceled (see ContextError), redis.ErrPoolTimeout (no pool
// slot came free: the command was never sent; see NotExecuted), or any
// server reply.
//
// Timeout does not say whose deadline it was, and cannot: with
// ContextTimeoutEnabled go-redis turns the caller's deadline into the
// socket's, so the caller's own deadline arrives as an i/o timeout, a
// moment before the context's timer fires. Code that must tell the
// caller's deadline from the server's slowness asks CallerEnded(ctx)
// about the caller's context.
func Timeout(err error) bool {
	if err == nil || IsNil(err) {
		return false
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	// errors.As stops at the first net.Error; in a tree, a deadline can
	// sit in a later branch than a net.Error that is not a timeout.
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded)
}

// ContextError reports whether err is, or wraps, a context's end:
// context.Canceled or context.DeadlineExceeded, of any context (the
// caller's, or one a layer made for a limit of its own). It says that a
// context stopped the work, not that the server failed; whose context it
// was, CallerEnded or BareContextError tell.
func ContextError(err error) bool {
	if err == nil || IsNil(err) {
		return false
	}
	return errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// BareContextError reports whether err is context.Canceled or
// context.DeadlineExceeded itself, not wrapped: what a function returns
// when it passes its caller's ctx.Err() (or, the caller's deadline having
// passed by the clock, the error that ctx is about to report) straight
// back. A wrapped context error was given a meaning by whoever wrapped it
// (a limit of the layer's own, a loader's deadline) and is not bare.
func BareContextError(err error) bool {
	return err == context.Canceled || err == context.DeadlineExceeded
}

// ConnectionLost reports whether err is a connection that had been made
// and then failed otherwise than by a deadline: EOF, a reset, a broken
// pipe, a connection closed under the call, or any other network error on
// it (see Network). Not a failure to connect (IsDial, Refused), not a
// Timeout, not a reply. Work that failed so may have run.
func ConnectionLost(err error) bool {
	return Network(err) && !IsDial(err) && !Refused(err) && !Timeout(err)
}

// Refused reports whether err is, or wraps, ECONNREFUSED: nothing listens
// at the address (the server is down, or not started yet). It is a dial
// error when go-redis reports it, and the command was never sent.
func Refused(err error) bool {
	if err == nil || IsNil(err) {
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}

// UnknownMaster reports whether err is a Sentinel's reply that it
// monitors no master of the name asked about ("ERR No such master with
// that name", to SENTINEL MASTER, REPLICAS, SENTINELS, ...), matched on
// the reply's leading words as go-redis's HasErrorPrefix exposes them
// (after "ERR "), not on text anywhere in an error.
func UnknownMaster(err error) bool {
	return replyPrefix(err, "No such master")
}

// UnknownCommand reports whether err is the server's reply that it does
// not know the command ("ERR unknown command 'HELLO', with args beginning
// with: "): an older server, or a command renamed or disabled.
func UnknownCommand(err error) bool {
	return replyPrefix(err, "unknown command")
}

// NoScript reports whether err is the NOSCRIPT reply to EVALSHA: the
// server does not have the script (it restarted, failed over, or ran
// SCRIPT FLUSH); load it and run it again. The script did not run.
func NoScript(err error) bool {
	return replyPrefix(err, "NOSCRIPT")
}

// AOFDisabled reports whether err is the reply to WAITAOF asking for the
// local fsync (numlocal 1) on a server running without an append-only file
// ("ERR WAITAOF cannot be used when numlocal is set but appendonly is
// disabled."): nothing was waited for.
func AOFDisabled(err error) bool {
	return replyPrefix(err, "WAITAOF cannot be used when numlocal is set but appendonly is disabled")
}

// NoPasswordConfigured reports whether err is the reply to AUTH with a
// password on a server whose default user has none ("ERR AUTH <password>
// called without any password configured for the default user. ..."):
// the client's settings name a password the server does not expect.
// Redis never echoes the password: "<password>" is literal.
func NoPasswordConfigured(err error) bool {
	return replyPrefix(err, "AUTH <password> called without any password configured")
}

// replyPrefix reports whether err is, or wraps, a server reply (a
// redis.Error) whose text starts with prefix, an "ERR " before it
// ignored (redis.HasErrorPrefix).
func replyPrefix(err error, prefix string) bool {
	if err == nil || IsNil(err) {
		return false
	}
	return redis.HasErrorPrefix(err, prefix)
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
	if ContextError(err) || CallerEnded(ctx) {
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

// AOFProbe judges the reply (err) of WAITAOF 1 0 1 sent to a master on a
// connection that never writes: nil when it can confirm AOF fsyncs; an
// error wrapping unavailable (the caller's package's sentinel error) when
// it has no WAITAOF or runs without an AOF; settled is false for any other
// failure, which says nothing of the master and is not to be remembered.
func AOFProbe(err, unavailable error) (verdict error, settled bool) {
	switch {
	case err == nil:
		return nil, true
	case UnknownCommand(err):
		return fmt.Errorf("%w: it has no WAITAOF (Redis and Valkey have it from 7.2): %s", unavailable, BriefErr(err)), true
	case AOFDisabled(err):
		return fmt.Errorf("%w: it runs without an append-only file: set appendonly yes on the master and on every replica: %s", unavailable, BriefErr(err)), true
	}
	return err, false
}
