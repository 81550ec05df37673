package pubsubbridge

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/safe"
)

// bridge serves one connection of a caller's PubSub with a PubSub of the
// database's client. Its goroutines: serve, which reads the caller's
// commands and applies them to the inner PubSub, and forward, which
// relays what the inner PubSub receives. serve owns forward; the router
// owns serve.
type bridge struct {
	r      *Router
	target *Target
	conn   net.Conn // our end of the pipe
	rd     *bufio.Reader

	ctx    context.Context // cancelled by stop: aborts the inner PubSub's dials
	cancel context.CancelFunc

	wmu sync.Mutex // serializes writes to conn

	inner     *redis.PubSub // created on the first command that needs it; serve's
	forwarded chan struct{} // closed when forward returned

	switched atomic.Bool // stopped because the active database changed
	// cause is why the bridge stopped when the caller must hear it (a
	// reply the database's bounds refused), set before stop.
	cause atomic.Pointer[error]
}

func newBridge(r *Router, target *Target, conn net.Conn) *bridge {
	b := &bridge{r: r, target: target, conn: conn, rd: bufio.NewReader(conn), forwarded: make(chan struct{})}
	ctx, cancel := context.WithCancel(r.cfg.Context)
	b.ctx, b.cancel = context.WithValue(ctx, bridgeCtxKey{}, ctx), cancel
	return b
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
		b.r.cfg.Logger.Error(b.r.cfg.Owner+": subscription bridge stopped", "database", b.target.Name, "err", err)
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
		return b.write(b.r.hello)
	case "subscribe", "psubscribe", "ssubscribe":
		if b.inner == nil && len(names) > 0 {
			// Ask the database's client for the kind of PubSub the caller
			// started with: a cluster client picks the node by it.
			switch cmd {
			case "subscribe":
				b.start(b.target.Client.Subscribe(b.ctx, names...))
			case "psubscribe":
				b.start(b.target.Client.PSubscribe(b.ctx, names...))
			default:
				b.start(b.target.Client.SSubscribe(b.ctx, names...))
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
		return b.write(errorReply("ERR " + b.r.cfg.Owner + ": '" + cmd + "' is not supported on a subscription connection"))
	}
	if err != nil && b.ctx.Err() == nil {
		b.r.cfg.Logger.Debug(b.r.cfg.Owner+": subscription command failed; the subscription is made again on reconnection",
			"database", b.target.Name, "command", cmd, "err", err)
	}
	return nil
}

// pubsub is the inner PubSub, created empty if there is none yet.
func (b *bridge) pubsub() *redis.PubSub {
	if b.inner == nil {
		b.start(b.target.Client.Subscribe(b.ctx))
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
		var lerr *respguard.LimitError
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
		case errors.As(err, &lerr):
			// A reply refused by the database's reply bounds: the
			// caller hears of it (its connection ends with a
			// *SubscriptionError wrapping the *ReplyLimitError, which
			// names the server and the limit), or its Receive would wait
			// for a server that keeps sending what is refused. Its
			// PubSub subscribes again, through a new bridge, on its next
			// call.
			b.cause.Store(&err)
			b.stop()
			return
		case err != nil:
			failures++
			b.r.cfg.Logger.Debug(b.r.cfg.Owner+": subscription connection lost; reconnecting", "database", b.target.Name, "err", err)
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
