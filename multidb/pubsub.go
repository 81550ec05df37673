package multidb

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/routing"

	"github.com/rediskit/rediskit/internal/safe"
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

// pubsubRouter owns the client whose PubSubs Subscribe, PSubscribe and
// SSubscribe return. That client never touches the network: each
// connection it dials is one end of an in-memory pipe whose other end is
// served by a bridge bound to the active database. The bridge subscribes
// through the database's own client (Subscribe, PSubscribe or SSubscribe of
// its redis.UniversalClient, whatever kind it is) and relays what that
// PubSub receives. When the active database changes, the bridges bound to
// another database are stopped: the caller's PubSub sees its connection
// close, reconnects (to a bridge on the new database) and subscribes to its
// channels again, as go-redis's PubSub does after any connection loss.
// Messages published during the switch can be lost. The caller's PubSub
// sees the switch as an error matching ErrSubscriptionMoved, so that it can
// tell a switch (subscribe again at once) from a lost connection.
//
// A database client that follows failovers of its own (our Sentinel client,
// a cluster client) does so for the bridge's PubSub as well, without
// multidb's involvement.
type pubsubRouter struct {
	c      *Client
	client *redis.Client // dials bridges, never the network

	mu      sync.Mutex
	closed  bool
	bridges map[*bridge]struct{}
	wg      sync.WaitGroup // one per bridge, until its goroutines returned
}

// errMoved is what a dial gets when the active database changed while it
// connected; go-redis's PubSub dials again.
var errMoved = errors.New("multidb: the active database changed while connecting")

func newPubsubRouter(c *Client) *pubsubRouter {
	r := &pubsubRouter{c: c, bridges: map[*bridge]struct{}{}}
	r.client = redis.NewClient(redisopt.Inner(&redis.Options{
		Addr:     "multidb/pubsub",
		Protocol: 2, // what the bridge speaks (resp.go)
		Dialer:   r.dial,
	}))
	return r
}

// active is the database subscriptions go to, or why there is none.
func (r *pubsubRouter) active() (*database, error) {
	rt := r.c.route.Load()
	switch {
	case rt.closed:
		return nil, ErrClosed
	case rt.active == nil:
		return nil, r.c.unavailable(rt)
	}
	return rt.active, nil
}

// dial starts a bridge to the active database and returns the caller's end
// of its pipe.
func (r *pubsubRouter) dial(_ context.Context, _, _ string) (net.Conn, error) {
	db, err := r.active()
	if err != nil {
		return nil, err
	}
	ours, pipe := net.Pipe()
	b := newBridge(r, db, ours)
	theirs := &callerConn{Conn: pipe, b: b}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = ours.Close()
		_ = theirs.Close()
		return nil, ErrClosed
	}
	r.bridges[b] = struct{}{}
	r.wg.Add(1)
	r.mu.Unlock()
	go b.serve()
	// A switch made before the bridge was registered could not stop it.
	if rt := r.c.route.Load(); rt.active != db {
		b.stop()
		_ = theirs.Close()
		if rt.closed {
			return nil, ErrClosed // go-redis's PubSub stops on it, not on errMoved
		}
		return nil, errMoved
	}
	return theirs, nil
}

// moveTo stops every bridge to a database other than db (nil: all). When
// db is a database (a switch, not the loss of every database or Close),
// the callers' connections say so: see ErrSubscriptionMoved.
func (r *pubsubRouter) moveTo(db *database) {
	r.mu.Lock()
	var stale []*bridge
	for b := range r.bridges {
		if b.db != db {
			stale = append(stale, b)
		}
	}
	r.mu.Unlock()
	for _, b := range stale {
		if db != nil {
			b.switched.Store(true) // before stop: the caller's read must see it
		}
		b.stop()
	}
}

// callerConn is the caller's end of a bridge's pipe. Once the bridge was
// stopped for a switch, its errors match ErrSubscriptionMoved, wrapping
// what the pipe reported (io.EOF once our end closed).
type callerConn struct {
	net.Conn
	b *bridge
}

func (c *callerConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	return n, c.b.moved(err)
}

func (c *callerConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, c.b.moved(err)
}

// close stops every bridge, waits for their goroutines and closes the
// client: the callers' PubSubs then fail with ErrClosed.
func (r *pubsubRouter) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.moveTo(nil)
	r.wg.Wait()
	_ = r.client.Close()
}

func (r *pubsubRouter) forget(b *bridge) {
	r.mu.Lock()
	delete(r.bridges, b)
	r.mu.Unlock()
	r.wg.Done()
}

// bridge serves one connection of a caller's PubSub with a PubSub of the
// database's client. Its goroutines: serve, which reads the caller's
// commands and applies them to the inner PubSub, and forward, which
// relays what the inner PubSub receives. serve owns forward; the router
// owns serve.
type bridge struct {
	r    *pubsubRouter
	db   *database
	conn net.Conn // our end of the pipe
	rd   *bufio.Reader

	ctx    context.Context // cancelled by stop: aborts the inner PubSub's dials
	cancel context.CancelFunc

	wmu sync.Mutex // serializes writes to conn

	inner     *redis.PubSub // created on the first command that needs it; serve's
	forwarded chan struct{} // closed when forward returned

	switched atomic.Bool // stopped because the active database changed
}

// moved is err, marked as a switch when the bridge was stopped for one.
func (b *bridge) moved(err error) error {
	if err == nil || !b.switched.Load() {
		return err
	}
	return fmt.Errorf("%w (multidb switched to another database): %w", ErrSubscriptionMoved, err)
}

func newBridge(r *pubsubRouter, db *database, conn net.Conn) *bridge {
	b := &bridge{r: r, db: db, conn: conn, rd: bufio.NewReader(conn), forwarded: make(chan struct{})}
	ctx, cancel := context.WithCancel(r.c.ctx)
	b.ctx, b.cancel = context.WithValue(ctx, bridgeCtxKey{}, ctx), cancel
	return b
}

// bridgeCtxKey marks the context of a bridge's calls to the database's
// client; its value is that context, cancelled when the bridge stops.
type bridgeCtxKey struct{}

// bridgeHook is added to every database client. A connection dialled for
// a bridge (its context says so) is closed when the bridge stops, so a
// bridge waiting on an unresponsive server (go-redis does not watch the
// context while it reads a handshake reply) stops at once, and Close with
// it. Other dials pass through untouched.
type bridgeHook struct{}

func (bridgeHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			return conn, err
		}
		if bctx, ok := ctx.Value(bridgeCtxKey{}).(context.Context); ok {
			sc := &stoppableConn{Conn: conn, closed: make(chan struct{})}
			sc.stop = context.AfterFunc(bctx, func() {
				defer close(sc.closed)
				_ = conn.Close()
			})
			return sc, nil
		}
		return conn, nil
	}
}

// addBridgeHook adds bridgeHook where a database client dials its
// subscription connections: the client itself, or, for a cluster client
// and a ring, which dial through their node clients, every node client.
// A ring's live shards exist from the start; a cluster client's nodes are made
// as it learns the slots, so a cluster client that had already made nodes
// before multidb got it has those nodes unhooked (a bridge on one of them
// then stops within the client's ReadTimeout rather than at once).
func addBridgeHook(c redis.UniversalClient) {
	hook := func(n *redis.Client) { n.AddHook(bridgeHook{}) }
	switch cc := c.(type) {
	case *redis.ClusterClient:
		cc.OnNewNode(hook)
	case *redis.Ring:
		cc.OnNewNode(hook)
		// Lists the shards it has; no network call.
		_ = cc.ForEachShard(context.Background(), func(_ context.Context, n *redis.Client) error {
			hook(n)
			return nil
		})
	default:
		c.AddHook(bridgeHook{})
	}
}

func (bridgeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }

func (bridgeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// stoppableConn is a bridge's connection to a database. Closing it drops
// the close-on-stop registration, or waits for the goroutine that runs it
// if the bridge stopped: go-redis closes every connection of a PubSub by
// the time PubSub.Close returns, so once the bridge closed its PubSub none
// of those goroutines is left.
type stoppableConn struct {
	net.Conn
	stop   func() bool
	closed chan struct{} // closed when the close-on-stop function returned
	once   sync.Once
}

func (c *stoppableConn) Close() error {
	c.once.Do(func() {
		if !c.stop() {
			<-c.closed
		}
	})
	return c.Conn.Close()
}

// stop ends the bridge: the caller's PubSub sees its connection close and
// reconnects. It does not block.
func (b *bridge) stop() {
	b.cancel()
	_ = b.conn.Close()
}

func (b *bridge) serve() {
	defer b.r.forget(b)
	var err error
	for err == nil {
		var args []string
		if args, err = readCommand(b.rd); err == nil {
			if perr := safe.Call(func() { err = b.handle(args) }); perr != nil {
				err = perr // the bridge stops, as on any failure
			}
		}
	}
	if errors.Is(err, errProtocol) {
		b.r.c.log.Error("multidb: subscription bridge stopped", "database", b.db.name, "err", err)
	}
	b.stop()
	if b.inner != nil {
		_ = b.inner.Close()
		<-b.forwarded
	}
}

// handle applies one command of the caller's PubSub. Errors of the inner
// PubSub are not the caller's: it keeps the subscriptions and makes them
// again when it reconnects (which forward drives).
func (b *bridge) handle(args []string) error {
	cmd := strings.ToLower(args[0])
	names := args[1:]
	var err error
	switch cmd {
	case "hello":
		return b.write(helloReply)
	case "subscribe", "psubscribe", "ssubscribe":
		if b.inner == nil && len(names) > 0 {
			// Ask the database's client for the kind of PubSub the caller
			// started with: a cluster client picks the node by it.
			switch cmd {
			case "subscribe":
				b.start(b.db.client.Subscribe(b.ctx, names...))
			case "psubscribe":
				b.start(b.db.client.PSubscribe(b.ctx, names...))
			default:
				b.start(b.db.client.SSubscribe(b.ctx, names...))
			}
			return nil
		}
		ps := b.pubsub()
		switch cmd {
		case "subscribe":
			err = ps.Subscribe(b.ctx, names...)
		case "psubscribe":
			err = ps.PSubscribe(b.ctx, names...)
		default:
			err = ps.SSubscribe(b.ctx, names...)
		}
	case "unsubscribe":
		err = b.pubsub().Unsubscribe(b.ctx, names...)
	case "punsubscribe":
		err = b.pubsub().PUnsubscribe(b.ctx, names...)
	case "sunsubscribe":
		err = b.pubsub().SUnsubscribe(b.ctx, names...)
	case "ping":
		err = b.pubsub().Ping(b.ctx, names...)
	case "client":
		if len(names) == 2 && strings.EqualFold(names[0], "setname") {
			err = b.pubsub().ClientSetName(b.ctx, names[1])
			break
		}
		fallthrough
	default:
		return b.write(errorReply("ERR multidb: '" + cmd + "' is not supported on a subscription connection"))
	}
	if err != nil && b.ctx.Err() == nil {
		b.r.c.log.Debug("multidb: subscription command failed; the subscription is made again on reconnection",
			"database", b.db.name, "command", cmd, "err", err)
	}
	return nil
}

// pubsub is the inner PubSub, created empty if there is none yet.
func (b *bridge) pubsub() *redis.PubSub {
	if b.inner == nil {
		b.start(b.db.client.Subscribe(b.ctx))
	}
	return b.inner
}

func (b *bridge) start(ps *redis.PubSub) {
	b.inner = ps
	go b.forward(ps)
}

// Backoff of forward while the inner PubSub cannot reconnect.
const (
	minResubscribeWait = 100 * time.Millisecond
	maxResubscribeWait = time.Second
)

// forward relays what ps receives to the caller until ps is closed or the
// caller's end goes away. A connection error is not passed on: ps
// reconnects and subscribes again on its next Receive (to wherever the
// database's client leads, e.g. a new Sentinel master); forward retries at
// once, then with a growing wait while it keeps failing. An error reply
// (e.g. a channel the ACL denies) is passed on, as Redis would send it.
func (b *bridge) forward(ps *redis.PubSub) {
	defer close(b.forwarded)
	failures := 0
	for {
		var msg any
		var err error
		if perr := safe.Call(func() { msg, err = ps.Receive(b.ctx) }); perr != nil {
			// A reply go-redis could not handle: like a lost connection,
			// the subscription is made again.
			err = perr
		}
		var rerr redis.Error
		switch {
		case b.ctx.Err() != nil:
			return
		case errors.Is(err, redis.ErrClosed):
			// ps, or the database's client, was closed under the bridge:
			// let the caller's PubSub reconnect through the router.
			b.stop()
			return
		case errors.As(err, &rerr):
			err = b.write(errorReply(rerr.Error()))
		case err != nil:
			failures++
			b.r.c.log.Debug("multidb: subscription connection lost; reconnecting", "database", b.db.name, "err", err)
			if failures > 1 && !b.sleep(min(minResubscribeWait<<min(failures-2, 8), maxResubscribeWait)) {
				return
			}
			continue
		default:
			failures = 0
			if f := encodeMessage(msg); f != nil {
				err = b.write(f)
			}
		}
		if err != nil {
			b.stop()
			return
		}
	}
}

// sleep waits d, or until the bridge stops (false).
func (b *bridge) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-b.ctx.Done():
		return false
	}
}

func (b *bridge) write(f frame) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	_, err := b.conn.Write(f)
	return err
}

// Subscribe subscribes to channels on the active database, through its
// client; the subscription moves with the active database (see the
// package documentation).
func (c *Client) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return c.pubsub.client.Subscribe(ctx, channels...)
}

// PSubscribe subscribes to patterns on the active database, moving with
// it.
func (c *Client) PSubscribe(ctx context.Context, patterns ...string) *redis.PubSub {
	return c.pubsub.client.PSubscribe(ctx, patterns...)
}

// SSubscribe subscribes to shard channels on the active database, moving
// with it. (On a cluster database, the database's client picks the node by
// the first shard channels subscribed, as its own SSubscribe does.)
func (c *Client) SSubscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return c.pubsub.client.SSubscribe(ctx, channels...)
}
