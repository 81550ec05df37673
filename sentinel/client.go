package sentinel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/internal/eventq"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/logdedup"
	"github.com/rediskit/rediskit/internal/oncewrite"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/replica"
)

// front is the go-redis client whose command methods Client exposes
// (with routing.Front's shadowing methods). It never dials: its first
// hook routes every command, pipeline and transaction to the data nodes'
// clients.
type front = routing.Front

// Client is a go-redis client for a Sentinel-managed deployment. It has
// every go-redis command method; each command, pipeline or transaction is
// classified as read-only or not and sent to the master or a replica, and
// failovers are followed with the rules in the package documentation.
//
// Client satisfies redis.UniversalClient. Create it with NewClient or
// NewClientFromURL and Close it when done.
type Client struct {
	*front

	opts       Config
	classifier *classify.Classifier
	selector   ReplicaSelector
	log        *slog.Logger

	// topo owns the topology and publishes the snapshots calls are routed
	// on (see topology).
	topo   *topology
	pubsub *pubsubRouter
	stats  counters
	// observer delivers the events to Config.Observer (nil without one).
	observer *eventq.Queue[Event]

	// cursors are the SCAN cursors the client could not tag (scan.go).
	cursors routing.UntaggedCursors
	// blocking holds the connections of blocking commands (blocking.go).
	blocking blockingConns

	// durableKick is when a refused durable write last asked for a refresh
	// (Unix nanoseconds; see recheckDurable).
	durableKick routing.Throttle

	closed atomic.Bool

	// once makes writes exactly-once (Config.ExactlyOnce; nil: off).
	once *oncewrite.Writer

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // the client's own goroutines (unblockWaiting)
}

// NewClient returns a client for the master named cfg.MasterName. It
// validates cfg and returns at once; the first discovery runs in
// the background, and calls made before it completes wait for it (within
// their context).
func NewClient(cfg Config) (*Client, error) {
	opts, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{
		opts:       opts,
		classifier: opts.Classifier,
		selector:   opts.ReplicaSelector,
		log:        logdedup.Logger(opts.Logger).With("rediskit.master_name", opts.MasterName),
	}
	if c.once, err = oncewrite.New(opts.ExactlyOnce, opts.FailoverHold, opts.Classifier, c.log); err != nil {
		return nil, fmt.Errorf("sentinel: ExactlyOnce: %w", err)
	}
	c.observer = eventq.New(eventq.Config[Event]{Deliver: opts.Observer, Logger: c.log, Name: "sentinel"})
	if c.selector == nil {
		sel, err := replica.NewSelector(replica.Config{})
		if err != nil {
			return nil, err
		}
		c.selector = sel
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.topo = newTopology(c.ctx, &c.opts, c.log, c.emit, &c.stats)
	c.topo.selector = c.selector
	c.topo.installed = c.installed
	c.blocking.idle, c.blocking.inUse = map[*node][]*blockingConn{}, map[*blockingConn]struct{}{}
	c.pubsub = newPubsubRouter(c)

	c.front = c.newFront()
	if b, ok := c.selector.(BindableSelector); ok {
		b.Bind(replica.Env{
			MasterName: opts.MasterName,
			Sentinels:  slices.Clone(c.opts.SentinelAddrs),
			NodeOptions: func(addr string) *redis.Options {
				return c.opts.controlOptions(addr)
			},
			Evict:  c.topo.evict,
			Logger: c.log,
		})
	}

	c.topo.start()
	return c, nil
}

// NewClientFromURL parses a redis+sentinel:// or rediss+sentinel:// URL
// (see package redisurl) and returns a client for it (NewClientFromConfig
// serves a standalone redis:// URL too). cfg supplies the
// settings a URL cannot carry (Logger, Observer, ReplicaSelector, ...; the
// zero Config for none); the URL's fields take precedence.
func NewClientFromURL(rawURL string, cfg Config) (*Client, error) {
	u, err := redisurl.Parse(rawURL)
	if err != nil {
		return nil, err
	}
	if u.Kind != redisurl.Sentinel {
		// Typed, so a caller can tell a URL of the wrong kind (nothing was
		// dialled) from a server that failed.
		return nil, fmt.Errorf("sentinel: %s: %w", u.Redacted(), &redisurl.Error{Field: "scheme",
			Reason: "a " + string(u.Kind) + " URL, not a redis+sentinel:// one; nothing was dialled",
			Hint:   wrongKindHint(u.Kind)})
	}
	return NewClientFromConfig(u, cfg)
}

// wrongKindHint says which constructor serves a URL of kind k.
func wrongKindHint(k redisurl.Kind) string {
	switch k {
	case redisurl.Cluster:
		return "use cluster.NewClientFromURL (or rediskit.NewClientFromURL) for a cluster"
	case redisurl.Standalone:
		return "use NewClientFromConfig (Config.Primary) or rediskit.NewClientFromURL for a standalone server, or write redis+sentinel://host1,host2/mastername"
	case redisurl.Unix:
		return "use NewClientFromConfig (Config.Primary is the socket path) or rediskit.NewClientFromURL for a server on a unix socket"
	}
	return "write redis+sentinel://host1,host2/mastername"
}

// NewClientFromConfig is NewClientFromURL for a parsed URL: a Sentinel URL
// (redis+sentinel://, rediss+sentinel://), or a standalone one (redis://,
// rediss://, unix://: Config.Primary is its address or socket path). A
// cluster URL is refused (package cluster serves clusters).
func NewClientFromConfig(u *redisurl.Config, cfg Config) (*Client, error) {
	switch u.Kind {
	case redisurl.Sentinel:
		cfg.MasterName = u.MasterName
		cfg.SentinelAddrs = u.Sentinels
	case redisurl.Standalone, "":
		cfg.Primary = u.Addr
	case redisurl.Unix:
		cfg.Primary = u.SocketPath
	default:
		return nil, fmt.Errorf("sentinel: %s: %w", u.Redacted(), &redisurl.Error{Field: "scheme",
			Reason: "a " + string(u.Kind) + " URL, not a redis+sentinel:// or redis:// one; nothing was dialled",
			Hint:   wrongKindHint(u.Kind)})
	}
	cfg.SentinelUsername, cfg.SentinelPassword = u.SentinelUsername, u.SentinelPassword
	cfg.Username, cfg.Password = u.Username, u.Password
	cfg.DB = u.DB
	cfg.ClientName = u.ClientName
	if u.ReadFrom != "" {
		cfg.ReadFrom = u.ReadFrom
	}
	if u.DialTimeout != 0 {
		cfg.DialTimeout = u.DialTimeout
	}
	if u.ReadTimeout != 0 {
		cfg.ReadTimeout = u.ReadTimeout
	}
	if u.WriteTimeout != 0 {
		cfg.WriteTimeout = u.WriteTimeout
	}
	tlsCfg, err := u.TLSConfig()
	if err != nil {
		return nil, err
	}
	if tlsCfg != nil {
		cfg.TLSConfig = tlsCfg
		cfg.SentinelTLSConfig = tlsCfg
	}
	return NewClient(cfg)
}

// String describes the client without secrets.
func (c *Client) String() string {
	master := "(not yet discovered)"
	if s := c.topo.load(); s != nil && s.master != nil {
		master = s.master.addr
	}
	if c.opts.Primary != "" {
		return fmt.Sprintf("sentinel.Client<standalone primary=%s replicas=%d readFrom=%s>", c.opts.Primary, len(c.topo.load().replicas), c.opts.ReadFrom)
	}
	return fmt.Sprintf("sentinel.Client<%s master=%s sentinels=%v readFrom=%s>", c.opts.MasterName, master, c.topo.sentinels.list(), c.opts.ReadFrom)
}

// Close stops the client's goroutines and closes every connection. It is
// safe to call more than once.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	// The auto-pipeliners first: closing them drains their batches, which
	// still run on the nodes. None is made after this.
	c.front.CloseAutoPipelines()
	// Closing the connections first unblocks workers waiting on the
	// network; then wait for every goroutine.
	c.cancel()
	c.blocking.close()
	c.pubsub.close()
	c.topo.close()
	c.wg.Wait()
	err := c.selector.Close()
	// The topology goroutine has ended: every event it reported is queued.
	c.observer.Close()
	if ferr := c.front.CloseFront(); err == nil {
		err = ferr
	}
	return err
}

// installed retires what the client holds on nodes a new snapshot
// dropped (the topology goroutine calls it after each install, with the
// snapshot replaced and the addresses kept): idle blocking connections,
// calls still blocked on a master it left, subscriptions to it.
func (c *Client) installed(cur, next *snapshot, keep map[string]bool) {
	c.blocking.forget(func(n *node) bool { return keep[n.addr] && !n.retired.Load() })
	masterChanged := cur.masterAddr() != next.masterAddr()
	if masterChanged && cur.master != nil {
		c.unblockWaiting(cur.master)
		if cur.master.cache != nil {
			// The old master is being demoted: what it cached as the
			// master is not served for the new one's keys (a replica read
			// there caches afresh).
			cur.master.cache.Flush()
		}
	}
	if masterChanged {
		c.pubsub.masterChanged(next.masterAddr())
	}
}

// AddHook adds a go-redis hook to every data-node client, present and
// future, so it sees each command on the node that runs it.
func (c *Client) AddHook(h redis.Hook) {
	// The client's own commands on those clients (CLIENT ID before a
	// blocking command) run with a context marked internal: the caller's
	// hooks do not see them.
	h = routing.UserHook(h)
	c.topo.nodes.addHook(h)
	c.pubsub.addHook(h)
}

// OnNewNode calls fn with the go-redis client of every data node the
// client routes the caller's work to (the master, the replicas, and the
// client subscriptions use), those it has now and every one it makes
// later (after a failover, for a new replica), as go-redis's ClusterClient
// and Ring do. It is the way to instrument the nodes, one span or metric
// per call on the node that served it:
//
//	c.OnNewNode(func(rc *redis.Client) { _ = redisotel.InstrumentTracing(rc) })
//
// The clients of the client's own checks (ROLE, probes) are not passed:
// they carry none of the caller's work. fn is called on the caller's
// goroutine for the nodes the client has now, and later on the client's
// own goroutines as nodes appear, possibly concurrently with the caller:
// it must be safe for concurrent use, and must not block.
func (c *Client) OnNewNode(fn func(*redis.Client)) {
	c.topo.nodes.onNewNode(fn)
	fn(c.pubsub.client)
}

// Selector returns the ReplicaSelector the client uses (by default a
// *replica.Selector), e.g. to read its RTT table or register its metrics.
func (c *Client) Selector() ReplicaSelector { return c.selector }

// Master returns the address writes currently go to ("" before the first
// discovery).
func (c *Client) Master() string {
	if s := c.topo.load(); s.master != nil {
		return s.master.addr
	}
	return ""
}

// Watch runs fn in a WATCH transaction on the master. It waits while a
// failover is under way, like any write, and is never re-run: a failover
// during fn fails it with a *NodeError saying whether the EXEC may have
// run (fn's own error is returned as it is).
func (c *Client) Watch(ctx context.Context, fn func(*redis.Tx) error, keys ...string) error {
	snap, err := c.writableSnapshot(ctx)
	if err != nil {
		return err
	}
	n := snap.master
	n.acquire()
	defer n.release()
	var own error // fn's error: the caller's own
	err = n.client.Watch(ctx, func(tx *redis.Tx) error { own = fn(tx); return own }, keys...)
	return c.seal(snap, n, true, nil, nil, err, own)
}

// current returns the routing snapshot, waiting for the first discovery.
func (c *Client) current(ctx context.Context) (*snapshot, error) {
	snap := c.topo.load()
	for snap.master == nil {
		if c.ctx.Err() != nil {
			return nil, ErrClosed
		}
		select {
		case <-snap.superseded:
			snap = c.topo.load()
		case <-c.topo.requestResolve():
			next := c.topo.load()
			if next.master == nil {
				return nil, c.noMasterError(nil)
			}
			snap = next
		case <-ctx.Done():
			return nil, c.noMasterError(ctx.Err())
		case <-c.ctx.Done():
			return nil, ErrClosed
		}
	}
	return snap, nil
}

// noMasterError explains why no master is known: the last discovery
// round's attempts, when there was one.
func (c *Client) noMasterError(cause error) error {
	if last := c.topo.lastFailure.Load(); last != nil {
		return &DiscoveryError{MasterName: last.MasterName, Primary: last.Primary, Attempts: last.Attempts, Monitored: last.Monitored, Cause: cause}
	}
	return &DiscoveryError{MasterName: c.opts.MasterName, Primary: c.opts.Primary, Cause: cause}
}

// writableSnapshot returns a snapshot whose master may take writes: while
// writes are held (a failover under way, or the master cut off from the
// sentinels), it waits for that to end, up to FailoverHold.
func (c *Client) writableSnapshot(ctx context.Context) (*snapshot, error) {
	snap, err := c.current(ctx)
	if err != nil || !snap.held() {
		return snap, err
	}
	c.stats.writesHeld.Add(1)
	began := time.Now()
	timer := time.NewTimer(c.opts.FailoverHold)
	defer timer.Stop()
	for snap.held() {
		select {
		case <-snap.superseded:
			snap = c.topo.load()
		case <-timer.C:
			return nil, c.heldError(snap, began, nil)
		case <-ctx.Done():
			return nil, c.heldError(snap, began, ctx.Err())
		case <-c.ctx.Done():
			return nil, ErrClosed
		}
	}
	return snap, nil
}

// heldError is the error of a write that waited while writes were held.
func (c *Client) heldError(snap *snapshot, began time.Time, cause error) *WriteHeldError {
	e := &WriteHeldError{MasterName: c.errName(), Master: snap.masterAddr(), Candidate: snap.candidate,
		Waited: time.Since(began), Cause: cause}
	switch {
	case snap.failoverHeld && snap.candidate != "":
		e.Reason = "a failover to " + snap.candidate + " is under way"
	case snap.isolated != "":
		e.Reason = "the master is cut off: " + snap.isolated
	default:
		e.Reason = "a failover is under way"
	}
	return e
}

// resolveAfter returns a snapshot newer than seen: at once if the topology
// goroutine already moved on, else after a refresh that starts now (shared
// with concurrent callers). A refresh already running when the call failed
// is waited for first, so the wait is capped at one discovery: past that,
// the current snapshot is returned.
func (c *Client) resolveAfter(ctx context.Context, seen *snapshot) (*snapshot, error) {
	if cur := c.topo.load(); cur.gen != seen.gen {
		return cur, nil
	}
	limit := time.NewTimer(c.opts.DiscoveryTimeout + c.opts.ProbeTimeout)
	defer limit.Stop()
	select {
	case <-c.topo.requestResolve():
	case <-seen.superseded:
	case <-limit.C:
	case <-ctx.Done():
		return seen, ctx.Err()
	case <-c.ctx.Done():
		return seen, ErrClosed
	}
	return c.topo.load(), nil
}

// target picks the node for one call. Reads go where the selector says:
// a replica, or the master when it returns none, except under Replica,
// which never reads the master: the read waits for the selector's probe
// rounds while a replica is not probed yet, and then fails with a
// *NoReplicaError that says why each replica was not used. The client
// never substitutes a replica the selector did not hand out.
func (c *Client) target(ctx context.Context, snap *snapshot, readOnly bool, rf ReadFrom) (*node, func(), error) {
	if !readOnly || rf == Master {
		return snap.master, nil, nil
	}
	if n, done := c.pickReplica(snap, rf); n != nil {
		return n, done, nil
	}
	if rf != Replica {
		return snap.master, nil, nil
	}
	if ex, ok := c.selector.(replicaExplainer); ok && awaitingProbe(ex.Table()) {
		// No replica has been vetted yet (the first read starts the
		// prober; a replica that joins is probed at once): wait for the
		// rounds that vet them, within the caller's context and
		// ReadTimeout (what the read itself could have taken), or until
		// the client closes.
		wctx, cancel := context.WithTimeout(ctx, c.opts.ReadTimeout)
		defer cancel()
		stop := context.AfterFunc(c.ctx, cancel)
		defer stop()
		for ex.WaitRound(wctx, ex.Rounds()+1) == nil {
			if cur := c.topo.load(); cur.master != nil {
				snap = cur
			}
			if n, done := c.pickReplica(snap, rf); n != nil {
				return n, done, nil
			}
			if !awaitingProbe(ex.Table()) {
				break
			}
		}
	}
	return nil, nil, c.noReplica(snap)
}

// pickReplica asks the selector for a replica and returns its node in
// snap, or nil. The selector learns a topology just before the snapshot
// is installed, so a read holding the snapshot before that may be named a
// replica its snapshot does not have: that one is not used, and the
// selector is asked once more.
func (c *Client) pickReplica(snap *snapshot, rf ReadFrom) (*node, func()) {
	for range 2 {
		addr, done := c.selector.Pick(rf)
		if addr == "" {
			return nil, nil
		}
		if n := snap.replica(addr); n != nil {
			return n, done
		}
		if done != nil {
			done()
		}
	}
	return nil, nil
}

// replicaExplainer is implemented by selectors that probe the replicas
// and keep an RTT table (replica.Selector): a read under ReadFrom Replica
// that got no replica waits for a probe round while a replica is not
// probed yet, and its *NoReplicaError gives each replica's exclusion.
type replicaExplainer interface {
	Table() []replica.NodeStatus
	Rounds() uint64
	WaitRound(ctx context.Context, n uint64) error
}

// awaitingProbe: a replica in the table has not been probed yet.
func awaitingProbe(table []replica.NodeStatus) bool { return replica.AwaitingProbe(table) }

// noReplica is the error of a read under ReadFrom Replica that no replica
// may serve: each replica the client knows, and why the selector did not
// hand it out.
func (c *Client) noReplica(snap *snapshot) *NoReplicaError {
	var table []replica.NodeStatus
	if ex, ok := c.selector.(replicaExplainer); ok {
		table = ex.Table()
	}
	current := make([]string, len(snap.replicas))
	for i, n := range snap.replicas {
		current[i] = n.addr
	}
	return &NoReplicaError{MasterName: c.errName(), Master: snap.masterAddr(),
		Replicas: replica.ExplainUnused(table, current, replica.UnusedWhy{
			Gone:     "no longer among the healthy replicas Sentinel reports",
			Changing: "not handed out for this read: the election was changing",
			Untabled: "not handed out by the replica selector",
		})}
}

// process runs one command (the front client's process hook).
func (c *Client) process(ctx context.Context, cmd redis.Cmder) error {
	if sc, ok := routing.FindScan(cmd); ok {
		return c.scan(ctx, sc)
	}
	if c.classifier.ReadOnly(cmd) {
		return c.read(ctx, cmd, nil)
	}
	return c.write(ctx, cmd, nil)
}

// processPipeline runs a pipeline, or a transaction (wrapped in MULTI ...
// EXEC by go-redis), as a whole on one node.
func (c *Client) processPipeline(ctx context.Context, cmds []redis.Cmder) error {
	if scans := findScans(cmds); scans != nil {
		return c.scanPipeline(ctx, cmds, scans)
	}
	if routing.IsTx(cmds) {
		return c.write(ctx, nil, cmds)
	}
	if c.classifier.ReadOnlyPipeline(cmds) {
		return c.read(ctx, nil, cmds)
	}
	return c.write(ctx, nil, cmds)
}

// runOn sends the work to n and returns the error go-redis reports. Work
// marked internal (routing.Internal: a multidb client's health checks
// through this one) runs on n's control client, so the caller's hooks and
// the clients instrumented through OnNewNode see only the caller's work;
// Config.InternalHook sees it there.
func (c *Client) runOn(ctx context.Context, n *node, cmd redis.Cmder, cmds []redis.Cmder) error {
	n.acquire()
	defer n.release()
	if routing.IsInternal(ctx) {
		return routing.Run(ctx, n.ctl, cmd, cmds)
	}
	return c.send(ctx, n, cmd, cmds)
}

// runRead is runOn for a read, through n's cache when the call asks for
// it, and counted in n's Reads. A cache hit neither holds n (it uses none
// of its connections) nor counts as one of its reads (Stats().Cache.Hits
// counts it): both counters are cache lines that every core's hits would
// otherwise write, and take from each other (hits of 64 keys from 8
// goroutines on 2 cores, 2026-12-06: 3.2 M/s with both, 4.8 M/s with
// neither).
func (c *Client) runRead(ctx context.Context, n *node, cmd redis.Cmder, cmds []redis.Cmder) error {
	if ttl, ok := n.cache.Asked(ctx); ok && cmd != nil && !routing.IsInternal(ctx) {
		return n.cache.Do(cmd, ttl, func() error {
			n.counts.reads.Add(1)
			n.acquire()
			defer n.release()
			return c.send(ctx, n, cmd, nil)
		})
	}
	n.counts.reads.Add(1)
	return c.runOn(ctx, n, cmd, cmds)
}

// send is runOn's sending: auto-pipelined, or on the node's pool.
func (c *Client) send(ctx context.Context, n *node, cmd redis.Cmder, cmds []redis.Cmder) error {
	if cmd != nil && c.batched(ctx) {
		return n.batch.Do(ctx, cmd)
	}
	return routing.Run(ctx, n.client, cmd, cmds)
}

// batched reports whether a single command is auto-pipelined: with
// Config.AutoPipeline, or when it comes from one of the client's
// auto-pipeliners (AutoPipeline, AsyncAutoPipeline).
func (c *Client) batched(ctx context.Context) bool {
	return c.opts.AutoPipeline || routing.Batching(ctx)
}

// read runs read-only work where the read preference allows, and re-runs
// it once on the re-resolved target after a failure signal.
func (c *Client) read(ctx context.Context, cmd redis.Cmder, cmds []redis.Cmder) error {
	_, err := c.readOn(ctx, cmd, cmds)
	if err != nil && cmd != nil {
		// Every re-route tried: a cached read may fall back on its
		// entry (clientcache.Config.MaxStale).
		return c.topo.nodes.cache.FailOpen(ctx, cmd, err)
	}
	return err
}

// readOn is read, which also returns the node the last attempt ran on
// (nil when none ran).
func (c *Client) readOn(ctx context.Context, cmd redis.Cmder, cmds []redis.Cmder) (*node, error) {
	snap, err := c.current(ctx)
	if err != nil {
		return nil, err
	}
	rf := c.readFrom(ctx)
	n, done, err := c.target(ctx, snap, true, rf)
	if err != nil {
		return nil, err
	}
	err = c.runRead(ctx, n, cmd, cmds)
	if done != nil {
		done()
	}
	if err == nil || !c.failureSignal(ctx, cmd, cmds, err) {
		return n, c.nodeError(snap, n, false, cmd, cmds, err)
	}
	if failure.Timeout(err) {
		// The caller already waited its read timeout: check the topology
		// in the background and return now (a slow node is not re-run).
		c.topo.kick()
		return n, c.nodeError(snap, n, false, cmd, cmds, err)
	}
	next, rerr := c.resolveAfter(ctx, snap)
	if rerr != nil {
		return n, c.nodeError(snap, n, false, cmd, cmds, err)
	}
	n2, done2, terr := c.target(ctx, next, true, rf)
	if terr != nil {
		return n, c.nodeError(snap, n, false, cmd, cmds, err)
	}
	c.stats.readsRetried.Add(1)
	c.emit(Event{Kind: EventReadRetried, Master: n.addr, Err: err})
	routing.SetErrs(cmd, cmds, nil)
	err = c.runRead(ctx, n2, cmd, cmds)
	if done2 != nil {
		done2()
	}
	return n2, c.nodeError(next, n2, false, cmd, cmds, err)
}

// nodeError is the last step of every call that reached a node
// (failure.Seal): err, and the error of cmd or of each of cmds, returned
// as it is when it is the command's own answer (WRONGTYPE, redis.Nil, a
// script's error) or one of the package's errors, and otherwise (no
// connection, a connection lost, a timeout, the caller's context's end, a
// refusal such as READONLY) as a *NodeError on n saying whether the work
// may have executed.
func (c *Client) nodeError(snap *snapshot, n *node, write bool, cmd redis.Cmder, cmds []redis.Cmder, err error) error {
	return c.seal(snap, n, write, cmd, cmds, err, nil)
}

// seal is nodeError, with own the error a Watch function of the caller's
// returned (failure.Sealer.Own).
func (c *Client) seal(snap *snapshot, n *node, write bool, cmd redis.Cmder, cmds []redis.Cmder, err, own error) error {
	if failure.Answered(cmd, cmds, err) {
		return err // nothing to type, and no Sealer to allocate
	}
	return failure.Seal(cmd, cmds, err, failure.Sealer{Typed: c.typed, Own: own,
		Wrap: func(q redis.Cmder, err error, may bool) error {
			role := "replica"
			if n == snap.master {
				role = "master"
			}
			w := write
			if q != nil && cmd == nil && !routing.IsTx(cmds) {
				w = !c.classifier.ReadOnly(q)
			}
			return &NodeError{MasterName: c.errName(), Addr: n.addr, Role: role, Write: w, MayHaveExecuted: may, Err: err}
		}})
}

// write runs work that writes on the master, holding it while a failover
// is under way. After a failure signal it is re-run once on the new master
// only if it provably did not execute; otherwise a master change is
// reported as a *MasterChangedError.
func (c *Client) write(ctx context.Context, cmd redis.Cmder, cmds []redis.Cmder) error {
	cmd, cmds, once, err := c.exactlyOnce(ctx, cmd, cmds)
	if err != nil {
		return err
	}
	snap, err := c.writableSnapshot(ctx)
	if err != nil {
		return err
	}
	durable := c.durable(ctx)
	if once {
		return c.writeExactlyOnce(ctx, snap, cmd, cmds, durable)
	}
	err = c.writeOn(ctx, snap, cmd, cmds, durable)
	if err == nil || !c.failureSignal(ctx, cmd, cmds, err) {
		return c.nodeError(snap, snap.master, true, cmd, cmds, err)
	}
	if failure.Timeout(err) {
		// A timeout alone never re-runs a write, and the caller already
		// waited: check the topology in the background and return now.
		c.topo.kick()
		return c.nodeError(snap, snap.master, true, cmd, cmds, err)
	}
	notExecuted := c.provablyNotExecuted(cmd, cmds, err)
	if c.opts.Primary != "" {
		// A standalone primary is not replaced: a write it refused
		// unsent waits for it to answer again (a restart), within
		// FailoverHold and ctx, and is sent once more.
		if failure.Next(failure.Attempt{Write: true, NotExecuted: notExecuted, Again: true, Strict: c.opts.StrictWrites}) == failure.Rerun {
			if back := c.awaitPrimary(ctx, snap); back != nil {
				return c.rerunWrite(ctx, snap, back, cmd, cmds, durable, err)
			}
		} else {
			c.topo.kick() // is it still a master? The error stands meanwhile.
		}
		return c.nodeError(snap, snap.master, true, cmd, cmds, err)
	}
	next, rerr := c.resolveAfter(ctx, snap)
	if rerr == nil && next.held() {
		next, rerr = c.writableSnapshot(ctx)
	}
	if rerr != nil {
		return c.nodeError(snap, snap.master, true, cmd, cmds, err)
	}
	switch failure.Next(failure.Attempt{Write: true, NotExecuted: notExecuted, Moved: next.master != snap.master, Strict: c.opts.StrictWrites}) {
	case failure.Rerun:
		return c.rerunWrite(ctx, snap, next, cmd, cmds, durable, err)
	case failure.Fail:
		// No master change: the error stands, said of the master.
		return c.nodeError(snap, snap.master, true, cmd, cmds, err)
	}
	mce := &MasterChangedError{
		MasterName:      c.opts.MasterName,
		Sentinel:        next.sentinel,
		NewMaster:       next.master.addr,
		OldMaster:       snap.master.addr,
		MayHaveExecuted: !notExecuted,
		Cause:           err,
	}
	c.stats.writesRefused.Add(1)
	c.emit(Event{Kind: EventWriteRefused, Master: mce.NewMaster, OldMaster: mce.OldMaster, Sentinel: mce.Sentinel, Err: mce})
	routing.SetErrs(cmd, cmds, mce)
	return mce
}

// exactlyOnce returns the work to send for a write: cmd or cmds with
// their writes in exactly-once form when the client or the call asks for
// it (Config.ExactlyOnce, exactlyonce.With), and whether every write of
// the work is so (the work may then be sent again). Blocking commands and
// transactions stay as they are; a call that insists on a write that
// cannot be made exactly-once gets the *exactlyonce.UnsupportedError.
func (c *Client) exactlyOnce(ctx context.Context, cmd redis.Cmder, cmds []redis.Cmder) (redis.Cmder, []redis.Cmder, bool, error) {
	if cmd != nil {
		q, err := c.once.Wrap(ctx, cmd)
		return q, nil, err == nil && oncewrite.Is(q), err
	}
	out, all, err := c.once.WrapPipeline(ctx, cmds, routing.IsTx(cmds))
	return nil, out, all, err
}

// writeExactlyOnce is write for work whose every write is exactly-once:
// after a failure signal, whatever it says of what ran, or a durable
// write that ran and whose confirmation fell short, the work is sent again with the
// same tokens, to whichever master the client then finds (the same one
// too: a lost connection, a timeout of the server's), until it gets an
// answer (durable: confirmed), FailoverHold since the first failure ends,
// or ctx does (failure.Next; the package exactlyonce argues why it runs
// once). A write sent again that had run returns its stored reply, and
// WAIT then confirms what the master holds: the write with its token.
func (c *Client) writeExactlyOnce(ctx context.Context, snap *snapshot, cmd redis.Cmder, cmds []redis.Cmder, durable bool) error {
	var holdEnd time.Time
	for {
		err := c.writeOn(ctx, snap, cmd, cmds, durable)
		// A durable write that ran and was not confirmed is sent again
		// (one refused unsent is not: nothing ran, and its refusal is
		// the durable mode's answer).
		var nde *NotDurableError
		short := durable && errors.As(err, &nde) && !nde.NotSent
		if err == nil || !short && !c.failureSignal(ctx, cmd, cmds, err) || failure.CallerEnded(ctx) || c.closed.Load() {
			return c.nodeError(snap, snap.master, true, cmd, cmds, err)
		}
		now := time.Now()
		if holdEnd.IsZero() {
			holdEnd = now.Add(c.opts.FailoverHold)
		}
		if now.After(holdEnd) || failure.Next(failure.Attempt{Write: true, ExactlyOnce: true}) != failure.Rerun {
			return c.nodeError(snap, snap.master, true, cmd, cmds, err)
		}
		c.topo.kick()
		next, rerr := c.resolveAfter(ctx, snap)
		if rerr == nil && next.held() {
			next, rerr = c.writableSnapshot(ctx)
		}
		if rerr != nil {
			return c.nodeError(snap, snap.master, true, cmd, cmds, err)
		}
		if next.master == snap.master && !c.pause(ctx, rerunPause) {
			return c.nodeError(snap, snap.master, true, cmd, cmds, err)
		}
		c.stats.writesRerun.Add(1)
		c.emit(Event{Kind: EventWriteRerun, Master: next.master.addr, OldMaster: snap.master.addr, Err: err})
		routing.SetErrs(cmd, cmds, nil)
		snap = next
	}
}

// pause waits d: before a write is sent again to the master it failed
// on (a stall, a lost connection, a primary refusing connections: not in
// a spin); false when ctx or the client ended meanwhile.
func (c *Client) pause(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	case <-c.ctx.Done():
		return false
	}
}

// rerunPause is the pause before a write is sent again to the master it
// failed on: long enough not to spin on a refusing server, short beside a
// failover.
const rerunPause = 50 * time.Millisecond

// rerunWrite sends a write that provably did not run on snap's master
// again, on next's.
func (c *Client) rerunWrite(ctx context.Context, snap, next *snapshot, cmd redis.Cmder, cmds []redis.Cmder, durable bool, cause error) error {
	c.stats.writesRerun.Add(1)
	c.emit(Event{Kind: EventWriteRerun, Master: next.master.addr, OldMaster: snap.master.addr, Err: cause})
	routing.SetErrs(cmd, cmds, nil)
	err := c.writeOn(ctx, next, cmd, cmds, durable)
	return c.nodeError(next, next.master, true, cmd, cmds, err)
}

// awaitPrimary waits, within FailoverHold and ctx, for a refresh to find
// the standalone primary answering as a master again, and returns the
// snapshot to write on then (nil: it did not come back in time).
func (c *Client) awaitPrimary(ctx context.Context, snap *snapshot) *snapshot {
	deadline := time.Now().Add(c.opts.FailoverHold)
	for time.Now().Before(deadline) {
		next, err := c.resolveAfter(ctx, snap)
		if err != nil {
			return nil
		}
		if c.topo.lastFailure.Load() == nil && next.master != nil {
			return next
		}
		snap = next
		// A refresh that failed at once (the primary refuses
		// connections) is asked again after a pause, not in a spin.
		if !c.pause(ctx, rerunPause) {
			return nil
		}
	}
	return nil
}

// writeOn runs writing work on the snapshot's master, and with durable
// confirms it with WAIT on the same connection.
func (c *Client) writeOn(ctx context.Context, snap *snapshot, cmd redis.Cmder, cmds []redis.Cmder, durable bool) error {
	snap.master.counts.writes.Add(1)
	// The client's own writes end its entries of their keys (read your
	// writes), once run.
	defer snap.master.cache.Wrote(cmd, cmds)
	if cmd != nil && c.classifier.Blocking(cmd) {
		return c.runBlocking(ctx, snap, cmd, durable)
	}
	if c.once == nil {
		return c.sendWrite(ctx, snap, cmd, cmds, durable)
	}
	n := snap.master
	return n.script.Send(ctx, c.once, n.addr, n.ctl, cmd, cmds, func() error {
		return c.sendWrite(ctx, snap, cmd, cmds, durable)
	})
}

// sendWrite is writeOn's sending, durable or not.
func (c *Client) sendWrite(ctx context.Context, snap *snapshot, cmd redis.Cmder, cmds []redis.Cmder, durable bool) error {
	if !durable {
		return c.runOn(ctx, snap.master, cmd, cmds)
	}
	return c.durableWrite(ctx, snap, cmd, cmds)
}

// errName is the MasterName an error carries: the Sentinel master's name,
// or "" for a standalone primary (Config.Primary), whose normalized
// MasterName is only its address, so its errors speak of "the primary
// <addr>" and never of a Sentinel master the caller does not have.
func (c *Client) errName() string {
	if c.opts.Primary != "" {
		return ""
	}
	return c.opts.MasterName
}
