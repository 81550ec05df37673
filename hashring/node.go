package hashring

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/eventq"
	"github.com/rediskit/rediskit/internal/safe"
)

// Node is a member of a ring: it keeps its replicas on the ring while
// started, and answers which keys it owns. Create it with NewNode; Start
// joins the ring, Stop leaves it. Contains, Owner, Ranges, NodeCount and
// ValidUntil are lock-free and safe to call from any goroutine at any
// time.
type Node struct {
	st      store
	opts    Config
	id      string
	members []Member
	names   []string
	mine    map[Member]bool
	changes chan struct{}

	mu    sync.Mutex // guards phase and cur
	phase phase
	cur   *run

	// viewMu serialises writes of view, the deadline timer and shown;
	// reads of view are lock-free.
	viewMu sync.Mutex
	view   atomic.Pointer[view]
	timer  *time.Timer
	shown  []Range // the ranges the last EventRangesChanged reported

	// events delivers the events of the current run (from the node's
	// goroutine, Start, Stop and the deadline timer) to Config.Observer,
	// one at a time, in order: made by Start, closed by Stop (nil while
	// stopped, or without an Observer). eventsDropped counts the events
	// dropped by the queues of the runs that ended.
	events        atomic.Pointer[eventq.Queue[Event]]
	eventsDropped atomic.Uint64
}

type phase int

const (
	stopped phase = iota
	starting
	running
	stopping
)

// view is what the ownership methods read: the last ring read, this
// node's replicas in it, and until when the node may use it.
type view struct {
	snap     *Snapshot
	mine     []bool  // mine[i]: snap.replicas[i] is this node's
	ranges   []Range // this node's ranges, in ring order
	deadline time.Time
}

// valid reports whether the view may be used now. A nil view is not.
// The deadline carries a monotonic clock reading, and time.Until reads
// only the monotonic clock: half the cost of time.Now on Linux.
func (v *view) valid() bool { return v != nil && time.Until(v.deadline) > 0 }

// effective is the ranges the node owns now.
func (v *view) effective() []Range {
	if !v.valid() {
		return nil
	}
	return v.ranges
}

// run is one started period of a node, from Start to Stop. Its fields
// below the line belong to the run's goroutine (and to Start before it
// begins).
type run struct {
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	closed bool // guarded by Node.viewMu: Stop began, publish nothing more

	sub           *subscription
	deadline      time.Time // ownership deadline (monotonic clock)
	expiredLogged bool      // the ERROR for this deadline was logged
	readFailed    bool      // no heartbeat until a read works
	notifyPending bool      // publish "*" after the next heartbeat
	lastCleanup   time.Time
	nextHeartbeat time.Time
}

// NewNode returns a node of the ring stored at key. It picks the node's
// replicas (random starts and ids) now; they stay the same across Stop and
// Start. It does not talk to Redis.
//
// The node uses client for all its Redis calls, and opens one pub/sub
// connection on it (client.Subscribe) while started. The client remains
// the caller's: the node never closes it, and its timeouts bound every
// call the node makes (see the package documentation).
func NewNode(client redis.UniversalClient, key string, cfg Config) (*Node, error) {
	o, err := cfg.resolved(true)
	if err != nil {
		return nil, err
	}
	st, err := newStore(client, key, o)
	if err != nil {
		return nil, err
	}
	n := &Node{
		st:      st,
		opts:    o,
		id:      o.Hostname + ":" + o.pid(),
		members: newMembers(o.Replicas, o.Hostname, o.pid()),
		mine:    make(map[Member]bool, o.Replicas),
		changes: make(chan struct{}, 1),
	}
	for _, m := range n.members {
		n.names = append(n.names, m.String())
		n.mine[m] = true
	}
	return n, nil
}

// ID is the node's identity on the ring, "<hostname>:<pid>".
func (n *Node) ID() string { return n.id }

// Key is the ring's Redis key.
func (n *Node) Key() string { return n.st.key }

// Members returns the node's ZSET members.
func (n *Node) Members() []string { return slices.Clone(n.names) }

// Changes returns a channel that receives a value when the ranges this
// node owns may have changed: after a read of the ring changed them, when
// the ownership deadline passes, when ownership is restored, and at Stop.
// Signals are coalesced (capacity 1) and may be spurious; read Ranges or
// call Contains after each. The channel is never closed.
func (n *Node) Changes() <-chan struct{} { return n.changes }

func (n *Node) signal() {
	select {
	case n.changes <- struct{}{}:
	default:
	}
}

// Contains reports whether this node owns the key: false when the node is
// not started or its ownership deadline has passed (checked against the
// clock at every call).
func (n *Node) Contains(key string) bool {
	return n.ContainsPoint(n.opts.Hash.Point(key))
}

// ContainsPoint is Contains for a point of the ring.
func (n *Node) ContainsPoint(p uint32) bool {
	v := n.view.Load()
	if v == nil || len(v.mine) == 0 || !v.contains(p) {
		return false
	}
	// Only a yes needs the deadline: "not mine" is safe whatever the
	// clock says, and the clock read (about 20 ns here) is most of the
	// call for the keys a node does not own, which are most of them.
	return v.valid()
}

// scanRanges is how many ranges a node may own for contains to scan them
// rather than search the whole ring: a node's own ranges are few (its
// replicas, one more for the one that wraps), and a scan of 17 ranges
// with predictable branches (about 5 ns) beats a binary search of the
// ring's 1,600 points (100 nodes × 16 replicas: 11 unpredictable steps,
// about 30 ns). Measured in BENCHMARKS.md (issue 21).
const scanRanges = 64

// contains reports whether the node owns point p: by a scan of its ranges
// when it has at most scanRanges of them, else by the ring's binary
// search. Both give the same answer (FuzzContainsPaths).
func (v *view) contains(p uint32) bool {
	if len(v.ranges) > scanRanges {
		return v.mine[v.snap.index(p)]
	}
	q := uint64(p)
	for _, r := range v.ranges {
		if r.Start <= q && q < r.End {
			return true
		}
	}
	return false
}

// Owner returns the ID of the node that owns the key by this node's view
// of the ring, or false when the node is not started, its ownership
// deadline has passed, or the ring is empty.
func (n *Node) Owner(key string) (string, bool) {
	p := n.opts.Hash.Point(key)
	v := n.view.Load()
	if !v.valid() {
		return "", false
	}
	return v.snap.OwnerOfPoint(p)
}

// Ranges returns the ranges this node owns: one per replica, two for the
// replica that wraps around the top of the ring, in ring order (as
// redis-hashring's get_ranges). Empty when the node is not started or its
// ownership deadline has passed.
//
// The slice is the node's current view, shared by every caller so that
// Ranges does not allocate: read it, do not modify its elements (copy it
// with slices.Clone first). Its capacity is its length, so appending to
// it copies; the node never changes a view it has handed out.
func (n *Node) Ranges() []Range {
	v := n.view.Load()
	if !v.valid() {
		return nil
	}
	return v.ranges[:len(v.ranges):len(v.ranges)]
}

// NodeCount is the number of nodes on the ring by this node's view; 0 when
// the node is not started or its ownership deadline has passed.
func (n *Node) NodeCount() int {
	v := n.view.Load()
	if !v.valid() {
		return 0
	}
	return v.snap.NodeCount()
}

// ValidUntil is the node's ownership deadline: until then, unless a
// renewal extends it, the node's answers stand. Zero when the node is not
// started or the deadline has passed.
func (n *Node) ValidUntil() time.Time {
	v := n.view.Load()
	if !v.valid() {
		return time.Time{}
	}
	return v.deadline
}

// Print writes the ring's debug listing (see Ring.Print). It reads the
// ring from Redis and works whether or not the node is started.
func (n *Node) Print(ctx context.Context, w io.Writer) error {
	return printRing(ctx, &n.st, w)
}

// Start joins the ring: it subscribes to the ring's channel (waiting at
// most Config.SubscribeTimeout for the confirmation), sends a heartbeat,
// notifies the other nodes, removes expired replicas, and reads the ring.
// It returns when the node has its ranges, so Contains is right at once.
//
// When a step fails (or ctx ends) Start returns an *Error after trying to
// remove the replicas it may have added; the node can then Start again.
// Start on a started node returns ErrAlreadyStarted; while another Start
// or Stop of the node runs it returns ErrBusy at once.
//
// After Start the node keeps itself on the ring until Stop, retrying after
// every error (see the package documentation).
func (n *Node) Start(ctx context.Context) error {
	n.mu.Lock()
	switch n.phase {
	case starting, stopping:
		n.mu.Unlock()
		return ErrBusy
	case running:
		n.mu.Unlock()
		return ErrAlreadyStarted
	}
	n.phase = starting
	n.events.Store(eventq.New(eventq.Config[Event]{Deliver: n.opts.Observer, Logger: n.opts.Logger, Name: "hashring"}))
	n.mu.Unlock()

	r, err := n.join(ctx)
	if err != nil {
		n.closeEvents()
	} else {
		// Start returns once the Observer has the events it caused.
		fctx, cancel := context.WithTimeout(ctx, eventq.DefaultDrainTimeout)
		_ = n.events.Load().Flush(fctx)
		cancel()
	}

	n.mu.Lock()
	defer n.mu.Unlock()
	if err != nil {
		n.phase = stopped
		return err
	}
	n.phase, n.cur = running, r
	return nil
}

func (n *Node) join(ctx context.Context) (*run, error) {
	r := &run{done: make(chan struct{})}
	r.ctx, r.cancel = context.WithCancel(context.WithoutCancel(ctx))
	wrote := false
	fail := func(step string, err error) (*run, error) {
		r.cancel()
		r.sub.close()
		e := &Error{Op: "start", Step: step, Key: n.st.key, Server: serverOf(n.st.client), Err: err, Wrote: wrote}
		if wrote {
			rctx, cancel := ctx, context.CancelFunc(func() {})
			if ctx.Err() != nil {
				rctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), DefaultRemoveTimeout)
			}
			e.Cleanup = n.st.remove(rctx, n.names)
			cancel()
		}
		return nil, e
	}

	sub, err := n.st.subscribe(ctx, n.opts.SubscribeTimeout)
	if err != nil {
		return fail("subscribe", err)
	}
	r.sub = sub
	if err := ctx.Err(); err != nil {
		return fail("subscribe", context.Cause(ctx))
	}
	wrote = true // a heartbeat may be applied even when its reply is lost
	t0, added, lowered, err := n.st.heartbeat(ctx, n.names, n.ahead())
	if err != nil {
		return fail("heartbeat", err)
	}
	n.noteLowered(ctx, t0, lowered)
	if added > 0 {
		if err := n.st.notify(ctx); err != nil {
			return fail("notify", err)
		}
	}
	removed, err := n.st.cleanup(ctx)
	if err != nil {
		return fail("cleanup", err)
	}
	r.lastCleanup = time.Now()
	if removed > 0 {
		if err := n.st.notify(ctx); err != nil {
			return fail("notify", err)
		}
	}
	snap, err := n.st.read(ctx)
	if err != nil {
		return fail("read", err)
	}
	if err := ctx.Err(); err != nil {
		return fail("read", context.Cause(ctx))
	}
	r.deadline = t0.Add(n.opts.OwnershipDeadline)
	r.nextHeartbeat = t0.Add(n.opts.HeartbeatInterval)
	n.publish(r, snap)
	go n.loop(r)
	return r, nil
}

// Stop leaves the ring: the node gives up its keys at once (Contains is
// false from the moment Stop is called), its goroutine ends, and its
// replicas are removed from the ring and the other nodes notified. It
// waits for a Redis call the goroutine is making, which the client's
// timeouts bound, and for the Observer to receive the events already
// queued, at most eventq.DefaultDrainTimeout (1 s; past it they are
// dropped): the Observer is not called after Stop returns.
//
// Stop on a node that is not started does nothing. While another Start
// or Stop of the node runs it returns ErrBusy at once. When the removal
// fails it returns an *Error: the node is stopped anyway, and its replicas
// expire on their own after Config.Expiry.
func (n *Node) Stop(ctx context.Context) error {
	n.mu.Lock()
	switch n.phase {
	case starting, stopping:
		n.mu.Unlock()
		return ErrBusy
	case stopped:
		n.mu.Unlock()
		return nil
	}
	n.phase = stopping
	r := n.cur
	n.mu.Unlock()

	n.viewMu.Lock()
	r.closed = true
	old := n.view.Swap(nil)
	if n.timer != nil {
		n.timer.Stop()
	}
	n.showLocked(nil)
	n.viewMu.Unlock()
	if len(old.effective()) > 0 {
		n.signal()
	}
	r.cancel()
	<-r.done

	err := n.st.remove(ctx, n.names)

	// The run's goroutine and deadline timer are done: its last events
	// are queued. (Before the phase changes: a Start may follow at once,
	// with a queue of its own.)
	n.closeEvents()
	n.mu.Lock()
	n.phase, n.cur = stopped, nil
	n.mu.Unlock()
	if err != nil {
		return &Error{Op: "stop", Step: "remove", Key: n.st.key, Server: serverOf(n.st.client), Err: err}
	}
	return nil
}

// closeEvents closes the run's event queue: it delivers the events
// queued, waiting at most eventq.DefaultDrainTimeout for the Observer.
func (n *Node) closeEvents() {
	if q := n.events.Swap(nil); q != nil {
		q.Close()
		n.eventsDropped.Add(q.Dropped())
	}
}

// publish makes a new ring read the node's view, with the run's current
// deadline, and signals Changes when the node's ranges changed.
func (n *Node) publish(r *run, snap *Snapshot) {
	v := &view{snap: snap, deadline: r.deadline, mine: make([]bool, len(snap.replicas))}
	for i, rep := range snap.replicas {
		if n.mine[rep.Member] {
			v.mine[i] = true
			v.ranges = snap.replicaRanges(i, v.ranges)
		}
	}

	n.viewMu.Lock()
	defer n.viewMu.Unlock()
	if r.closed {
		return
	}
	old := n.view.Swap(v)
	now := v.effective()
	if !slices.Equal(old.effective(), now) {
		n.signal()
	}
	n.showLocked(now)
	// Signal again when the deadline passes, so a worker waiting on
	// Changes drops its keys on time even while a Redis call blocks.
	if d := time.Until(v.deadline); n.timer == nil {
		n.timer = time.AfterFunc(d, n.atDeadline)
	} else {
		n.timer.Reset(d)
	}
}

// atDeadline runs when the view's deadline passes: it signals Changes and
// reports the node's keys given up, on time even while the node's
// goroutine waits on a Redis call.
func (n *Node) atDeadline() {
	n.signal()
	n.viewMu.Lock()
	defer n.viewMu.Unlock()
	if v := n.view.Load(); v != nil && !v.valid() {
		n.showLocked(nil)
	}
}

// showLocked reports the node's effective ranges in an EventRangesChanged
// when they differ from the ranges last reported. n.viewMu is held.
func (n *Node) showLocked(now []Range) {
	if slices.Equal(n.shown, now) {
		return
	}
	n.shown = now
	n.emit(Event{Kind: EventRangesChanged, Share: share(now), Ranges: len(now)})
}

// loop keeps the node on the ring until the run is cancelled.
func (n *Node) loop(r *run) {
	defer close(r.done)
	defer func() { r.sub.close() }()
	timer := time.NewTimer(time.Until(r.nextHeartbeat))
	defer timer.Stop()
	for {
		var msgs <-chan struct{}
		var errs <-chan error
		if r.sub != nil {
			msgs, errs = r.sub.msgs, r.sub.errs
		}
		select {
		case <-r.ctx.Done():
			return
		case <-msgs:
			// Another node changed the ring: read it. The deadline
			// does not move; only a heartbeat and a read renew it.
			var snap *Snapshot
			var err error
			if perr := safe.Call(func() { snap, err = n.st.read(r.ctx) }); perr != nil {
				err = perr // a reply go-redis could not handle: a failed read
			}
			if err != nil {
				r.readFailed = true
				n.recover(r, "read", err)
				break
			}
			n.publish(r, snap)
		case err := <-errs:
			if moved(err) {
				n.moved(r, err)
				break
			}
			n.recover(r, "subscription", err)
		case <-timer.C:
			var step string
			var err error
			if perr := safe.Call(func() { step, err = n.renew(r) }); perr != nil {
				step, err = "heartbeat", perr
			}
			if err != nil {
				n.recover(r, step, err)
			}
		}
		timer.Reset(time.Until(r.nextHeartbeat))
	}
}

// renew is one heartbeat round: (re)subscribe if needed, read first if the
// last read failed, send the heartbeat, notify if needed, clean up if due,
// read the ring, and advance the ownership deadline. It returns the step
// that failed.
func (n *Node) renew(r *run) (string, error) {
	n.observe(r, nil)
	ctx := r.ctx
	if r.sub == nil {
		sub, err := n.st.subscribe(ctx, n.opts.SubscribeTimeout)
		if err != nil {
			return "subscribe", err
		}
		r.sub = sub
	}
	if r.readFailed {
		snap, err := n.st.read(ctx)
		if err != nil {
			return "read", err
		}
		r.readFailed = false
		n.publish(r, snap)
	}
	t0, added, lowered, err := n.st.heartbeat(ctx, n.names, n.ahead())
	if err != nil {
		return "heartbeat", err
	}
	n.noteLowered(ctx, t0, lowered)
	// Tell the others when the node (re)appears: its replicas were added,
	// or it had given its keys up, so the others may have dropped it.
	if added > 0 || !t0.Before(r.deadline) {
		r.notifyPending = true
	}
	if t := time.Now(); t.Sub(r.lastCleanup) >= n.opts.CleanupInterval {
		removed, err := n.st.cleanup(ctx)
		if err != nil {
			return "cleanup", err
		}
		r.lastCleanup = t
		if removed > 0 {
			r.notifyPending = true
		}
	}
	if r.notifyPending {
		if err := n.st.notify(ctx); err != nil {
			return "notify", err
		}
		r.notifyPending = false
	}
	snap, err := n.st.read(ctx)
	if err != nil {
		r.readFailed = true
		return "read", err
	}
	n.observe(r, nil) // log the old deadline's passing before replacing it
	r.deadline = t0.Add(n.opts.OwnershipDeadline)
	r.nextHeartbeat = t0.Add(n.opts.HeartbeatInterval)
	n.publish(r, snap)
	if r.expiredLogged && time.Now().Before(r.deadline) {
		r.expiredLogged = false
		n.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "hashring: ownership restored",
			slog.String("key", n.st.key), slog.String("node", n.id),
			slog.Time("valid_until", r.deadline))
		n.emit(Event{Kind: EventOwnershipRestored, ValidUntil: r.deadline})
	}
	return "", nil
}

// moved handles the end of the subscription by a client that moved it to
// a new server on purpose (see moved): nothing failed, so there is no WARN
// and no backoff. The node subscribes again at once and renews on the new
// server right away, as a heartbeat round would: notices published during
// the switch may be lost (the read makes up for them), and the new server
// may lack the node's latest heartbeat (Sentinel replicates
// asynchronously) or, for another database, the node's replicas
// altogether (the heartbeat puts them back, and tells the others). The
// ownership deadline and the view stand until that renewal replaces them,
// as for any renewal. Only if it fails does the node go the way of any
// failure: WARN, backoff, retry.
func (n *Node) moved(r *run, cause error) {
	r.sub.close()
	r.sub = nil
	n.opts.Logger.LogAttrs(r.ctx, slog.LevelInfo, "hashring: the subscription moved to a new server; subscribing again at once",
		slog.String("key", n.st.key), slog.String("node", n.id), slog.Any("error", cause))
	n.emit(Event{Kind: EventSubscriptionMoved, Err: cause})
	var step string
	var err error
	if perr := safe.Call(func() { step, err = n.renew(r) }); perr != nil {
		step, err = "heartbeat", perr
	}
	if err != nil {
		n.recover(r, step, err)
	}
}

// ahead is how far in the future, by the node's clock, a heartbeat leaves
// the node's own scores alone (see store.heartbeat): Expiry −
// OwnershipDeadline, the clock skew the timings tolerate (10 s by
// default). A score ahead by no more than that keeps the node alive for
// the others at most that much longer than its own deadline says, which
// the timings allow for anyway, and it is what a backward step of the
// node's clock within that tolerance leaves behind; ZADD GT then holds it
// until the clock catches up, as before. A score further ahead can only
// come from a clock that was off by more than the timings tolerate, or
// from a writer other than this node (a score of 1e300, +inf): left
// there, it would keep the node's replicas alive for everyone long after
// the node died, leaving its keys without an owner.
func (n *Node) ahead() time.Duration { return n.opts.Expiry - n.opts.OwnershipDeadline }

// noteLowered logs a heartbeat that brought own scores back from the
// future: someone else wrote the node's members, or its clock was far
// ahead before; either deserves a look.
func (n *Node) noteLowered(ctx context.Context, t0 time.Time, lowered int64) {
	if lowered == 0 {
		return
	}
	n.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "hashring: lowered the node's own scores that were far in the future",
		slog.String("key", n.st.key), slog.String("node", n.id), slog.Int64("replicas", lowered),
		slog.Time("now", t0), slog.Time("lowered_to", t0.Add(n.ahead())))
}

// recover retries after a failed step until a renewal succeeds or the run
// ends: a random wait, at most RetryWait after the first failure, doubling
// up to MaxRetryWait. Every failure is logged at WARN. The subscription is
// renewed too, since a notice may have been lost with the connection.
func (n *Node) recover(r *run, step string, err error) {
	for attempt := 1; ; attempt++ {
		if r.ctx.Err() != nil {
			return
		}
		r.sub.close()
		r.sub = nil
		wait := backoff(attempt, n.opts.RetryWait, n.opts.MaxRetryWait)
		n.opts.Logger.LogAttrs(r.ctx, slog.LevelWarn, "hashring: ring update failed; retrying",
			slog.String("key", n.st.key), slog.String("node", n.id), slog.String("step", step),
			slog.Int("attempt", attempt), slog.Duration("wait", wait), slog.Any("error", err))
		n.emit(Event{Kind: EventAttemptFailed, Step: step, Err: err})
		n.observe(r, err)
		if !sleep(r.ctx, wait) {
			return
		}
		n.observe(r, nil)
		if step, err = n.renew(r); err == nil {
			return
		}
	}
}

// observe logs, once per passing, that the ownership deadline has passed.
func (n *Node) observe(r *run, cause error) {
	if r.expiredLogged || r.deadline.IsZero() {
		return
	}
	now := time.Now()
	if now.Before(r.deadline) {
		return
	}
	r.expiredLogged = true
	attrs := []slog.Attr{
		slog.String("key", n.st.key), slog.String("node", n.id),
		slog.Duration("late", now.Sub(r.deadline)),
	}
	if cause != nil {
		attrs = append(attrs, slog.Any("error", cause))
	}
	n.opts.Logger.LogAttrs(r.ctx, slog.LevelError,
		"hashring: ownership deadline passed; the node owns no keys until a heartbeat and a read succeed", attrs...)
	n.emit(Event{Kind: EventDeadlinePassed, Late: now.Sub(r.deadline), Err: cause})
	// The node owns no keys now: report it, unless a read or Stop did.
	n.viewMu.Lock()
	if !r.closed {
		n.showLocked(nil)
	}
	n.viewMu.Unlock()
}
