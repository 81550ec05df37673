package cluster

import (
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/routing"
)

// The methods of *redis.Client that would misbehave on the routing front
// (which never dials) are shadowed by routing.Front, which the client
// embeds as every routed client does: each works on the cluster (the
// auto-pipeliners, WithTimeout: routed by slot, with redirects, holds and
// the re-run rules; PoolStats over every node), or on one master where
// go-redis's method is about one connection (Options, NodeAddress, Conn,
// EphemeralConn: the first master by address, pinned: a command for a key
// of another node's slot gets MOVED; prefer the client's own methods, or
// ForEachMaster), or refuses with an *UnsupportedError that says what to
// use. TestFrontMethods checks, by reflection, that every exported method
// of *redis.Client is one or the other.

// ErrUnsupported is matched by the *UnsupportedError of a go-redis method
// the cluster client does not offer.
var ErrUnsupported = errors.New("cluster: not supported by the routed client")

// UnsupportedError reports a go-redis method the client does not offer
// (Method), why, and what to use instead. It matches ErrUnsupported.
type UnsupportedError = routing.UnsupportedError

// newFront is the client's front (fo describes it): what the cluster
// topology tells the shared one.
func (c *Client) newFront(fo *redis.Options) *front {
	return routing.NewRoutedFront(routing.FrontSpec{
		Options:  fo,
		Process:  c.process,
		Pipeline: c.processPipeline,
		Blocking: c.classifier.Blocking,
		Refusals: routing.Refusals{Client: "cluster.Client", Match: ErrUnsupported,
			WaitInstead: "Config.Durable or WithDurable(ctx, true), which confirm each write with WAIT on the connection that made it", Nodes: "the nodes'"},
		Node:  c.anyMaster,
		Pools: c.pools,
	})
}

// pools are the pool statistics of every node client the caller's work
// runs on (masters, and replicas serving reads).
func (c *Client) pools() []*redis.PoolStats {
	var stats []*redis.PoolStats
	for _, n := range c.nodes.all() {
		stats = append(stats, n.client.PoolStats())
		if r := n.rd.Load(); r != nil {
			stats = append(stats, r.client.PoolStats())
		}
	}
	return stats
}

// anyMaster is the node client of a master of the slot map (the first by
// address), or of the first seed before the first map is read; nil when
// there is none.
func (c *Client) anyMaster(bool) routing.NodeClient {
	if snap := c.topo.snap.Load(); snap.ready && len(snap.masters) > 0 {
		return snap.masters[0].master.client
	}
	if n := c.seed(); n != nil {
		return n.client
	}
	return nil
}
