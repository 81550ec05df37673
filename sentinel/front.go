package sentinel

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/push"

	"github.com/rediskit/rediskit/internal/routing"
)

// The methods of *redis.Client that would misbehave on the routing front
// (which never dials) are shadowed here: each works as in go-redis, on the
// node the client routes to, or refuses with an *UnsupportedError that
// says what to use. Every other method of *redis.Client (each command,
// Do, Process, Pipeline, TxPipeline, the search builders, ...) runs through
// the client's routing. TestFrontMethods checks, by reflection, that every
// exported method of *redis.Client is one or the other, so that a go-redis
// upgrade adding one fails until it is handled.

// refusals are the methods the client refuses as every routed client does.
func (c *Client) refusals() routing.Refusals {
	return routing.Refusals{Client: "sentinel.Client", Match: ErrUnsupported,
		WaitInstead: "Config.Durable or WithDurable(ctx, true), which confirm each write with WAIT on the connection that made it", Nodes: "the data nodes'"}
}

// WithTimeout returns a client whose calls are routed as c's are, each
// bounded by timeout (as go-redis's WithTimeout bounds a call by its read
// and write timeouts; blocking commands keep their own wait). It shares
// c's topology, connections and hooks; closing it closes only itself.
func (c *Client) WithTimeout(timeout time.Duration) *redis.Client {
	return routing.WithTimeout(c.front.Options(), timeout, c.classifier.Blocking, c.process, c.processPipeline)
}

// Options returns the go-redis options of the current master's client (a
// copy): the data-node settings (credentials, database, TLS, timeouts,
// pool) rediskit runs with. Addr is the current master's, which changes
// with a failover; before the first discovery it names the deployment
// ("sentinel/<MasterName>").
func (c *Client) Options() *redis.Options {
	if snap := c.topo.load(); snap.master != nil {
		o := *snap.master.client.Options()
		return &o
	}
	return c.front.Options()
}

// NodeAddress returns the current master's address ("" before the first
// discovery).
func (c *Client) NodeAddress() string { return c.Master() }

// EphemeralConn returns a connection to the current master that is
// discarded, not pooled, when closed (go-redis's EphemeralConn). Like
// Conn, it is pinned to that node and does not follow failovers.
func (c *Client) EphemeralConn() *redis.Conn {
	snap, err := c.current(context.Background())
	if err != nil || snap.master == nil {
		return c.front.EphemeralConn()
	}
	return snap.master.client.EphemeralConn()
}

// Wait is refused: WAIT counts the replicas that acknowledged the writes of
// the connection it runs on, and the client runs each call on a connection
// of its choosing, so no WAIT could speak for the caller's writes. Use
// Config.Durable or WithDurable, which confirm each write with WAIT on
// its own connection.
func (c *Client) Wait(ctx context.Context, numReplicas int, timeout time.Duration) *redis.IntCmd {
	return c.refusals().Wait(ctx, numReplicas, timeout)
}

// WaitAOF is refused, as Wait is.
func (c *Client) WaitAOF(ctx context.Context, numLocal, numReplicas int, timeout time.Duration) *redis.IntSliceCmd {
	return c.refusals().WaitAOF(ctx, numLocal, numReplicas, timeout)
}

// RegisterPushNotificationHandler is refused: push notifications arrive on
// the data nodes' connections, which the client opens and closes as the
// topology changes.
func (c *Client) RegisterPushNotificationHandler(string, push.NotificationHandler, bool) error {
	return c.refusals().RegisterPushNotificationHandler()
}

// AutoPipeline returns go-redis's blocking auto-pipeliner over the routed
// client: command calls on it (ap.Get, ap.Set, ...) block until done, and
// concurrent ones share round trips. Each command of its batches is routed
// on its own (a read may go to a replica while the write beside it goes to
// the master) and is held, re-run or refused by the client's rules, as a
// lone command is; underneath, the commands that go to one node are sent
// together (see Config.AutoPipeline). Pipelines and transactions made on
// it run as on the client, whole. go-redis runs its batches without the
// callers' contexts (deadlines, WithReadFrom, WithDurable): the client's
// Config applies, and the data nodes' timeouts bound each command. The
// instance is go-redis's, cached by it and closed by Close. To batch
// ordinary calls with the callers' contexts intact, set
// Config.AutoPipeline instead.
func (c *Client) AutoPipeline() (*redis.AutoPipeliner, error) {
	return c.autos.AutoPipeline(nil)
}

// AutoPipelineWithOptions is AutoPipeline with go-redis's options (the
// first call's win, as in go-redis).
func (c *Client) AutoPipelineWithOptions(opts *redis.AutoPipelineOptions) (*redis.AutoPipeliner, error) {
	return c.autos.AutoPipeline(opts)
}

// AsyncAutoPipeline returns go-redis's deferred auto-pipeliner over the
// routed client (calls return at once, results block until done), with
// AutoPipeline's routing and failure rules.
func (c *Client) AsyncAutoPipeline() (*redis.AutoPipeliner, error) {
	return c.autos.AsyncAutoPipeline(nil)
}

// AsyncAutoPipelineWithOptions is AsyncAutoPipeline with go-redis's
// options.
func (c *Client) AsyncAutoPipelineWithOptions(opts *redis.AutoPipelineOptions) (*redis.AutoPipeliner, error) {
	return c.autos.AsyncAutoPipeline(opts)
}

// newAutoFront is the front the auto-pipeliners are made on: its
// batches go to processBatch, its pipelines to processPipeline.
func (c *Client) newAutoFront() *redis.Client {
	opt := c.front.Options()
	opt.AutoPipelineOptions = c.opts.AutoPipelineOptions
	return routing.NewAutoFront(opt, c.process, c.processPipeline, c.processBatch)
}

// processBatch runs an auto-pipeliner's batch: independent commands, each
// by the single-command path.
func (c *Client) processBatch(ctx context.Context, cmds []redis.Cmder) error {
	return routing.RunIndependent(ctx, cmds, c.process)
}
