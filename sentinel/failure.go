package sentinel

import (
	"context"
	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
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
