package pubsubbridge

import (
	"context"
	"net"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/routing"
)

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

// AddHook adds the bridges' dial hook where a database client dials its
// subscription connections: the client itself, or, for a cluster client
// and a ring, which dial through their node clients, every node client.
// A ring's live shards exist from the start; a cluster client's nodes are made
// as it learns the slots, so a cluster client that had already made nodes
// before the router got it has those nodes unhooked (a bridge on one of them
// then stops within the client's ReadTimeout rather than at once).
func AddHook(c redis.UniversalClient) {
	if !routing.AddDialHook(c, bridgeHook{}) {
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
