package sentinel

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/safe"
)

// failureSignal reports whether a call's failure suggests the master may
// have moved: a connection that could not be made or dropped, a timeout, or
// a reply that only a demoted, unsynced or loading node gives (READONLY,
// MASTERDOWN, LOADING). The caller's own cancellation is not one. For a
// pipeline, any command's error counts.
func (c *Client) failureSignal(ctx context.Context, cmd redis.Cmder, cmds []redis.Cmder, err error) bool {
	return failure.WorkSignal(ctx, cmd, cmds, err)
}

// provablyNotExecuted reports whether writing work certainly did not run:
// it was never sent (no connection, a retired client, no pool slot), or
// every write in it was refused before execution (READONLY, MASTERDOWN,
// LOADING; EXECABORT for a transaction). Anything else (a timeout, a
// connection lost after sending, a pipeline in which a write ran) may have
// executed. Reads in a pipeline do not matter: running them again is
// harmless.
func (c *Client) provablyNotExecuted(cmd redis.Cmder, cmds []redis.Cmder, err error) bool {
	return failure.ProvablyNotExecuted(c.classifier, cmd, cmds, err)
}

// typed reports whether err is one of the package's errors, which a call
// returns as it is (see nodeError); ErrClosed only once the client is
// closed (a node's client closed under a call is a refusal on that node).
func (c *Client) typed(err error) bool {
	var (
		ne  *NodeError
		mce *MasterChangedError
		nde *NotDurableError
		whe *WriteHeldError
		nre *NoReplicaError
		de  *DiscoveryError
		ce  *CursorError
		ue  *UnsupportedError
		pe  *safe.PanicError
	)
	return errors.As(err, &ne) || errors.As(err, &mce) || errors.As(err, &nde) || errors.As(err, &whe) ||
		errors.As(err, &nre) || errors.As(err, &de) || errors.As(err, &ce) || errors.As(err, &ue) ||
		errors.As(err, &pe) || errors.Is(err, ErrClosed) && c.ctx.Err() != nil
}
