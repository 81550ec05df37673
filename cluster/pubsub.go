package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
)

// pubsubRouter owns the clients whose PubSubs Subscribe, PSubscribe and
// SSubscribe return, and the goroutine (watch) that keeps their
// connections on the right node. Each client's dialer picks the node from
// the current snapshot, and every connection it makes is tracked with that
// node (routing.Conns); when a newer snapshot names another node, watch
// closes the connections to the old one, and go-redis's PubSub reconnects
// through the dialer, to the new node, and subscribes again. watch never
// touches the network beyond closing connections. Messages published
// while a subscription moves can be lost, as with any reconnection.
//
//   - Classic pub/sub (Subscribe, PSubscribe) is broadcast to every node
//     of a cluster, so one node serves every subscription: a master of the
//     map that is not suspect, kept while it stays so (broadcast).
//   - Sharded pub/sub (SSubscribe) lives on the shard that owns the
//     channel's slot: one client per slot subscribed (slotSub), whose
//     connections follow the slot's master through failovers and
//     migrations.
type pubsubRouter struct {
	c    *Client
	dial func(ctx context.Context, network, addr string) (net.Conn, error)

	broadcast      *redis.Client
	broadcastConns routing.Conns[string] // by node address

	mu            sync.Mutex
	broadcastNode string           // the node classic subscriptions use; "" until the first dial
	slots         map[int]*slotSub // made on first SSubscribe of the slot

	stop chan struct{}
	wg   sync.WaitGroup
}

// slotSub is the client of the sharded subscriptions of one slot.
type slotSub struct {
	slot   int
	client *redis.Client
	conns  routing.Conns[string] // by node address
}

func newPubsubRouter(c *Client) *pubsubRouter {
	r := &pubsubRouter{c: c, slots: map[int]*slotSub{}, stop: make(chan struct{})}
	r.broadcastConns.Wrap = subscriptionFailed
	// The node clients' dialer, replies bounded by ReplyLimits: the
	// subscription clients below replace their Dialer with ones that pick
	// the node and dial through it.
	r.dial = c.opts.nodeOptions("cluster/pubsub").Dialer
	o := c.opts.nodeOptions("cluster/pubsub")
	o.Dialer = r.dialBroadcast
	r.broadcast = c.nodes.clients.made(redis.NewClient(o))
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		if err := safe.Call(r.watch); err != nil {
			c.topo.log.Error("cluster: pub/sub watcher panicked; subscriptions no longer follow the slot map", "err", err)
		}
	}()
	return r
}

// close stops watch and closes the subscription clients: their PubSubs
// fail with redis.ErrClosed.
func (r *pubsubRouter) close() error {
	close(r.stop)
	r.wg.Wait()
	r.mu.Lock()
	defer r.mu.Unlock()
	errs := []error{r.broadcast.Close()}
	for _, s := range r.slots {
		errs = append(errs, s.client.Close())
	}
	return errors.Join(errs...)
}

// watch follows every snapshot the topology publishes.
func (r *pubsubRouter) watch() {
	snap := r.c.topo.snap.Load()
	for {
		select {
		case <-snap.next:
		case <-r.stop:
			return
		case <-r.c.topo.stop:
			return
		}
		snap = r.c.topo.snap.Load()
		r.follow(snap)
	}
}

// follow closes the subscription connections to nodes snap no longer has
// them on.
func (r *pubsubRouter) follow(snap *snapshot) {
	if !snap.ready {
		return
	}
	if addr := r.broadcastNodeFor(snap); addr != "" {
		r.broadcastConns.CloseOthers(addr)
	}
	r.mu.Lock()
	subs := make([]*slotSub, 0, len(r.slots))
	for _, s := range r.slots {
		subs = append(subs, s)
	}
	r.mu.Unlock()
	for _, s := range subs {
		if s.conns.Len() == 0 {
			continue
		}
		// A suspect master keeps its subscribers: if it is gone, their
		// connections fail on their own, and its replacement is named by a
		// later snapshot.
		if m := snap.master(s.slot); m != nil {
			s.conns.CloseOthers(m.addr)
		}
	}
}

// serving reports whether addr is a master of snap that is not suspect.
func serving(snap *snapshot, addr string) bool {
	return slices.ContainsFunc(snap.masters, func(s *shard) bool { return s.master.addr == addr && !snap.suspect[s.master] })
}

// broadcastNodeFor returns the node classic subscriptions use on snap:
// the one they use, while it is a master that is not suspect, else the
// first such master. With none, the current choice stays (it may answer
// again; if not, its dials fail and report it).
func (r *pubsubRouter) broadcastNodeFor(snap *snapshot) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if serving(snap, r.broadcastNode) {
		return r.broadcastNode
	}
	for _, m := range snap.masters {
		if !snap.suspect[m.master] {
			r.broadcastNode = m.master.addr
			break
		}
	}
	return r.broadcastNode
}

func (r *pubsubRouter) currentBroadcastNode() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.broadcastNode
}

// subscriptionFailed is an error of a subscription connection to addr, as
// the caller's PubSub sees it.
func subscriptionFailed(addr string, err error) error {
	return failure.Subscription("cluster", addr, false, err)
}

// dialFailed is a subscription dialer's error.
func dialFailed(addr string, err error) error {
	return failure.Subscription("cluster", addr, true, err)
}

// dialBroadcast is the classic subscriptions' dialer.
func (r *pubsubRouter) dialBroadcast(ctx context.Context, network, _ string) (net.Conn, error) {
	snap, err := r.c.topo.ready(ctx)
	if err != nil {
		return nil, dialFailed("", err)
	}
	addr := r.broadcastNodeFor(snap)
	if addr == "" {
		r.c.topo.kick(RefreshPubSub)
		return nil, dialFailed("", &failure.DialError{Addr: "cluster/pubsub", Err: errors.New("the slot map names no master to subscribe on")})
	}
	return r.dialTracked(ctx, network, addr, &r.broadcastConns, r.currentBroadcastNode, false)
}

// slotSub returns the client of slot's sharded subscriptions.
func (r *pubsubRouter) slotSub(slot int) *slotSub {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.slots[slot]
	if s == nil {
		s = &slotSub{slot: slot}
		s.conns.Wrap = subscriptionFailed
		o := r.c.opts.nodeOptions(fmt.Sprintf("cluster/pubsub/slot-%d", slot))
		o.Dialer = func(ctx context.Context, network, _ string) (net.Conn, error) { return r.dialSlot(ctx, network, s) }
		s.client = r.c.nodes.clients.made(redis.NewClient(o))
		r.slots[slot] = s
	}
	return s
}

// dialSlot is a slot's sharded subscriptions' dialer: it connects to the
// slot's master (a suspect one too: it may still answer).
func (r *pubsubRouter) dialSlot(ctx context.Context, network string, s *slotSub) (net.Conn, error) {
	snap, err := r.c.topo.ready(ctx)
	if err != nil {
		return nil, dialFailed("", err)
	}
	m := snap.master(s.slot)
	if m == nil {
		r.c.topo.kick(RefreshPubSub)
		return nil, dialFailed("", &NoMasterError{Slot: s.slot})
	}
	current := func() string {
		if m := r.c.topo.snap.Load().master(s.slot); m != nil {
			return m.addr
		}
		return ""
	}
	return r.dialTracked(ctx, network, m.addr, &s.conns, current, true)
}

// dialTracked connects to addr and tracks the connection in conns, unless
// current() moved away from addr meanwhile. A failed dial reports the node
// to the topology (as a failed command does), so that a dead node's
// subscribers move as soon as the map says so.
func (r *pubsubRouter) dialTracked(ctx context.Context, network, addr string, conns *routing.Conns[string], current func() string, sharded bool) (net.Conn, error) {
	conn, err := r.dial(ctx, network, addr)
	if err != nil {
		r.nodeFailed(addr, err)
		return nil, dialFailed(addr, &failure.DialError{Addr: addr, Err: err})
	}
	wc := &watchedConn{Conn: conn, r: r, addr: addr, sharded: sharded}
	tc, ok := conns.TrackIfCurrent(wc, addr, current)
	if !ok {
		return nil, dialFailed(addr, &failure.DialError{Addr: addr, Err: errors.New("the subscription's node changed while connecting")})
	}
	return tc, nil
}

func (r *pubsubRouter) nodeFailed(addr string, err error) {
	if n := r.c.nodes.get(addr); n != nil {
		r.c.topo.failed(n, err)
	}
}

// watchedConn is a subscription connection. A connection lost under it
// (not closed by us) reports its node to the topology. On a sharded one,
// an sunsubscribe the node pushes (Redis 7 sends one for each channel of a
// slot the node lost) asks for a refresh: nothing else may read the map
// again soon if no command touches that slot, and the new map is what
// moves the subscription to the slot's new owner. The scan is of the raw
// bytes: a message whose payload holds the word asks for a refresh too,
// which does no harm.
type watchedConn struct {
	net.Conn
	r       *pubsubRouter
	addr    string
	sharded bool
	closed  atomic.Bool
	tail    []byte // the last bytes read, for a word split across reads
	seam    []byte // scan's buffer: tail and the next read's first bytes
}

var sunsubscribeWord = []byte("sunsubscribe")

func (c *watchedConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if c.sharded && n > 0 && c.scan(p[:n]) {
		c.r.c.topo.kick(RefreshPubSub)
	}
	c.check(err)
	return n, err
}

func (c *watchedConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.check(err)
	return n, err
}

func (c *watchedConn) Close() error {
	c.closed.Store(true) // before the close: a Read it ends must not report
	return c.Conn.Close()
}

func (c *watchedConn) check(err error) {
	if err != nil && !c.closed.Load() && failure.ConnectionLost(err) {
		c.r.nodeFailed(c.addr, err)
	}
}

// scan reports whether the word is in b, or across the seam of b and the
// bytes read before it.
func (c *watchedConn) scan(b []byte) bool {
	w := len(sunsubscribeWord) - 1
	c.seam = append(c.seam[:0], c.tail...)
	c.seam = append(c.seam, b[:min(len(b), w)]...)
	seam := c.seam
	found := bytes.Contains(b, sunsubscribeWord) || bytes.Contains(seam, sunsubscribeWord)
	rest := b
	if len(b) < w {
		rest = seam
	}
	c.tail = append(c.tail[:0], rest[len(rest)-min(len(rest), w):]...)
	return found
}

// Subscribe subscribes to channels. Classic pub/sub is broadcast to every
// node, so the PubSub's connection goes to one master of the slot map;
// when that node fails, is demoted or leaves the map, the connection is
// closed and go-redis's PubSub reconnects to another and subscribes again
// (messages published meanwhile can be lost). Do not SSubscribe on it:
// use SSubscribe.
func (c *Client) Subscribe(ctx context.Context, channels ...string) *redis.PubSub {
	return c.pubsub.broadcast.Subscribe(ctx, channels...)
}

// PSubscribe subscribes to patterns, as Subscribe does to channels.
func (c *Client) PSubscribe(ctx context.Context, patterns ...string) *redis.PubSub {
	return c.pubsub.broadcast.PSubscribe(ctx, patterns...)
}

// SSubscribe subscribes to shard channels on the master of their slot,
// and follows the slot there: through a failover and a migration, the
// PubSub reconnects to the slot's new master and subscribes again
// (messages published meanwhile can be lost; none while the shard is
// stable). A sharded subscription lives on one node, so the channels must
// share a slot (a hash tag: "{room:1}:a", "{room:1}:b"), in this call and
// in later SSubscribe calls on the PubSub; channels in several slots are
// refused before anything is sent: the PubSub's Receive returns a
// *SubscribeCrossSlotError (go-redis's ClusterClient routes them by the
// first channel, and the server replies CROSSSLOT). Subscribe to each
// slot's channels with a PubSub of its own. SSubscribe without a channel
// is refused so too, since the channels choose the node.
func (c *Client) SSubscribe(ctx context.Context, channels ...string) *redis.PubSub {
	var slots []int
	for _, ch := range channels {
		if s := Slot(ch); !slices.Contains(slots, s) {
			slots = append(slots, s)
		}
	}
	if len(slots) != 1 {
		slices.Sort(slots)
		return c.refusedPubSub(ctx, &SubscribeCrossSlotError{Slots: slots}, channels)
	}
	return c.pubsub.slotSub(slots[0]).client.SSubscribe(ctx, channels...)
}

// refusedPubSub returns a PubSub whose every connection fails with err:
// its client never touches the network and holds no goroutine, so it is
// left to the garbage collector with the PubSub.
func (c *Client) refusedPubSub(ctx context.Context, err error, channels []string) *redis.PubSub {
	o := c.opts.nodeOptions("cluster/pubsub/refused")
	o.Dialer = func(context.Context, string, string) (net.Conn, error) { return nil, err }
	return redis.NewClient(o).SSubscribe(ctx, channels...)
}

// SubscribeCrossSlotError is an SSubscribe refused before anything was
// sent because its channels hash to several slots (Slots), or to none (no
// channel): a sharded subscription lives on the shard of its slot.
type SubscribeCrossSlotError struct {
	Slots []int
}

func (e *SubscribeCrossSlotError) Error() string {
	if len(e.Slots) == 0 {
		return "cluster: SSubscribe without a channel: the channels choose the shard, so give them to SSubscribe; nothing was sent"
	}
	s := make([]string, len(e.Slots))
	for i, v := range e.Slots {
		s[i] = fmt.Sprint(v)
	}
	return "cluster: SSubscribe channels hash to slots " + strings.Join(s, ", ") +
		": a sharded subscription lives on its slot's shard, so one PubSub's channels must share a slot (use a hash tag, or one PubSub per slot); nothing was sent"
}
