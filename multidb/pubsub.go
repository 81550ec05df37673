package multidb

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/pubsubbridge"
	"github.com/rediskit/rediskit/internal/routing"
)

// ErrSubscriptionMoved is matched (errors.Is) by the error a subscription's
// Receive (or any call on its connection) returns when the client switched
// its active database and ended the subscription on the old one: go-redis's
// PubSub subscribes again, on the new database, on its next call, and
// messages published during the switch may be lost. Nothing to wait out:
// call Receive again at once. The error also matches what the connection
// itself reported (io.EOF, io.ErrClosedPipe). A subscription ended because
// no database is healthy, or by Close, does not match it.
//
// It is the same error as sentinel.ErrSubscriptionMoved (a Sentinel
// client's subscription moved to a new master), so one check covers both.
var ErrSubscriptionMoved = routing.ErrSwitched

// pubsubRouter is the client's end of package internal/pubsubbridge: the
// PubSubs Subscribe, PSubscribe and SSubscribe return talk to bridges
// bound to the active database, which subscribe through the database's
// own client (Subscribe, PSubscribe or SSubscribe of its
// redis.UniversalClient, whatever kind it is) and relay what that PubSub
// receives. When the active database changes, the bridges bound to another
// database are stopped: the caller's PubSub sees its connection close with
// an error matching ErrSubscriptionMoved, reconnects (to a bridge on the
// new database) and subscribes to its channels again, as go-redis's PubSub
// does after any connection loss. Messages published during the switch
// can be lost.
type pubsubRouter struct {
	*pubsubbridge.Router
}

func newPubsubRouter(c *Client) *pubsubRouter {
	return &pubsubRouter{pubsubbridge.New(pubsubbridge.Config{
		Owner: "multidb",
		Active: func() (*pubsubbridge.Target, error) {
			rt := c.route.Load()
			switch {
			case rt.closed:
				return nil, ErrClosed
			case rt.active == nil:
				return nil, c.unavailable(rt)
			}
			return rt.active.subscriptions, nil
		},
		ErrClosed: ErrClosed,
		Context:   c.ctx,
		Logger:    c.log,
	})}
}

// moveTo stops every subscription bridge to a database other than db
// (nil: all). When db is a database (a switch, not the loss of every
// database or Close), the callers' connections say so: see
// ErrSubscriptionMoved.
func (r *pubsubRouter) moveTo(db *database) {
	if db == nil {
		r.MoveTo(nil)
		return
	}
	r.MoveTo(db.subscriptions)
}

// close stops every bridge, waits for their goroutines and closes the
// router's client: the callers' PubSubs then fail with ErrClosed.
func (r *pubsubRouter) close() { r.Close() }

// Subscribe subscribes to channels on the active database, through its
// client; the subscription moves with the active database (see the
// package documentation).
func (c *Client) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return c.pubsub.Client().Subscribe(ctx, channels...)
}

// PSubscribe subscribes to patterns on the active database, moving with
// it.
func (c *Client) PSubscribe(ctx context.Context, patterns ...string) *redis.PubSub {
	return c.pubsub.Client().PSubscribe(ctx, patterns...)
}

// SSubscribe subscribes to shard channels on the active database, moving
// with it. (On a cluster database, the database's client picks the node by
// the first shard channels subscribed, as its own SSubscribe does.)
func (c *Client) SSubscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return c.pubsub.Client().SSubscribe(ctx, channels...)
}
