// Package failure classifies the errors of work a routed client ran on a
// node or a database: which ones are signs that the target failed, and
// which prove that the work did not execute, so that running it again
// elsewhere cannot run it twice.
//
// The Sentinel client (package sentinel) and the multi-database client
// (package multidb) share these rules.
//
// It is also the one place where rediskit tells kinds of errors apart: no
// other package tests net.Error's Timeout, compares with io.EOF, an errno
// or a context error to group kinds, or matches a server reply's text.
// Call sites use these predicates, or go-redis's own named ones
// (redis.IsReadOnlyError, IsAuthError, ...) where go-redis has one, and
// errors.Is against one sentinel value that names exactly one cause
// (redis.ErrClosed, say). Every predicate is false for a nil error; for
// redis.Nil, the most common error, all but IsNil and Reply are false, and
// none allocates.
//
// # What ran
//
//   - NotExecuted: the command provably did not run (never sent, or
//     refused before execution: READONLY, MASTERDOWN, LOADING, EXECABORT,
//     UNBLOCKED, and a cluster's MOVED, ASK, TRYAGAIN, CLUSTERDOWN); only
//     such work may be run again elsewhere.
//   - ProvablyNotExecuted: the same for a command, a pipeline (its writes)
//     or a transaction.
//
// # What the caller sees
//
//   - Answer: the command's own answer (redis.Nil, or a reply that is not
//     a refusal: WRONGTYPE, a script's error, CROSSSLOT, a WATCH
//     conflict), which a routed client returns as it is.
//   - Seal: the last step of a routed client's call: every other error of
//     a command, a pipeline (each command's and Exec's) or a transaction
//     becomes the client's typed error, told whether the work may have
//     executed (a transaction all or nothing). Each client supplies its
//     types (Sealer); the rule is written once, here.
//
// # Whether the target failed
//
//   - Signal: a sign the target failed or moved (NotExecuted, Network or
//     Timeout); WorkSignal: the same for a command or a pipeline, the
//     caller's own end excluded.
//   - Reply: the server answered (redis.Nil, WRONGTYPE, READONLY, ...);
//     IsNil: the reply for a missing key.
//
// # Connections
//
//   - IsDial: a failure to connect (a *DialError, or go-redis's dial
//     *net.OpError); nothing was sent.
//   - Refused: ECONNREFUSED, nothing listens at the address.
//   - Network: a connection that could not be made or was lost (any
//     *net.OpError, EOF, a reset, a broken pipe, a closed connection).
//   - ConnectionLost: a connection that was made, then failed otherwise
//     than by a deadline (Network, not IsDial, Refused or Timeout): the
//     work may have run.
//
// # Deadlines and contexts
//
//   - Timeout: a deadline ended the call: a socket read, write or dial
//     deadline, or context.DeadlineExceeded. It does not say whose.
//   - ContextError: err is or wraps context.Canceled or
//     context.DeadlineExceeded, of any context.
//   - BareContextError: err is one of them itself, unwrapped: a caller's
//     ctx.Err() passed straight back.
//   - CallerEnded(ctx): the caller's own context is over, cancelled or
//     past its deadline by the clock. This is how the caller's deadline is
//     told from the server's slowness: with ContextTimeoutEnabled go-redis
//     sets the socket deadline from the context's, so the caller's
//     deadline arrives as an i/o timeout (Timeout), a moment before
//     ctx.Err() is set.
//
// # Server replies
//
// Matched on the reply's leading words as go-redis exposes them
// (redis.HasErrorPrefix: a redis.Error, "ERR " ignored), never on text
// found anywhere in an error's message:
//
//   - UnknownMaster: a Sentinel monitors no master of that name.
//   - UnknownCommand: the server does not know the command (HELLO on
//     Redis before 6, a renamed command).
//   - NoScript: EVALSHA of a script the server does not have.
//   - NoPasswordConfigured: AUTH with a password on a server that has
//     none.
//   - AOFDisabled: WAITAOF asking for the local fsync on a server without
//     an append-only file.
//   - Unblocked: a blocking command ended before it was served.
//   - ParseRedirect: a cluster's MOVED or ASK, with its slot and address;
//     TryAgain (TRYAGAIN: a multi-key command mid-migration), ClusterDown
//     (CLUSTERDOWN), CrossSlot (CROSSSLOT: keys of different slots, not a
//     failure of the node).
//   - Loading (LOADING), MasterDown (MASTERDOWN): a node that serves
//     nothing yet, or a replica cut from its master.
//   - Unreachable: work that reached no server able to run it (refused,
//     lost, timed out, no pool connection, CLUSTERDOWN / LOADING /
//     MASTERDOWN, a client's "try again" error with RetryAdvice); not the
//     caller's cancellation, nor a closed client. The client-side cache's
//     fail-open reads fall back on it.
package failure
