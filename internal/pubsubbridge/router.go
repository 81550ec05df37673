package pubsubbridge

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/routing"
)

// Target is a database subscriptions go to: the bridge subscribes through
// Client (Subscribe, PSubscribe or SSubscribe of whatever kind of client it
// is). Targets are told apart by pointer: make one per database, and add
// the dial hook to its client (AddHook).
type Target struct {
	Name   string // in logs
	Client redis.UniversalClient
}

// Config is what a Router needs from its owner.
type Config struct {
	// Owner names the owner in errors, error replies and logs ("multidb").
	Owner string
	// Active is where a new subscription connection goes: a target, or,
	// when it returns an error, nowhere, and the caller's PubSub gets that
	// error. It is called on every dial, twice (the route may change while
	// a bridge starts): it must not block.
	Active func() (*Target, error)
	// ErrClosed is what dials get once the owner is closed (Active returns
	// an error matching it) or the Router is: go-redis's PubSub stops on
	// it instead of dialling again.
	ErrClosed error
	// Context bounds every bridge: its calls to the databases' clients run
	// under it, and cancelling it stops them all.
	Context context.Context
	// Logger gets the bridges' records (Debug: lost connections and
	// failed subscription commands; Error: a malformed command).
	Logger *slog.Logger
}

// Router owns the client whose PubSubs subscribe through bridges (Client). That client never touches the network: each
// connection it dials is one end of an in-memory pipe whose other end is
// served by a bridge bound to the active target.
type Router struct {
	cfg    Config
	client *redis.Client // dials bridges, never the network
	hello  frame
	// errMoved is what a dial gets when the active target changed while it
	// connected; go-redis's PubSub dials again.
	errMoved error

	mu      sync.Mutex
	closed  bool
	bridges map[*bridge]struct{}
	wg      sync.WaitGroup // one per bridge, until its goroutines returned
}

// New returns a router for cfg; Close it when done.
func New(cfg Config) *Router {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Router{
		cfg:      cfg,
		hello:    helloReply("rediskit-" + cfg.Owner),
		errMoved: fmt.Errorf("%s: the active database changed while connecting", cfg.Owner),
		bridges:  map[*bridge]struct{}{},
	}
	r.client = redis.NewClient(redisopt.Inner(&redis.Options{
		Addr:     cfg.Owner + "/pubsub",
		Protocol: 2, // what the bridge speaks (resp.go)
		Dialer:   r.dial,
	}))
	return r
}

// Client is the client whose Subscribe, PSubscribe and SSubscribe
// subscribe on the active target and move with it (on a cluster client,
// the target's client picks the node by the first shard channels
// subscribed, as its own SSubscribe does). It never touches the network;
// only its pub/sub methods work.
func (r *Router) Client() *redis.Client { return r.client }

// dial starts a bridge to the active target and returns the caller's end
// of its pipe.
//
// Its errors, like those of the connections it makes, are the owner's
// *failure.SubscriptionError (but the owner's ErrClosed).
func (r *Router) dial(_ context.Context, _, _ string) (net.Conn, error) {
	target, err := r.cfg.Active()
	if err != nil {
		if errors.Is(err, r.cfg.ErrClosed) {
			return nil, r.cfg.ErrClosed
		}
		return nil, failure.Subscription(r.cfg.Owner, "", true, err)
	}
	ours, pipe := net.Pipe()
	b := newBridge(r, target, ours)
	theirs := &callerConn{Conn: pipe, b: b}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		_ = ours.Close()
		_ = theirs.Close()
		return nil, r.cfg.ErrClosed
	}
	r.bridges[b] = struct{}{}
	r.wg.Add(1)
	r.mu.Unlock()
	go b.serve()
	// A move made before the bridge was registered could not stop it.
	if now, err := r.cfg.Active(); now != target {
		b.stop()
		_ = theirs.Close()
		if errors.Is(err, r.cfg.ErrClosed) {
			return nil, r.cfg.ErrClosed // go-redis's PubSub stops on it, not on errMoved
		}
		return nil, failure.Subscription(r.cfg.Owner, target.Name, true, r.errMoved)
	}
	return theirs, nil
}

// MoveTo stops every bridge to a target other than t (nil: all). When t
// is a target (a switch, not the loss of every database or Close), the
// callers' connections say so: their errors match routing.ErrSwitched.
// It does not block on the network.
func (r *Router) MoveTo(t *Target) {
	r.mu.Lock()
	var stale []*bridge
	for b := range r.bridges {
		if b.target != t {
			stale = append(stale, b)
		}
	}
	r.mu.Unlock()
	for _, b := range stale {
		if t != nil {
			b.switched.Store(true) // before stop: the caller's read must see it
		}
		b.stop()
	}
}

// Close stops every bridge, waits for their goroutines and closes the
// router's client: the callers' PubSubs then fail with redis.ErrClosed (or
// cfg.ErrClosed when they dial). It returns promptly: a bridge waiting on
// a server that does not answer has its connection closed (see AddHook).
func (r *Router) Close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.MoveTo(nil)
	r.wg.Wait()
	_ = r.client.Close()
}

func (r *Router) forget(b *bridge) {
	r.mu.Lock()
	delete(r.bridges, b)
	r.mu.Unlock()
	r.wg.Done()
}

// callerConn is the caller's end of a bridge's pipe. Once the bridge was
// stopped for a switch, its errors match routing.ErrSwitched, wrapping
// what the pipe reported (io.EOF once our end closed). The deadlines' too:
// go-redis sets a read deadline before it reads, and a pipe whose other
// end closed refuses it (io.ErrClosedPipe), so a subscriber that was not
// already waiting in Receive when the switch came sees it there first.
type callerConn struct {
	net.Conn
	b *bridge
}

func (c *callerConn) SetDeadline(t time.Time) error { return c.b.moved(c.Conn.SetDeadline(t)) }

func (c *callerConn) SetReadDeadline(t time.Time) error {
	return c.b.moved(c.Conn.SetReadDeadline(t))
}

func (c *callerConn) SetWriteDeadline(t time.Time) error {
	return c.b.moved(c.Conn.SetWriteDeadline(t))
}

func (c *callerConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	return n, c.b.moved(err)
}

func (c *callerConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, c.b.moved(err)
}

// moved is err as the caller's PubSub sees it: the owner's
// *failure.SubscriptionError naming the database, wrapping the reason the
// bridge stopped (a reply refused by the database's bounds) instead of the
// pipe's error, and marked as a switch when the bridge was stopped for
// one.
func (b *bridge) moved(err error) error {
	if err == nil {
		return nil
	}
	if cause := b.cause.Load(); cause != nil {
		err = *cause
	}
	if b.switched.Load() {
		err = fmt.Errorf("%w (%s switched to another database): %w", routing.ErrSwitched, b.r.cfg.Owner, err)
	}
	return failure.Subscription(b.r.cfg.Owner, b.target.Name, false, err)
}
