package sentinel

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/routing"
)

// The methods of *redis.Client that would misbehave on the routing front
// (which never dials) are shadowed by routing.Front, which the client
// embeds (one implementation for every routed client): each works as in
// go-redis, on the node the client routes to (the master), or refuses
// with an *UnsupportedError that says what to use. Every other method of
// *redis.Client (each command, Do, Process, Pipeline, TxPipeline, the
// search builders, ...) runs through the client's routing. TestFrontMethods
// checks, by reflection, that every exported method of *redis.Client is
// one or the other, so that a go-redis upgrade adding one fails until it
// is handled.

// newFront is the client's front: what the sentinel topology tells the
// shared one.
func (c *Client) newFront() *front {
	return routing.NewRoutedFront(routing.FrontSpec{
		// The front never dials, but its options are what Options()
		// reports before the first discovery: they describe the
		// data-node clients' behaviour.
		Options: &redis.Options{
			Addr:         "sentinel/" + c.opts.MasterName,
			ReadTimeout:  c.opts.ReadTimeout,
			WriteTimeout: c.opts.WriteTimeout,
			DialTimeout:  c.opts.DialTimeout,
		},
		Process:             c.process,
		Pipeline:            c.processPipeline,
		Blocking:            c.classifier.Blocking,
		AutoPipelineOptions: c.opts.AutoPipelineOptions,
		Refusals: routing.Refusals{Client: "sentinel.Client", Match: ErrUnsupported,
			WaitInstead: "Config.Durable or WithDurable(ctx, true), which confirm each write with WAIT on the connection that made it", Nodes: "the data nodes'"},
		Node:  c.masterClient,
		Pools: c.topo.nodes.poolStats,
	})
}

// masterClient is the current master's client (nil before the first
// discovery); with wait, it waits for the first discovery.
func (c *Client) masterClient(wait bool) routing.NodeClient {
	snap := c.topo.load()
	if snap.master == nil && wait {
		snap, _ = c.current(context.Background())
	}
	if snap == nil || snap.master == nil {
		return nil
	}
	return snap.master.client
}
