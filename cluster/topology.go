package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/cachestore"
	"github.com/rediskit/rediskit/internal/eventq"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/isolation"
	"github.com/rediskit/rediskit/internal/logdedup"
	"github.com/rediskit/rediskit/internal/oncewrite"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
	"github.com/rediskit/rediskit/replica"
)

// node is one cluster node's clients and its auto-pipelining Batcher.
type node struct {
	addr   string
	id     uint64        // 1, 2, ... in the order the client met the nodes: SCAN cursors carry it
	client *redis.Client // the callers' commands
	// ctl reads the slot map: its own small pool, so that callers who
	// hold every connection of client do not hold up the refresh that
	// finds a failover, and its replies bounded (respguard), as the
	// callers' are not (a LRANGE may rightly return millions of elements).
	ctl   *redis.Client
	batch *routing.Batcher
	// reads and writes count the commands sent to the node.
	reads, writes atomic.Uint64
	// rd is the client of the reads sent to the node as a replica
	// (READONLY connections; see readfrom.go), nil until the first.
	rd atomic.Pointer[reader]
	// cache is the node's part of the client-side cache (Config.Cache),
	// or nil: one tracker a node, whether it is read as a master or as a
	// replica.
	cache *cachestore.NodeCache
	// script is whether the node holds the exactly-once script and lets
	// the client run it (Config.ExactlyOnce).
	script oncewrite.Node
}

// count counts a command sent to the node.
func (n *node) count(write bool) {
	if write {
		n.writes.Add(1)
	} else {
		n.reads.Add(1)
	}
}

// ctlPoolSize is the connections of a node's ctl client: one refresh at a
// time reads from it, one more lets a refresh start while the last one's
// straggling call ends, and one is the split-brain poll's (splitbrain.go).
const ctlPoolSize = 3

// shard is a master and its replicas as a snapshot has them.
type shard struct {
	id       string // the master's node ID
	master   *node
	replicas []*node // the healthy ones: not failed, not loading
	// offsets are the replication offsets CLUSTER SHARDS reported for the
	// master and its replicas (absent: not reported).
	offsets map[*node]int64
	// sel elects the replicas the shard's reads go to (nil: the master's
	// alone, in a shard a MOVED made before the refresh that reads it).
	sel *replica.Selector
}

// snapshot is the immutable slot map calls are routed on. A new one
// replaces it whole; next is closed then, so a call waiting for a change
// (a held write) wakes.
type snapshot struct {
	slots   [Slots]*shard // nil: no master serves the slot
	masters []*shard      // in address order
	// suspect are masters the client saw fail (a dial failure, a lost
	// connection, a timeout) that the cluster has not replaced yet: their
	// shards' writes are held.
	suspect map[*node]bool
	// isolated are masters cut off (or suspected cut off) from their
	// replicas and the majority, with why: their shards' writes are held
	// (splitbrain.go).
	isolated map[*node]string
	ready    bool  // a map was read
	err      error // the last refresh's failure, while not ready
	next     chan struct{}
}

// holds reports whether writes to the master n are held: it is failing,
// or cut off from its replicas and the majority.
func (s *snapshot) holds(n *node) bool {
	return s.suspect[n] || len(s.isolated) > 0 && s.isolated[n] != ""
}

func (s *snapshot) master(slot int) *node {
	if slot < 0 {
		if len(s.masters) == 0 {
			return nil
		}
		return s.masters[0].master
	}
	if sh := s.slots[slot]; sh != nil {
		return sh.master
	}
	return nil
}

// nodeSet holds the node clients, made on first use (a MOVED may name a
// node the map does not have yet) and closed with the client.
type nodeSet struct {
	opts   *Config
	mu     sync.Mutex
	live   map[string]*node
	byID   []*node // by id - 1
	closed bool
	// clients are the clients of the caller's work, for OnNewNode and
	// AddHook (hooks.go).
	clients callerClients
	// wire counts the batches the nodes' Batchers (masters' and
	// readers') have on the wire.
	wire routing.WireCount
	// blocking tells the Batchers the commands they must not batch (the
	// client's classifier's Blocking).
	blocking func(redis.Cmder) bool
	// cache is the client-side cache (Config.Cache), or nil.
	cache *cachestore.Cache
}

// maxNodes bounds the node clients a client makes: a cluster has at most
// a few hundred nodes, and a server naming ever new addresses (in MOVED,
// ASK or CLUSTER NODES) must not make the client allocate without bound.
const maxNodes = 1000

// get returns the client of addr, made on first use; nil when maxNodes
// clients exist already.
func (ns *nodeSet) get(addr string) *node {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if n, ok := ns.live[addr]; ok {
		return n
	}
	if len(ns.live) >= maxNodes {
		return nil
	}
	ctl := ns.opts.controlOptions(addr)
	ctl.PoolSize, ctl.MinIdleConns, ctl.MaxIdleConns = ctlPoolSize, 0, ctlPoolSize
	n := &node{addr: addr, id: uint64(len(ns.byID) + 1),
		client: ns.clients.made(redis.NewClient(ns.opts.nodeOptions(addr))), ctl: redis.NewClient(ctl)}
	n.batch = routing.NewBatcher(n.client, routing.BatchConfig{MaxBatch: ns.opts.AutoPipelineMaxBatch, MaxInflight: ns.opts.AutoPipelineInflight,
		Confirm: ns.opts.confirmCmds, Wire: &ns.wire, Blocking: ns.blocking}) // Confirm: durable writes' WAIT (durable.go)
	if ns.closed {
		_ = n.client.Close() // calls on it fail with redis.ErrClosed
		_ = n.ctl.Close()
	} else if ns.cache != nil {
		// Its tracker connects in the background: nothing here waits on
		// the network.
		n.cache = ns.cache.Track(ns.opts.nodeOptions(addr))
	}
	ns.live[addr] = n
	ns.byID = append(ns.byID, n)
	return n
}

// byNumber returns the node numbered id, nil when there is none.
func (ns *nodeSet) byNumber(id uint64) *node {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	if id == 0 || id > uint64(len(ns.byID)) {
		return nil
	}
	return ns.byID[id-1]
}

func (ns *nodeSet) all() []*node {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	out := make([]*node, 0, len(ns.live))
	for _, n := range ns.live {
		out = append(out, n)
	}
	slices.SortFunc(out, func(a, b *node) int { return compareStrings(a.addr, b.addr) })
	return out
}

func (ns *nodeSet) close() error {
	ns.mu.Lock()
	defer ns.mu.Unlock()
	ns.closed = true
	var errs []error
	for _, n := range ns.live {
		errs = append(errs, n.client.Close(), n.ctl.Close())
		if r := n.rd.Swap(nil); r != nil {
			r.close()
		}
		if n.cache != nil {
			n.cache.Close()
		}
	}
	if ns.cache != nil {
		ns.cache.Close()
	}
	return errors.Join(errs...)
}

func compareStrings(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// topology owns the slot map: one goroutine (run) changes it, and
// publishes snapshots; it never touches the network: a worker reads
// CLUSTER NODES from the nodes and posts the replies back.
type topology struct {
	opts  *Config
	nodes *nodeSet
	log   *slog.Logger
	snap  atomic.Pointer[snapshot]

	// ctx ends the fetches in flight when the client closes.
	ctx    context.Context
	cancel context.CancelFunc

	kickCh   chan RefreshCause
	failCh   chan failedNode
	movedCh  chan moved
	resultCh chan refreshResult
	stop     chan struct{}
	wg       sync.WaitGroup

	// events delivers to Config.Observer (nil without one).
	events *eventq.Queue[Event]
	// selectors are the shards' replica selectors (readfrom.go), owned
	// by run.
	selectors *shardSelectors

	// Owned by run: the owners of the last refreshed map (nil before the
	// first), which the next one is compared with for events, and when
	// each suspect master was first seen failing.
	lastOwners   *[Slots]*node
	suspectSince map[*node]time.Time
	// splitBrain is the split-brain poll's state (splitbrain.go), owned
	// by run; its rounds post to splitBrainCh.
	splitBrain   splitBrainState
	splitBrainCh chan []splitBrainSample

	refreshes                   [numRefreshCauses]atomic.Uint64
	masterChanges, slotsMoved   atomic.Uint64
	refreshFailures, recoveries atomic.Uint64
	splitBrainHolds             atomic.Uint64
}

type failedNode struct {
	n   *node
	err error
}

type moved struct {
	slot int
	addr string
}

type refreshResult struct {
	views    [][]nodeLine
	answered map[*node]bool
	err      error
}

func newTopology(opts *Config, nodes *nodeSet) *topology {
	t := &topology{opts: opts, nodes: nodes, log: logdedup.Logger(opts.Logger),
		kickCh: make(chan RefreshCause, 1), failCh: make(chan failedNode, 16), movedCh: make(chan moved, 64),
		resultCh: make(chan refreshResult, 1), stop: make(chan struct{}), suspectSince: map[*node]time.Time{},
		splitBrainCh: make(chan []splitBrainSample, 1), splitBrain: splitBrainState{shards: map[*node]*splitBrainShard{}, rtt: isolation.RTT{}}}
	t.events = eventq.New(eventq.Config[Event]{Deliver: opts.Observer, Logger: opts.Logger, Name: "cluster"})
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.selectors = newShardSelectors(opts, nodes, &t.wg)
	t.snap.Store(&snapshot{next: make(chan struct{}), suspect: map[*node]bool{}, isolated: map[*node]string{}})
	for _, a := range opts.Addrs {
		nodes.get(a)
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		if err := safe.Call(t.run); err != nil {
			t.log.Error("cluster: topology goroutine panicked", "err", err)
		}
	}()
	return t
}

func (t *topology) close() {
	close(t.stop)
	t.cancel()
	t.wg.Wait()
	t.selectors.close() // after the owner goroutine: nothing assigns any more
	t.events.Close()    // after the owner goroutine: nothing emits any more
}

// kick asks for a refresh now, for cause.
func (t *topology) kick(cause RefreshCause) {
	select {
	case t.kickCh <- cause:
	default: // one is asked for already
	}
}

// failed reports a node that did not answer (err).
func (t *topology) failed(n *node, err error) {
	select {
	case t.failCh <- failedNode{n, err}:
	default:
		t.kick(RefreshNodeFailed)
	}
}

// moved reports a MOVED reply: the slot is served at addr.
func (t *topology) moved(slot int, addr string) {
	select {
	case t.movedCh <- moved{slot, addr}:
	default:
		t.kick(RefreshMoved)
	}
}

func (t *topology) run() {
	inflight := false
	// again is a cause asked for while a refresh was in flight: that
	// refresh may have read the nodes before what prompted it (a MOVED, a
	// failure), so another follows it.
	again := RefreshCause(-1)
	var lastStart time.Time
	refresh := func(cause RefreshCause) {
		if cause == RefreshRefused && time.Since(lastStart) < t.opts.FailoverPollInterval {
			// Refusals (TRYAGAIN, CLUSTERDOWN while another shard fails
			// over) come from every retrying call: at most one read of
			// the map per poll interval for them.
			return
		}
		if inflight {
			again = cause
			return
		}
		inflight, lastStart = true, time.Now()
		t.refreshes[cause].Add(1)
		nodes := t.nodes.all()
		t.wg.Add(1)
		go func() {
			defer t.wg.Done()
			var r refreshResult
			if err := safe.Call(func() { r = t.fetch(nodes) }); err != nil {
				r = refreshResult{err: err}
			}
			select {
			case t.resultCh <- r:
			case <-t.stop:
			}
		}()
	}
	refresh(RefreshStart)
	timer := time.NewTimer(t.opts.RefreshInterval)
	defer timer.Stop()
	var splitBrainTick <-chan time.Time // nil: the split-brain poll is off
	if t.opts.SplitBrainPollInterval > 0 {
		tk := time.NewTicker(t.opts.SplitBrainPollInterval)
		defer tk.Stop()
		splitBrainTick = tk.C
	}
	for {
		select {
		case <-t.stop:
			return
		case <-splitBrainTick:
			t.startSplitBrainPoll()
			continue // the refresh timer keeps its schedule
		case samples := <-t.splitBrainCh:
			t.applySplitBrain(samples)
			continue
		case cause := <-t.kickCh:
			refresh(cause)
		case <-timer.C:
			if len(t.snap.Load().suspect) > 0 {
				refresh(RefreshFailoverPoll)
			} else {
				refresh(RefreshPeriodic)
			}
		case f := <-t.failCh:
			t.onFailed(f)
			refresh(RefreshNodeFailed)
		case m := <-t.movedCh:
			t.onMoved(m)
			refresh(RefreshMoved)
		case r := <-t.resultCh:
			inflight = false
			t.apply(r)
			if again >= 0 {
				refresh(again)
				again = -1
			}
		}
		wait := t.opts.RefreshInterval
		if len(t.snap.Load().suspect) > 0 {
			wait = t.opts.FailoverPollInterval
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(wait)
	}
}

// onFailed marks a master that did not answer as failing: its writes are
// held.
func (t *topology) onFailed(f failedNode) {
	cur := t.snap.Load()
	n := f.n
	if cur.suspect[n] || !slices.ContainsFunc(cur.masters, func(s *shard) bool { return s.master == n }) {
		return
	}
	t.publish(cur.with(func(s *snapshot) { s.suspect[n] = true }))
	t.suspectSince[n] = time.Now()
	t.log.Warn("cluster: master failing; holding its writes until the cluster names another", "addr", n.addr, "err", f.err)
	t.emit(Event{Kind: EventMasterFailing, Master: n.addr, Slot: -1, Err: f.err})
}

// onMoved points a slot at the master a MOVED named, before the refresh
// that follows confirms the whole map.
func (t *topology) onMoved(m moved) {
	cur := t.snap.Load()
	target := t.nodes.get(m.addr)
	if target != nil && (cur.slots[m.slot] == nil || cur.slots[m.slot].master != target) {
		t.publish(cur.with(func(s *snapshot) { s.move(m.slot, target) }))
	}
}

// fetchStragglers is how long a refresh waits for the nodes still silent
// once one has answered: a black-holed node (a stalled master) must not
// hold the refresh that finds its replacement for its whole timeout.
const fetchStragglers = 200 * time.Millisecond

// fetch reads the map from every node at once, each bounded by the dial
// and read timeouts, and returns once all have answered, or
// fetchStragglers after the first answer. The calls still running finish
// on their own (counted in t.wg, ended by Close).
func (t *topology) fetch(nodes []*node) refreshResult {
	timeout := t.opts.DialTimeout + t.opts.ReadTimeout
	type reply struct {
		n     *node
		lines []nodeLine
		err   error
	}
	replies := make(chan reply, len(nodes))
	for _, n := range nodes {
		safe.Go(&t.wg, func(err error) { replies <- reply{n: n, err: err} }, func() {
			ctx, cancel := context.WithTimeout(t.ctx, timeout)
			defer cancel()
			lines, err := readMap(ctx, n.ctl, t.opts.TLSConfig != nil)
			replies <- reply{n, lines, err}
		})
	}
	r := refreshResult{answered: map[*node]bool{}}
	var errs []error
	overall := time.NewTimer(timeout)
	defer overall.Stop()
	var straggle <-chan time.Time
	for range nodes {
		var rep reply
		select {
		case rep = <-replies:
		case <-straggle:
		case <-overall.C:
		case <-t.ctx.Done():
		}
		if rep.n == nil {
			break // the wait is over
		}
		if rep.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", rep.n.addr, rep.err))
			continue
		}
		if len(rep.lines) > 0 {
			r.views = append(r.views, rep.lines)
			r.answered[rep.n] = true
			if straggle == nil {
				straggle = time.After(fetchStragglers)
			}
		}
	}
	if len(r.views) == 0 {
		r.err = errors.Join(errs...)
		if r.err == nil {
			r.err = errors.New("no node answered CLUSTER SHARDS, NODES or SLOTS in time")
		}
	}
	return r
}

// readMap reads one node's view of the cluster in one round trip: CLUSTER
// NODES for the slots, roles and config epochs (the epochs settle two
// nodes' disagreement; neither CLUSTER SHARDS nor CLUSTER SLOTS has them),
// with CLUSTER SHARDS for each node's health and replication offset. A
// server that refuses CLUSTER NODES is read from CLUSTER SHARDS alone (no
// epochs), one that refuses both (before Redis 7, and without CLUSTER
// NODES) from CLUSTER SLOTS.
func readMap(ctx context.Context, c *redis.Client, tls bool) ([]nodeLine, error) {
	var shards *redis.ClusterShardsCmd
	var nodes *redis.StringCmd
	_, _ = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		shards = p.ClusterShards(ctx)
		nodes = p.ClusterNodes(ctx)
		return nil
	})
	nerr, serr := nodes.Err(), shards.Err()
	switch {
	case nerr == nil:
		lines := parseNodes(nodes.Val())
		if serr == nil {
			annotate(lines, shards.Val())
		}
		return lines, nil
	case !failure.Reply(nerr):
		return nil, nerr // no answer
	case serr == nil:
		return fromShards(shards.Val(), tls), nil
	}
	slots, err := c.ClusterSlots(ctx).Result() //nolint:staticcheck // the fallback for servers without CLUSTER SHARDS
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES: %w; CLUSTER SHARDS: %w; CLUSTER SLOTS: %w", nerr, serr, err)
	}
	return fromSlots(slots), nil
}

// apply builds and publishes the snapshot of a refresh.
func (t *topology) apply(r refreshResult) {
	cur := t.snap.Load()
	if r.err != nil {
		if !cur.ready {
			t.publish(cur.with(func(s *snapshot) { s.err = r.err }))
		}
		t.refreshFailures.Add(1)
		t.log.Warn("cluster: refresh failed", "err", r.err)
		t.emit(Event{Kind: EventRefreshFailed, Slot: -1, Err: r.err})
		return
	}
	next := t.build(mergeViews(r.views))
	// A suspect master stays suspect while it still serves its slots and
	// did not answer this refresh.
	isMaster := make(map[*node]bool, len(next.masters))
	for _, sh := range next.masters {
		isMaster[sh.master] = true
	}
	for n := range cur.suspect {
		switch {
		case !isMaster[n]:
			delete(t.suspectSince, n) // replaced: EventMasterChanged says so
		case !r.answered[n]:
			next.suspect[n] = true
		default:
			t.recoveries.Add(1)
			held := time.Since(t.suspectSince[n])
			delete(t.suspectSince, n)
			t.log.Info("cluster: failing master answers again; its writes resume", "addr", n.addr, "held", held)
			t.emit(Event{Kind: EventMasterRecovered, Master: n.addr, Slot: -1, Duration: held})
		}
	}
	// A master cut off stays held while it still serves its slots; the
	// split-brain poll ends the hold.
	for n, why := range cur.isolated {
		if isMaster[n] {
			next.isolated[n] = why
		}
	}
	t.reportMoves(next, isMaster)
	t.selectors.assign(next)
	t.publish(next)
}

// reportMoves emits and logs how the slots moved since the last refreshed
// map, and remembers next's owners for the next comparison.
func (t *topology) reportMoves(next *snapshot, isMaster map[*node]bool) {
	var owners [Slots]*node
	for s, sh := range &next.slots {
		if sh != nil {
			owners[s] = sh.master
		}
	}
	for _, ev := range mapChanges(t.lastOwners, &owners, isMaster) {
		if ev.Kind == EventMasterChanged {
			t.masterChanges.Add(1)
			t.log.Info("cluster: master changed", "old", ev.OldMaster, "new", ev.Master, "slots", ev.Slots)
		} else {
			t.slotsMoved.Add(1)
			t.log.Info("cluster: slots moved", "from", ev.OldMaster, "to", ev.Master, "slots", ev.Slots)
		}
		t.emit(ev)
	}
	if t.lastOwners == nil {
		t.log.Info("cluster: slot map read", "masters", len(next.masters))
	}
	t.lastOwners = &owners
}

// build makes the snapshot of a merged map: a shard per master, with its
// healthy replicas and their offsets, the masters in address order.
func (t *topology) build(m slotMap) *snapshot {
	next := &snapshot{ready: true, suspect: map[*node]bool{}, isolated: map[*node]string{}, next: make(chan struct{})}
	shards := map[string]*shard{}
	for s := range Slots {
		id := m.owner[s]
		if id == "" {
			continue
		}
		sh := shards[id]
		if sh == nil {
			master := t.nodes.get(m.addr[id])
			if master == nil {
				continue // past maxNodes: the slot stays unserved
			}
			sh = &shard{id: id, master: master, offsets: map[*node]int64{}}
			if off, ok := m.offset[id]; ok {
				sh.offsets[master] = off
			}
			for _, rid := range m.replicas[id] {
				if r := t.nodes.get(m.addr[rid]); r != nil {
					sh.replicas = append(sh.replicas, r)
					if off, ok := m.offset[rid]; ok {
						sh.offsets[r] = off
					}
				}
			}
			shards[id] = sh
			next.masters = append(next.masters, sh)
		}
		next.slots[s] = sh
	}
	slices.SortFunc(next.masters, func(a, b *shard) int { return compareStrings(a.master.addr, b.master.addr) })
	return next
}

// with returns a copy of s changed by f (s itself is never changed).
func (s *snapshot) with(f func(*snapshot)) *snapshot {
	c := *s
	c.suspect = maps.Clone(s.suspect)
	c.isolated = maps.Clone(s.isolated)
	if c.suspect == nil {
		c.suspect = map[*node]bool{}
	}
	if c.isolated == nil {
		c.isolated = map[*node]string{}
	}
	c.masters = slices.Clone(s.masters)
	c.next = make(chan struct{})
	f(&c)
	return &c
}

// move gives slot to target's shard (a shard of its own if the map has
// none yet for it).
func (s *snapshot) move(slot int, target *node) {
	var sh *shard
	for _, m := range s.masters {
		if m.master == target {
			sh = m
		}
	}
	if sh == nil {
		sh = &shard{master: target}
		s.masters = append(s.masters, sh)
	}
	s.slots[slot] = sh
	s.ready = true
}

func (t *topology) publish(next *snapshot) {
	prev := t.snap.Swap(next)
	close(prev.next)
	if t.nodes.cache != nil {
		for n := range lostSlots(prev, next) {
			n.cache.Flush()
		}
	}
}

// lostSlots are the nodes that served a slot in prev, as its master or as
// one of its replicas, and no longer do in next (the slot migrated, the
// shard failed over, the replica left): their cached entries may be of
// keys another node now answers for, so the client stops serving them (a
// cache hit never meets the MOVED that would have said so).
func lostSlots(prev, next *snapshot) map[*node]bool {
	lost := map[*node]bool{}
	for slot, p := range &prev.slots {
		if p == nil {
			continue
		}
		n := next.slots[slot]
		if n == nil || n.master != p.master {
			lost[p.master] = true
		}
		for _, r := range p.replicas {
			if n == nil || (n.master != r && !slices.Contains(n.replicas, r)) {
				lost[r] = true
			}
		}
	}
	return lost
}

// ready returns the first snapshot with a map, waiting for it within ctx.
func (t *topology) ready(ctx context.Context) (*snapshot, error) {
	for {
		s := t.snap.Load()
		if s.ready {
			return s, nil
		}
		select {
		case <-s.next:
		case <-ctx.Done():
			if s.err != nil {
				return nil, errors.Join(ctx.Err(), s.err)
			}
			return nil, ctx.Err()
		case <-t.stop:
			return nil, ErrClosed
		}
	}
}
