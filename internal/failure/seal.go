package failure

import (
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/internal/routing"
)

// Answer reports whether err is the command's own answer, which a routed
// client hands its caller as it is: redis.Nil, or a server reply that does
// not prove the command was refused before it ran (WRONGTYPE, a script's
// error, NOSCRIPT, CROSSSLOT, a WATCH transaction's redis.TxFailedErr).
// Not an answer: a refusal (NotExecuted: READONLY, MASTERDOWN, LOADING,
// EXECABORT, UNBLOCKED, MOVED, ASK, TRYAGAIN, CLUSTERDOWN), and anything
// that is not a reply (a network error, a timeout, a context's end).
func Answer(err error) bool {
	return err != nil && Reply(err) && !NotExecuted(err)
}

// Answered reports whether every error of the work (err, cmd's, each of
// cmds') is nil or an Answer: Seal has nothing to do. A client checks it
// before it builds its Sealer, so that a call that succeeded, or missed a
// key, allocates nothing for it.
func Answered(cmd redis.Cmder, cmds []redis.Cmder, err error) bool {
	if err != nil && !Answer(err) {
		return false
	}
	if cmd != nil {
		e := cmd.Err()
		return e == nil || Answer(e)
	}
	for _, q := range cmds {
		if e := q.Err(); e != nil && !Answer(e) {
			return false
		}
	}
	return true
}

// Sealer is what Seal needs of a routed client: which errors are already
// its own typed ones, and how it types the others.
type Sealer struct {
	// Typed reports whether err is (wraps) one of the client's typed
	// errors, left as it is.
	Typed func(err error) bool
	// Wrap returns the client's typed error for err, a failure of q (nil:
	// of the work as a whole, the error its Exec or call returns), saying
	// whether the work may have executed.
	Wrap func(q redis.Cmder, err error, mayHaveExecuted bool) error
	// Own is the error the caller's own function returned (Watch's fn),
	// if any: returned as it is, unless it is a failure (Signal) or a
	// context's end, which the function passed on from a command it ran.
	Own error
}

// Seal is the last step of a routed client's call: it makes every error
// the caller can see (cmd's, each command's of cmds, and err, which it
// returns) either the command's own Answer or one of the client's typed
// errors (s.Typed), wrapping any other (a network error, a timeout, the
// caller's context's end, a refusal such as MOVED or CLUSTERDOWN) with
// s.Wrap, which is told whether the work may have executed:
//
//   - a command: unless its error proves it did not run (NotExecuted);
//   - a command of a pipeline: the same, of its own error (a pipeline's
//     commands run, or not, each on its own);
//   - a transaction (cmds as IsTx): all or nothing, for every command and
//     the EXEC: not, when ProvablyNotExecuted says so (a refused queued
//     command, EXECABORT, nothing sent), else may have.
//
// The returned error, when it is not an answer or typed, is that of the
// first command of a pipeline that failed with it (go-redis returns the
// first command's error), else wrapped for the work as a whole (q nil): a
// transaction's as its commands are; a pipeline's may have executed unless
// err and every command's error prove that nothing ran.
//
// A transaction's EXECABORT caused by a queued command's own answer (a
// syntax error, an unknown command) is the transaction's answer too, and
// is left as it is, as that command's error is.
func Seal(cmd redis.Cmder, cmds []redis.Cmder, err error, s Sealer) error {
	placed := func(e error) bool {
		return e == nil || Answer(e) || s.Typed(e) || ExactlyOnceVerdict(e) ||
			s.Own != nil && errors.Is(e, s.Own) && !Signal(e) && !ContextError(e)
	}
	if cmd != nil {
		if e := cmd.Err(); !placed(e) {
			cmd.SetErr(s.Wrap(cmd, e, !NotExecuted(e)))
		}
		if placed(err) {
			return err
		}
		return s.Wrap(nil, err, !NotExecuted(err))
	}
	tx := routing.IsTx(cmds)
	// Judged once, and only when an error is not placed: a pipeline whose
	// commands all succeeded (or answered) costs a look at each.
	var ran, answered, judged bool
	judge := func() {
		if !judged {
			judged = true
			ran, answered = mayHaveRun(tx, cmds, err), tx && abortedByAnswer(cmds)
		}
	}
	var same error // err as the first command that failed with it got it
	for _, q := range cmds {
		e := q.Err()
		if placed(e) {
			continue
		}
		judge()
		if answered && redis.IsExecAbortError(e) {
			continue
		}
		may := !NotExecuted(e)
		if tx {
			may = ran
		}
		q.SetErr(s.Wrap(q, e, may))
		if same == nil && err != nil && errors.Is(e, err) {
			same = q.Err()
		}
	}
	if placed(err) {
		return err
	}
	judge()
	switch {
	case answered && redis.IsExecAbortError(err):
		return err
	case same != nil && !tx:
		return same
	}
	return s.Wrap(nil, err, ran)
}

// abortedByAnswer reports whether a transaction's queued command was
// refused with an answer of its own (a syntax error): its EXECABORT is no
// failure of the node.
func abortedByAnswer(cmds []redis.Cmder) bool {
	for _, q := range cmds[1 : len(cmds)-1] {
		if Answer(q.Err()) && !redis.IsExecAbortError(q.Err()) {
			return true
		}
	}
	return false
}

// mayHaveRun reports whether any of the work may have run: for a
// transaction, unless ProvablyNotExecuted; for a pipeline, unless err and
// each command's error prove that it did not run.
func mayHaveRun(tx bool, cmds []redis.Cmder, err error) bool {
	if tx {
		return !ProvablyNotExecuted(nil, nil, cmds, err)
	}
	if err != nil && !NotExecuted(err) {
		return true
	}
	for _, q := range cmds {
		if !NotExecuted(q.Err()) {
			return true
		}
	}
	return false
}

// ExactlyOnceVerdict reports whether err is the exactly-once path's own
// verdict on a write (package exactlyonce: a write it cannot make
// exactly-once, a server that refuses its script, a token key the
// application wrote): nothing ran, and every client returns it as it is.
func ExactlyOnceVerdict(err error) bool {
	if err == nil || IsNil(err) {
		return false
	}
	var (
		ue *exactlyonce.UnsupportedError
		re *exactlyonce.RefusedError
		te *exactlyonce.TokenKeyError
	)
	return errors.As(err, &ue) || errors.As(err, &re) || errors.As(err, &te)
}
