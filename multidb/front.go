package multidb

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/push"

	"github.com/rediskit/rediskit/internal/routing"
)

// The methods of *redis.Client that would misbehave on the routing front
// (which never dials) are shadowed here: each works as in go-redis, on the
// active database, or refuses with an *UnsupportedError that says what to
// use. Every other method of *redis.Client runs through the client's
// routing; TestFrontMethods checks, by reflection, that every exported
// method of *redis.Client is one or the other.

// refusals are the methods the client refuses as every routed client does.
func (c *Client) refusals() routing.Refusals {
	return routing.Refusals{Client: "multidb.Client", Match: ErrUnsupported,
		WaitInstead: "a database whose client confirms its writes (sentinel.Client with Durable)", Nodes: "the databases'"}
}

// WithTimeout returns a client whose calls are routed as c's are, each
// bounded by timeout (as go-redis's WithTimeout bounds a call by its read
// and write timeouts; blocking commands keep their own wait). It shares
// c's databases; closing it closes only itself.
func (c *Client) WithTimeout(timeout time.Duration) *redis.Client {
	return routing.WithTimeout(c.front.Options(), timeout, c.cfg.Classifier.Blocking, c.process, c.processPipeline)
}

// Options returns the go-redis options of the active database's client (a
// copy), when it has them (a *redis.Client, or a routed client such as
// sentinel.Client); else the front's, whose Addr names the client
// ("multidb").
func (c *Client) Options() *redis.Options {
	if db := c.route.Load().active; db != nil {
		if oc, ok := db.client.(interface{ Options() *redis.Options }); ok {
			o := *oc.Options()
			return &o
		}
	}
	return c.front.Options()
}

// NodeAddress returns the address of the active database's client, when
// it has one ("" otherwise, and while no database is active).
func (c *Client) NodeAddress() string {
	if db := c.route.Load().active; db != nil {
		if oc, ok := db.client.(interface{ Options() *redis.Options }); ok {
			return oc.Options().Addr
		}
	}
	return ""
}

// EphemeralConn returns a connection of the active database that is
// discarded, not pooled, when closed (go-redis's EphemeralConn). It is
// pinned to that database and does not follow switches.
func (c *Client) EphemeralConn() *redis.Conn {
	if db := c.route.Load().active; db != nil {
		if ec, ok := db.client.(interface{ EphemeralConn() *redis.Conn }); ok {
			return ec.EphemeralConn()
		}
	}
	return c.front.EphemeralConn()
}

// Wait is refused: WAIT counts the replicas that acknowledged the writes of
// the connection it runs on, and the client runs each call on a connection
// of its choosing. Use a database whose client confirms writes itself (a
// sentinel.Client with Durable).
func (c *Client) Wait(ctx context.Context, numReplicas int, timeout time.Duration) *redis.IntCmd {
	return c.refusals().Wait(ctx, numReplicas, timeout)
}

// WaitAOF is refused, as Wait is.
func (c *Client) WaitAOF(ctx context.Context, numLocal, numReplicas int, timeout time.Duration) *redis.IntSliceCmd {
	return c.refusals().WaitAOF(ctx, numLocal, numReplicas, timeout)
}

// RegisterPushNotificationHandler is refused: push notifications arrive on
// the databases' own connections.
func (c *Client) RegisterPushNotificationHandler(string, push.NotificationHandler, bool) error {
	return c.refusals().RegisterPushNotificationHandler()
}

// AutoPipeline returns go-redis's blocking auto-pipeliner over the
// client: concurrent command calls on it share round trips to the active
// database, and each command keeps the client's failure rules, as a lone
// command does (see Config.AutoPipeline). Pipelines and transactions made
// on it run whole. go-redis runs its batches without the callers'
// contexts: their deadlines do not apply (the database clients' timeouts
// bound each command); set Config.AutoPipeline to batch ordinary calls
// with their contexts intact. The instance is go-redis's, cached by it and
// closed by Close.
func (c *Client) AutoPipeline() (*redis.AutoPipeliner, error) {
	return c.autos.AutoPipeline(nil)
}

// AutoPipelineWithOptions is AutoPipeline with go-redis's options (the
// first call's win, as in go-redis).
func (c *Client) AutoPipelineWithOptions(opts *redis.AutoPipelineOptions) (*redis.AutoPipeliner, error) {
	return c.autos.AutoPipeline(opts)
}

// AsyncAutoPipeline returns go-redis's deferred auto-pipeliner over the
// client (calls return at once, results block until done), with
// AutoPipeline's failure rules.
func (c *Client) AsyncAutoPipeline() (*redis.AutoPipeliner, error) {
	return c.autos.AsyncAutoPipeline(nil)
}

// AsyncAutoPipelineWithOptions is AsyncAutoPipeline with go-redis's
// options.
func (c *Client) AsyncAutoPipelineWithOptions(opts *redis.AutoPipelineOptions) (*redis.AutoPipeliner, error) {
	return c.autos.AsyncAutoPipeline(opts)
}

// newAutoFront is the front the auto-pipeliners are made on: its
// batches run as independent commands, its pipelines as pipelines.
func (c *Client) newAutoFront() *redis.Client {
	return routing.NewAutoFront(c.front.Options(), c.process, c.processPipeline,
		func(ctx context.Context, cmds []redis.Cmder) error {
			return routing.RunIndependent(ctx, cmds, c.process)
		})
}
