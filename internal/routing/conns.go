package routing

import (
	"net"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Conns tracks the connections a routed client's subscription dialer made,
// each with the target (of type K) it leads to, so that when the target
// changes the connections to the others can be closed: go-redis's PubSub
// then reconnects, through the dialer, to the new target and subscribes
// again. The zero value is ready to use.
type Conns[K comparable] struct {
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
	owner  *Conns[K]
	target K
	once   sync.Once
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
