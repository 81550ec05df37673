package multidb

import (
	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/routing"
)

// The methods of *redis.Client that would misbehave on the routing front
// (which never dials) are shadowed by routing.Front, which the client
// embeds as every routed client does: each works as in go-redis, on the
// active database (Options, NodeAddress, Conn, EphemeralConn, when its
// client is a single node's: a *redis.Client or a routed client such as
// sentinel.Client; else the front's, whose Conn routes its commands one
// by one, with no connection state such as SELECT holding between them),
// or refuses with an *UnsupportedError that says what to use. Every other
// method of *redis.Client runs through the client's routing;
// TestFrontMethods checks, by reflection, that every exported method of
// *redis.Client is one or the other.

// newFront is the client's front: what the multidb topology (the active
// database) tells the shared one.
func (c *Client) newFront() *front {
	return routing.NewRoutedFront(routing.FrontSpec{
		Options:  &redis.Options{Addr: "multidb"},
		Process:  c.process,
		Pipeline: c.processPipeline,
		Blocking: c.cfg.Classifier.Blocking,
		Refusals: routing.Refusals{Client: "multidb.Client", Match: ErrUnsupported,
			WaitInstead: "a database whose client confirms its writes (sentinel.Client with Durable)", Nodes: "the databases'"},
		Node:  c.activeNode,
		Pools: c.pools,
	})
}

// activeNode is the active database's client when it is a single node's
// (nil otherwise, and while no database is active).
func (c *Client) activeNode(bool) routing.NodeClient {
	if db := c.route.Load().active; db != nil {
		if n, ok := db.client.(routing.NodeClient); ok {
			return n
		}
	}
	return nil
}

// pools are the pool statistics of every database client.
func (c *Client) pools() []*redis.PoolStats {
	c.mu.Lock()
	clients := make([]redis.UniversalClient, 0, len(c.dbs))
	for _, db := range c.dbs {
		clients = append(clients, db.client)
	}
	c.mu.Unlock()
	stats := make([]*redis.PoolStats, len(clients))
	for i, cl := range clients {
		stats[i] = cl.PoolStats()
	}
	return stats
}
