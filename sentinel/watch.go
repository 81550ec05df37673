package sentinel

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/safe"
)

// sentinelEvent is one message a sentinel published about our master.
type sentinelEvent struct {
	sentinel string
	kind     string // the channel, e.g. "+switch-master"
	// instance is the address of the node the event is about (for
	// +switch-master, the new master).
	instance string
	// oldMaster is, for +switch-master, the master that was replaced.
	oldMaster string
}

// parseEvent reads a sentinel event and reports whether it concerns the
// master named name. Instance events read
// "<type> <name> <ip> <port> @ <master-name> <master-ip> <master-port>"
// ("master <name> <ip> <port>" for the master itself); +switch-master reads
// "<master-name> <old-ip> <old-port> <new-ip> <new-port>".
func parseEvent(sentinel, channel, payload, name string) (sentinelEvent, bool) {
	f := strings.Fields(payload)
	ev := sentinelEvent{sentinel: sentinel, kind: channel}
	if channel == "+switch-master" {
		if len(f) < 5 || f[0] != name {
			return ev, false
		}
		ev.oldMaster = net.JoinHostPort(f[1], f[2])
		ev.instance = net.JoinHostPort(f[3], f[4])
		return ev, true
	}
	if len(f) < 4 {
		return ev, false
	}
	if f[0] == "master" {
		ev.instance = net.JoinHostPort(f[2], f[3])
		return ev, f[1] == name
	}
	if len(f) >= 6 && f[4] == "@" && f[5] == name {
		ev.instance = net.JoinHostPort(f[2], f[3])
		return ev, true
	}
	return ev, false
}

func (t *topology) startWatcher(addr string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed || t.opts.deaf {
		return
	}
	t.wg.Add(1)
	go t.watchSentinel(addr)
}

// watchSentinel subscribes to every event channel of one sentinel and hands
// the events about our master to the topology goroutine, until the client
// closes. Subscriptions are re-made after errors; a quiet connection is
// checked with PING so that a sentinel that came back is heard again. A
// panic while reading (a reply the parser could not handle) is reported,
// and the subscription is made again on a new connection.
func (t *topology) watchSentinel(addr string) {
	defer t.wg.Done()
	for t.ctx.Err() == nil {
		err := safe.Call(func() { t.watchOnce(addr) })
		if err == nil {
			return
		}
		_ = t.recovered("watching sentinel "+addr, err)
		select {
		case <-t.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// watchOnce is watchSentinel on one subscription: it returns when the
// client closes (or panics).
func (t *topology) watchOnce(addr string) {
	client := t.sentinels.client(addr)
	if client == nil {
		return
	}
	ps := client.PSubscribe(t.ctx, "*")
	t.trackPubSub(ps)
	defer func() { _ = ps.Close() }()
	backoff := 100 * time.Millisecond
	for {
		msg, err := ps.ReceiveTimeout(t.ctx, 5*time.Second)
		if t.ctx.Err() != nil || errors.Is(err, redis.ErrClosed) {
			return
		}
		if err != nil {
			if failure.Timeout(err) {
				pctx, cancel := context.WithTimeout(t.ctx, t.opts.SentinelTimeout)
				err = ps.Ping(pctx)
				cancel()
				if err == nil {
					continue
				}
			}
			select {
			case <-t.ctx.Done():
				return
			case <-time.After(backoff):
				backoff = min(backoff*2, 2*time.Second)
			}
			continue
		}
		backoff = 100 * time.Millisecond
		m, ok := msg.(*redis.Message)
		if !ok {
			continue
		}
		ev, ours := parseEvent(addr, m.Channel, m.Payload, t.opts.MasterName)
		if !ours || !t.mapEvent(&ev) {
			continue
		}
		select {
		case t.events <- ev:
		default:
			// The topology goroutine is behind; it will refresh anyway.
			t.kick()
		}
	}
}

// mapEvent validates and maps the addresses of an event (see replyAddr)
// and reports whether it is kept: an event naming an address the client
// will not dial is dropped, and logged.
func (t *topology) mapEvent(ev *sentinelEvent) bool {
	for _, a := range []*string{&ev.instance, &ev.oldMaster} {
		if *a == "" {
			continue
		}
		mapped, err := t.opts.splitReplyAddr(ev.sentinel, ev.kind, *a)
		if err != nil {
			t.log.Warn("sentinel event dropped", "err", err)
			return false
		}
		*a = mapped
	}
	return true
}

func (t *topology) trackPubSub(ps *redis.PubSub) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.watchers = append(t.watchers, ps)
}
