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

// watchSentinel subscribes to every event channel of one sentinel and hands
// the events about our master to the topology goroutine, until the client
// closes. Subscriptions are re-made after errors; a quiet connection is
// checked with PING so that a sentinel that came back is heard again. A
// panic while reading (a reply the parser could not handle) is reported,
// and the subscription is made again on a new connection.
func (c *Client) watchSentinel(addr string) {
	defer c.wg.Done()
	for c.ctx.Err() == nil {
		err := safe.Call(func() { c.watchOnce(addr) })
		if err == nil {
			return
		}
		_ = c.recovered("watching sentinel "+addr, err)
		select {
		case <-c.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// watchOnce is watchSentinel on one subscription: it returns when the
// client closes (or panics).
func (c *Client) watchOnce(addr string) {
	client := c.sentinels.client(addr)
	if client == nil {
		return
	}
	ps := client.PSubscribe(c.ctx, "*")
	c.trackPubSub(ps)
	defer ps.Close()
	backoff := 100 * time.Millisecond
	for {
		msg, err := ps.ReceiveTimeout(c.ctx, 5*time.Second)
		if c.ctx.Err() != nil || errors.Is(err, redis.ErrClosed) {
			return
		}
		if err != nil {
			if failure.Timeout(err) {
				pctx, cancel := context.WithTimeout(c.ctx, c.opts.SentinelTimeout)
				err = ps.Ping(pctx)
				cancel()
				if err == nil {
					continue
				}
			}
			select {
			case <-c.ctx.Done():
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
		ev, ours := parseEvent(addr, m.Channel, m.Payload, c.opts.MasterName)
		if !ours || !c.mapEvent(&ev) {
			continue
		}
		select {
		case c.events <- ev:
		default:
			// The topology goroutine is behind; it will refresh anyway.
			c.kick()
		}
	}
}

// mapEvent validates and maps the addresses of an event (see replyAddr)
// and reports whether it is kept: an event naming an address the client
// will not dial is dropped, and logged.
func (c *Client) mapEvent(ev *sentinelEvent) bool {
	for _, a := range []*string{&ev.instance, &ev.oldMaster} {
		if *a == "" {
			continue
		}
		mapped, err := c.opts.splitReplyAddr(ev.sentinel, ev.kind, *a)
		if err != nil {
			c.log.Warn("sentinel event dropped", "err", err)
			return false
		}
		*a = mapped
	}
	return true
}

func (c *Client) trackPubSub(ps *redis.PubSub) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.watchers = append(c.watchers, ps)
}
