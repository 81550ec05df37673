package routing

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrSwitched is in the error a tracked connection's Read or Write returns
// once CloseOthers closed it (with net.ErrClosed): the routed client moved
// its subscriptions to another target, to which go-redis's PubSub
// reconnects on its next call. A subscriber that sees it lost nothing it
// must wait out: subscribing again at once is right.
var ErrSwitched error = NewTransient("rediskit: the subscription moved to the new target", 0, false)

// errSwitchedConn is what a switched connection's calls return.
var errSwitchedConn = fmt.Errorf("%w: %w", ErrSwitched, net.ErrClosed)

// Conns tracks the connections a routed client's subscription dialer made,
// each with the target (of type K) it leads to, so that when the target
// changes the connections to the others can be closed: go-redis's PubSub
// then reconnects, through the dialer, to the new target and subscribes
// again. The zero value is ready to use.
type Conns[K comparable] struct {
	// Wrap, when set, turns every error a tracked connection's Read or
	// Write returns (switched ones included) into the owner's typed
	// error, given the target the connection leads to. Set it before the
	// first Track.
	Wrap func(target K, err error) error

	mu    sync.Mutex
	conns map[*conn[K]]struct{}
}

// Track returns c, tracked as a connection to target. Closing it stops the
// tracking.
func (t *Conns[K]) Track(c net.Conn, target K) net.Conn {
	tc := &conn[K]{Conn: c, owner: t, target: target}
	t.mu.Lock()
	if t.conns == nil {
		t.conns = map[*conn[K]]struct{}{}
	}
	t.conns[tc] = struct{}{}
	t.mu.Unlock()
	return tc
}

// TrackIfCurrent tracks c as a connection to target, then checks that
// target is still current(): a switch made while the connection was being
// dialled could not close it, so it is closed here instead and ok is false.
func (t *Conns[K]) TrackIfCurrent(c net.Conn, target K, current func() K) (tracked net.Conn, ok bool) {
	tc := t.Track(c, target)
	if current() != target {
		_ = tc.Close()
		return nil, false
	}
	return tc, true
}

// CloseOthers closes every tracked connection to a target other than
// target.
func (t *Conns[K]) CloseOthers(target K) {
	t.mu.Lock()
	var stale []*conn[K]
	for tc := range t.conns {
		if tc.target != target {
			stale = append(stale, tc)
		}
	}
	t.mu.Unlock()
	for _, tc := range stale {
		tc.switched.Store(true)
		_ = tc.Close()
	}
}

// Len is the number of tracked connections.
func (t *Conns[K]) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}

type conn[K comparable] struct {
	net.Conn
	owner    *Conns[K]
	target   K
	once     sync.Once
	switched atomic.Bool // closed by CloseOthers
}

func (c *conn[K]) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	return n, c.fail(err)
}

func (c *conn[K]) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	return n, c.fail(err)
}

// go-redis sets a deadline before each read and write: on a connection
// closed under it (a switch, a lost node) that fails first.

func (c *conn[K]) SetDeadline(t time.Time) error { return c.fail(c.Conn.SetDeadline(t)) }

func (c *conn[K]) SetReadDeadline(t time.Time) error { return c.fail(c.Conn.SetReadDeadline(t)) }

func (c *conn[K]) SetWriteDeadline(t time.Time) error { return c.fail(c.Conn.SetWriteDeadline(t)) }

// fail is err as the caller's PubSub must see it: a switch said so, then
// the owner's type (Conns.Wrap).
func (c *conn[K]) fail(err error) error {
	if err == nil {
		return nil
	}
	if c.switched.Load() {
		err = errSwitchedConn
	}
	if c.owner.Wrap != nil {
		err = c.owner.Wrap(c.target, err)
	}
	return err
}

func (c *conn[K]) Close() error {
	c.once.Do(func() {
		c.owner.mu.Lock()
		delete(c.owner.conns, c)
		c.owner.mu.Unlock()
	})
	return c.Conn.Close()
}

// SumPoolStats adds up the pool statistics of the clients work is routed
// to.
func SumPoolStats(stats ...*redis.PoolStats) *redis.PoolStats {
	var sum redis.PoolStats
	for _, st := range stats {
		sum.Hits += st.Hits
		sum.Misses += st.Misses
		sum.Timeouts += st.Timeouts
		sum.TotalConns += st.TotalConns
		sum.IdleConns += st.IdleConns
		sum.StaleConns += st.StaleConns
	}
	return &sum
}

// AddDialHook adds h where a go-redis client dials: a *redis.Client
// itself; every node of a *redis.ClusterClient or *redis.Ring (the nodes
// it makes later, and a ring's shards now). It reports false, adding
// nothing, for any other client (rediskit's own routed clients dial
// through their node clients, which they configure themselves).
func AddDialHook(c redis.UniversalClient, h redis.Hook) bool {
	hook := func(n *redis.Client) { n.AddHook(h) }
	switch cc := c.(type) {
	case *redis.Client:
		cc.AddHook(h)
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
		return false
	}
	return true
}
