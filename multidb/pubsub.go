package multidb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/routing"
)

// pubsubRouter owns the client that Subscribe, PSubscribe and SSubscribe
// use. Its dialer connects to the active database (where its pub/sub
// options point), its credentials are that database's, and when the active
// database changes it closes the connections to the old one, so go-redis's
// PubSub reconnects (to the new one) and subscribes again. Messages
// published during the switch can be lost, as with any reconnection.
type pubsubRouter struct {
	c      *Client
	client *redis.Client
	conns  routing.Conns[*database]
}

// errMoved is what a dial gets when the active database changed while it
// connected; go-redis's PubSub dials again.
var errMoved = errors.New("multidb: the active database changed while connecting")

func newPubsubRouter(c *Client) *pubsubRouter {
	r := &pubsubRouter{c: c}
	r.client = redis.NewClient(redisopt.Inner(&redis.Options{
		Addr:                       "multidb/pubsub",
		Dialer:                     r.dial,
		CredentialsProviderContext: r.credentials,
	}))
	return r
}

// active is the database subscriptions go to, or why there is none.
func (r *pubsubRouter) active() (*database, error) {
	rt := r.c.route.Load()
	db := rt.active
	switch {
	case rt.closed:
		return nil, ErrClosed
	case db == nil:
		return nil, r.c.unavailable(rt)
	case db.pubsub == nil:
		return nil, fmt.Errorf("multidb: database %q has no pub/sub endpoint (its client is not a *redis.Client): set Database.PubSubOptions", db.name)
	}
	return db, nil
}

func (r *pubsubRouter) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	db, err := r.active()
	if err != nil {
		return nil, err
	}
	conn, err := dialEndpoint(ctx, db.pubsub)
	if err != nil {
		return nil, &failure.DialError{Addr: db.pubsub.Addr, Err: err}
	}
	tc, ok := r.conns.TrackIfCurrent(conn, db, func() *database { return r.c.route.Load().active })
	if !ok {
		return nil, errMoved
	}
	return tc, nil
}

// credentials are the active database's, for the connection being set up.
// (If the active database changes between the dial and this call, the
// authentication fails or the connection is closed by the switch, and the
// PubSub connects again.)
func (r *pubsubRouter) credentials(ctx context.Context) (string, string, error) {
	db, err := r.active()
	if err != nil {
		return "", "", err
	}
	o := db.pubsub
	switch {
	case o.CredentialsProviderContext != nil:
		return o.CredentialsProviderContext(ctx)
	case o.CredentialsProvider != nil:
		u, p := o.CredentialsProvider()
		return u, p, nil
	}
	return o.Username, o.Password, nil
}

// dialEndpoint connects to the address o names, with o's dialer (which a
// built go-redis client always has, TLS included) or a plain one.
func dialEndpoint(ctx context.Context, o *redis.Options) (net.Conn, error) {
	network := o.Network
	if network == "" {
		network = "tcp"
	}
	if o.Dialer != nil {
		return o.Dialer(ctx, network, o.Addr)
	}
	timeout := o.DialTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	d := &net.Dialer{Timeout: timeout}
	conn, err := d.DialContext(ctx, network, o.Addr)
	if err != nil || o.TLSConfig == nil {
		return conn, err
	}
	tc, err := redisopt.Handshake(ctx, conn, o.TLSConfig, o.Addr)
	if err != nil {
		return nil, fmt.Errorf("TLS: %w", err)
	}
	return tc, nil
}

// moveTo closes every subscription connection to a database other than db.
func (r *pubsubRouter) moveTo(db *database) { r.conns.CloseOthers(db) }

func (r *pubsubRouter) addHook(h redis.Hook) { r.client.AddHook(h) }

func (r *pubsubRouter) close() { _ = r.client.Close() }

// Subscribe subscribes to channels on the active database; the
// subscription moves with it (see the package documentation).
func (c *Client) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return c.pubsub.client.Subscribe(ctx, channels...)
}

// PSubscribe subscribes to patterns on the active database, moving with
// it.
func (c *Client) PSubscribe(ctx context.Context, patterns ...string) *redis.PubSub {
	return c.pubsub.client.PSubscribe(ctx, patterns...)
}

// SSubscribe subscribes to shard channels on the active database, moving
// with it. (On a cluster database, the pub/sub endpoint is one node:
// shard channels must be served by it.)
func (c *Client) SSubscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return c.pubsub.client.SSubscribe(ctx, channels...)
}
