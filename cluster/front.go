package cluster

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/push"

	"github.com/rediskit/rediskit/internal/routing"
)

// The methods of *redis.Client that would misbehave on the routing front
// (which never dials) are shadowed here, as in packages sentinel and
// multidb: each works on the cluster, or on one node of it where go-redis's
// method is about one connection, or refuses with an *UnsupportedError
// that says what to use. TestFrontMethods checks, by reflection, that every
// exported method of *redis.Client is one or the other.

// ErrUnsupported is matched by the *UnsupportedError of a go-redis method
// the cluster client does not offer.
var ErrUnsupported = errors.New("cluster: not supported by the routed client")

// UnsupportedError reports a go-redis method the client does not offer
// (Method), why, and what to use instead. It matches ErrUnsupported.
type UnsupportedError = routing.UnsupportedError

// refusals are the methods the client refuses as every routed client does.
func (c *Client) refusals() routing.Refusals {
	return routing.Refusals{Client: "cluster.Client", Match: ErrUnsupported,
		WaitInstead: "Config.Durable or WithDurable(ctx, true), which confirm each write with WAIT on the connection that made it", Nodes: "the nodes'"}
}

// WithTimeout returns a client whose calls are routed as c's are (by slot,
// with redirects, holds and the re-run rules), each bounded by timeout (as
// go-redis's WithTimeout bounds a call by its read and write timeouts;
// blocking commands keep their own wait). It shares c's slot map,
// connections and hooks; closing it closes only itself.
func (c *Client) WithTimeout(timeout time.Duration) *redis.Client {
	return routing.WithTimeout(c.front.Options(), timeout, c.classifier.Blocking, c.process, c.processPipeline)
}

// PoolStats sums the pool statistics of every node client the caller's
// work runs on (masters, and replicas serving reads), as go-redis's
// ClusterClient sums its nodes'.
func (c *Client) PoolStats() *redis.PoolStats {
	var stats []*redis.PoolStats
	for _, n := range c.nodes.all() {
		stats = append(stats, n.client.PoolStats())
		if r := n.rd.Load(); r != nil {
			stats = append(stats, r.client.PoolStats())
		}
	}
	return routing.SumPoolStats(stats...)
}

// anyMaster is the node client of a master of the slot map (the first by
// address), or of the first seed before the first map is read.
func (c *Client) anyMaster() *redis.Client {
	if snap := c.topo.snap.Load(); snap.ready && len(snap.masters) > 0 {
		return snap.masters[0].master.client
	}
	if n := c.seed(); n != nil {
		return n.client
	}
	return c.front
}

// Conn returns a connection to one master of the cluster (the first by
// address): pinned to that node, it does not follow the slot map, so a
// command for a key of another node's slot gets MOVED. Prefer the client's
// own methods, or ForEachMaster for work on every master.
func (c *Client) Conn() *redis.Conn { return c.anyMaster().Conn() }

// EphemeralConn is Conn, on a connection discarded when closed.
func (c *Client) EphemeralConn() *redis.Conn { return c.anyMaster().EphemeralConn() }

// Options returns the go-redis options of a master's node client (a
// copy): the data-node settings (credentials, TLS, timeouts, pool) the
// client runs with. Addr is that master's.
func (c *Client) Options() *redis.Options {
	o := *c.anyMaster().Options()
	return &o
}

// NodeAddress returns the address of the master Conn and Config speak of
// ("" before the first map when the seed has no client).
func (c *Client) NodeAddress() string {
	if cl := c.anyMaster(); cl != c.front {
		return cl.Options().Addr
	}
	return ""
}

// Wait is refused: WAIT counts the replicas that acknowledged the writes of
// the connection it runs on, and the client runs each call on a connection
// of its choosing, on the node of its slot. Use Config.Durable or
// WithDurable, which confirm each write with WAIT on its own connection.
func (c *Client) Wait(ctx context.Context, numReplicas int, timeout time.Duration) *redis.IntCmd {
	return c.refusals().Wait(ctx, numReplicas, timeout)
}

// WaitAOF is refused, as Wait is.
func (c *Client) WaitAOF(ctx context.Context, numLocal, numReplicas int, timeout time.Duration) *redis.IntSliceCmd {
	return c.refusals().WaitAOF(ctx, numLocal, numReplicas, timeout)
}

// RegisterPushNotificationHandler is refused: push notifications arrive on
// the nodes' own connections, which the client opens and closes as the
// slot map changes.
func (c *Client) RegisterPushNotificationHandler(string, push.NotificationHandler, bool) error {
	return c.refusals().RegisterPushNotificationHandler()
}

// AutoPipelineWithOptions is AutoPipeline with go-redis's options (the
// first call's win, as in go-redis).
func (c *Client) AutoPipelineWithOptions(opts *redis.AutoPipelineOptions) (*redis.AutoPipeliner, error) {
	return c.autos.AutoPipeline(opts)
}

// AsyncAutoPipelineWithOptions is AsyncAutoPipeline with go-redis's
// options.
func (c *Client) AsyncAutoPipelineWithOptions(opts *redis.AutoPipelineOptions) (*redis.AutoPipeliner, error) {
	return c.autos.AsyncAutoPipeline(opts)
}
