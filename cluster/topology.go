package cluster

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

	"github.com/rediskit/rediskit/internal/logdedup"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
)

// node is one cluster node's client, and its auto-pipelining Batcher.
type node struct {
	addr   string
	client *redis.Client
	batch  *routing.Batcher
}

// shard is a master and its replicas as a snapshot has them.
type shard struct {
	id       string // the master's node ID
	master   *node
	replicas []*node
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
	ready   bool  // a map was read
	err     error // the last refresh's failure, while not ready
	next    chan struct{}
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
	opts   *Options
	mu     sync.Mutex
	live   map[string]*node
	closed bool
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
	n := &node{addr: addr, client: redis.NewClient(ns.opts.nodeOptions(addr))}
	n.batch = routing.NewBatcher(n.client, routing.BatchConfig{MaxBatch: ns.opts.AutoPipelineMaxBatch, MaxInflight: ns.opts.AutoPipelineInflight})
	if ns.closed {
		_ = n.client.Close() // calls on it fail with redis.ErrClosed
	}
	ns.live[addr] = n
	return n
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
		errs = append(errs, n.client.Close())
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
	opts  *Options
	nodes *nodeSet
	log   *slog.Logger
	snap  atomic.Pointer[snapshot]

	// ctx ends the fetches in flight when the client closes.
	ctx    context.Context
	cancel context.CancelFunc

	kickCh   chan struct{}
	failCh   chan *node
	movedCh  chan moved
	resultCh chan refreshResult
	stop     chan struct{}
	wg       sync.WaitGroup

	refreshes atomic.Uint64
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

func newTopology(opts *Options, nodes *nodeSet) *topology {
	t := &topology{opts: opts, nodes: nodes, log: logdedup.Logger(opts.Logger),
		kickCh: make(chan struct{}, 1), failCh: make(chan *node, 16), movedCh: make(chan moved, 64),
		resultCh: make(chan refreshResult, 1), stop: make(chan struct{})}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	t.snap.Store(&snapshot{next: make(chan struct{}), suspect: map[*node]bool{}})
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
}

// kick asks for a refresh now.
func (t *topology) kick() {
	select {
	case t.kickCh <- struct{}{}:
	default:
	}
}

// failed reports a master that did not answer.
func (t *topology) failed(n *node) {
	select {
	case t.failCh <- n:
	default:
		t.kick()
	}
}

// moved reports a MOVED reply: the slot is served at addr.
func (t *topology) moved(slot int, addr string) {
	select {
	case t.movedCh <- moved{slot, addr}:
	default:
		t.kick()
	}
}

func (t *topology) run() {
	inflight := false
	refresh := func() {
		if inflight {
			return
		}
		inflight = true
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
	refresh()
	timer := time.NewTimer(t.opts.RefreshInterval)
	defer timer.Stop()
	for {
		select {
		case <-t.stop:
			return
		case <-t.kickCh:
			refresh()
		case <-timer.C:
			refresh()
		case n := <-t.failCh:
			cur := t.snap.Load()
			if !cur.suspect[n] && slices.ContainsFunc(cur.masters, func(s *shard) bool { return s.master == n }) {
				next := cur.with(func(s *snapshot) { s.suspect[n] = true })
				t.publish(next)
				t.log.Warn("cluster: master failing; holding its writes until the cluster names another", "addr", n.addr)
			}
			refresh()
		case m := <-t.movedCh:
			cur := t.snap.Load()
			target := t.nodes.get(m.addr)
			if target != nil && (cur.slots[m.slot] == nil || cur.slots[m.slot].master != target) {
				t.publish(cur.with(func(s *snapshot) { s.move(m.slot, target) }))
			}
			refresh()
		case r := <-t.resultCh:
			inflight = false
			t.refreshes.Add(1)
			t.apply(r)
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

// fetchStragglers is how long a refresh waits for the nodes still silent
// once one has answered: a black-holed node (a stalled master) must not
// hold the refresh that finds its replacement for its whole timeout.
const fetchStragglers = 200 * time.Millisecond

// fetch reads CLUSTER NODES from every node at once, each bounded by the
// dial and read timeouts, and returns once all have answered, or
// fetchStragglers after the first answer. The calls still running finish
// on their own (counted in t.wg, ended by Close).
func (t *topology) fetch(nodes []*node) refreshResult {
	timeout := t.opts.DialTimeout + t.opts.ReadTimeout
	type reply struct {
		n    *node
		text string
		err  error
	}
	replies := make(chan reply, len(nodes))
	for _, n := range nodes {
		safe.Go(&t.wg, func(err error) { replies <- reply{n: n, err: err} }, func() {
			ctx, cancel := context.WithTimeout(t.ctx, timeout)
			defer cancel()
			text, err := n.client.ClusterNodes(ctx).Result()
			replies <- reply{n, text, err}
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
		if v := parseNodes(rep.text); len(v) > 0 {
			r.views = append(r.views, v)
			r.answered[rep.n] = true
			if straggle == nil {
				straggle = time.After(fetchStragglers)
			}
		}
	}
	if len(r.views) == 0 {
		r.err = errors.Join(errs...)
		if r.err == nil {
			r.err = errors.New("no node answered CLUSTER NODES in time")
		}
	}
	return r
}

// apply builds and publishes the snapshot of a refresh.
func (t *topology) apply(r refreshResult) {
	cur := t.snap.Load()
	if r.err != nil {
		if !cur.ready {
			t.publish(cur.with(func(s *snapshot) { s.err = r.err }))
		}
		t.log.Warn("cluster: refresh failed", "err", r.err)
		return
	}
	m := mergeViews(r.views)
	next := &snapshot{ready: true, suspect: map[*node]bool{}, next: make(chan struct{})}
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
			sh = &shard{id: id, master: master}
			for _, ra := range m.replicas[id] {
				if r := t.nodes.get(ra); r != nil {
					sh.replicas = append(sh.replicas, r)
				}
			}
			shards[id] = sh
			next.masters = append(next.masters, sh)
		}
		next.slots[s] = sh
	}
	slices.SortFunc(next.masters, func(a, b *shard) int { return compareStrings(a.master.addr, b.master.addr) })
	// A suspect master stays suspect while it still serves its slots and
	// did not answer this refresh.
	for n := range cur.suspect {
		if !r.answered[n] && slices.ContainsFunc(next.masters, func(s *shard) bool { return s.master == n }) {
			next.suspect[n] = true
		}
	}
	t.publish(next)
}

// with returns a copy of s changed by f (s itself is never changed).
func (s *snapshot) with(f func(*snapshot)) *snapshot {
	c := *s
	c.suspect = make(map[*node]bool, len(s.suspect))
	for k, v := range s.suspect {
		c.suspect[k] = v
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
