package sentinel

import (
	"context"
	"errors"
	"net"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
)

// pubsubRouter owns the client that Subscribe, PSubscribe and SSubscribe
// use. Its dialer always connects to the current master, and when the
// master changes it closes the connections to the old one, so go-redis's
// PubSub reconnects (to the new master) and subscribes again. Messages
// published during the switch can be lost, as with any reconnection.
type pubsubRouter struct {
	c      *Client
	client *redis.Client
	conns  routing.Conns[string] // by the master's address
}

func newPubsubRouter(c *Client) *pubsubRouter {
	r := &pubsubRouter{c: c}
	r.conns.Wrap = func(addr string, err error) error { return failure.Subscription("sentinel", addr, false, err) }
	r.client = redis.NewClient(c.opts.nodeOptions("sentinel/"+c.opts.MasterName+"/pubsub", r.dial))
	return r
}

// dial connects to the current master. Its errors, like those of the
// connections it makes (conns.Wrap), are *SubscriptionError.
func (r *pubsubRouter) dial(ctx context.Context, network, _ string) (net.Conn, error) {
	snap, err := r.c.current(ctx)
	if err != nil {
		return nil, failure.Subscription("sentinel", "", true, err)
	}
	addr := snap.master.addr
	conn, err := dialer(&r.c.opts)(ctx, network, addr)
	if err != nil {
		return nil, failure.Subscription("sentinel", addr, true, &failure.DialError{Addr: addr, Err: err})
	}
	// A master change while dialling could not close this connection.
	tc, ok := r.conns.TrackIfCurrent(conn, addr, r.c.Master)
	if !ok {
		return nil, failure.Subscription("sentinel", addr, true,
			&failure.DialError{Addr: addr, Err: errors.New("the master changed while connecting")})
	}
	return tc, nil
}

// masterChanged closes every subscription connection to another node.
func (r *pubsubRouter) masterChanged(master string) { r.conns.CloseOthers(master) }

func (r *pubsubRouter) addHook(h redis.Hook) { r.client.AddHook(h) }

func (r *pubsubRouter) close() { _ = r.client.Close() }

// Subscribe subscribes to channels on the current master; the subscription
// follows failovers (see pubsubRouter).
func (c *Client) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return c.pubsub.client.Subscribe(ctx, channels...)
}

// PSubscribe subscribes to patterns on the current master, following
// failovers.
func (c *Client) PSubscribe(ctx context.Context, patterns ...string) *redis.PubSub {
	return c.pubsub.client.PSubscribe(ctx, patterns...)
}

// SSubscribe subscribes to shard channels on the current master, following
// failovers.
func (c *Client) SSubscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return c.pubsub.client.SSubscribe(ctx, channels...)
}
