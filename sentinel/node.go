package sentinel

import (
	"context"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/cachestore"
	"github.com/rediskit/rediskit/internal/oncewrite"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/routing"
)

// node is the go-redis client of one data node. A node that leaves the
// routing snapshot (a demoted master, a replica no longer healthy) is
// retired: it takes no new work, and its pool is closed once the calls
// still running on it return, so idle connections to the old node close
// at once and busy ones when released.
type node struct {
	addr   string
	client *redis.Client
	// ctl runs the client's own commands on the node (ROLE, the
	// replication probe): a small pool of its own, without the caller's
	// hooks, so the client's checks neither queue behind the caller's
	// traffic nor show up in it.
	ctl      *redis.Client
	counts   *nodeCounts // shared by every client of this address
	inflight atomic.Int64
	retired  atomic.Bool
	// batch auto-pipelines the single commands run on client, with
	// Config.AutoPipeline or from an auto-pipeliner (see batched).
	batch *routing.Batcher
	// aof is what the client last learned of the node's WAITAOF (see
	// aofReady); nil until a DurableAOF write asks.
	aof  atomic.Pointer[aofState]
	once sync.Once
	// cache is the node's part of the client-side cache (Config.Cache),
	// or nil.
	cache *cachestore.NodeCache
	// script is whether the node holds the exactly-once script and lets
	// the client run it (Config.ExactlyOnce).
	script oncewrite.Node
}

// nodeCounts are the calls a client sent to one address, across the
// clients it had for it (a node evicted or retired and made again keeps
// counting).
type nodeCounts struct {
	reads, writes atomic.Uint64
	batch         routing.BatchCounts // auto-pipelined round trips
	// id is the address's number for the client's lifetime, from 1: the
	// tag of the SCAN cursors it issued (see scan.go).
	id uint64
}

func (n *node) acquire() { n.inflight.Add(1) }

func (n *node) release() {
	if n.inflight.Add(-1) == 0 && n.retired.Load() {
		n.close()
	}
}

func (n *node) retire() {
	n.retired.Store(true)
	if n.inflight.Load() == 0 {
		n.close()
	}
}

func (n *node) close() {
	n.once.Do(func() {
		if n.cache != nil {
			n.cache.Close()
		}
		_ = n.client.Close()
		_ = n.ctl.Close()
	})
}

// control is the node's client for the client's own commands.
func (n *node) control() *redis.Client { return n.ctl }

// role runs ROLE on the node.
func (n *node) role(ctx context.Context) (redisinfo.Role, error) {
	n.acquire()
	defer n.release()
	return redisinfo.ParseRole(n.ctl.Do(ctx, "ROLE"))
}

// controlPoolSize is the connection pool of a node's control client: a
// refresh, a promotion check and a replication probe can overlap.
const controlPoolSize = 3

// nodeSet owns every node client, one per address. Only the topology
// goroutine adds and retires nodes; the hot path reads them from the
// snapshot.
type nodeSet struct {
	opts   *Config
	mu     sync.Mutex
	live   map[string]*node
	counts map[string]*nodeCounts
	hooks  []redis.Hook // added to every node client, present and future
	onNew  []func(*redis.Client)
	closed bool
	// wire counts the batches the nodes' Batchers have on the wire.
	wire routing.WireCount
	// cache is the client-side cache (Config.Cache) of the topology's
	// nodes; nil without one, and for the nodes Diagnose makes.
	cache *cachestore.Cache
}

func newNodeSet(opts *Config) *nodeSet {
	return &nodeSet{opts: opts, live: map[string]*node{}, counts: map[string]*nodeCounts{}}
}

// get returns the live node for addr, creating it if needed.
func (s *nodeSet) get(addr string) *node {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n, ok := s.live[addr]; ok {
		return n
	}
	counts := s.counts[addr]
	if counts == nil {
		counts = &nodeCounts{id: uint64(len(s.counts) + 1)}
		s.counts[addr] = counts
	}
	n := &node{addr: addr, counts: counts}
	n.client = redis.NewClient(s.opts.nodeOptions(addr, dialer(s.opts)))
	opts := s.opts
	var blocking func(redis.Cmder) bool
	if opts.Classifier != nil { // a Config that did not go through withDefaults has none
		blocking = opts.Classifier.Blocking
	}
	n.batch = routing.NewBatcher(n.client, routing.BatchConfig{
		MaxBatch:    opts.AutoPipelineMaxBatch,
		MaxInflight: opts.AutoPipelineInflight,
		Confirm:     opts.confirmCmds,
		Counts:      &counts.batch,
		Wire:        &s.wire,
		// Blocking commands take runBlocking's path before they get
		// here; this keeps any that would out of batches all the same.
		Blocking: blocking,
	})
	// The control client has the caller's dialer and credentials but not
	// their connection settings (OnConnect, Protocol, pool policy): see
	// controlOptions.
	ctl := s.opts.controlOptions(addr)
	ctl.PoolSize, ctl.MinIdleConns, ctl.MaxIdleConns = controlPoolSize, 0, controlPoolSize
	// The client's own commands' replies are bounded tightly; the
	// caller's by Config.ReplyLimits (nodeOptions), whose defaults let a
	// LRANGE rightly return millions of elements.
	n.ctl = redis.NewClient(respguard.Guard(ctl))
	if h := s.opts.InternalHook; h != nil {
		n.ctl.AddHook(h)
		n.client.AddHook(routing.InternalHook(h))
	}
	if s.closed {
		// The client is closing: hand out a closed node (its calls fail
		// with ErrClosed) rather than one nobody would close.
		n.retired.Store(true)
		n.close()
		return n
	}
	for _, h := range s.hooks {
		n.client.AddHook(h)
	}
	for _, fn := range s.onNew {
		fn(n.client)
	}
	if s.cache != nil {
		// Its tracker connects in the background: the topology goroutine
		// that makes nodes never waits on the network.
		n.cache = s.cache.Track(s.opts.nodeOptions(addr, dialer(s.opts)))
	}
	s.live[addr] = n
	return n
}

// withCache gives the set's nodes the client-side cache of Config.Cache.
func (s *nodeSet) withCache() {
	c := s.opts.Cache
	if c == nil {
		return
	}
	s.cache = cachestore.New(*c, s.opts.Classifier, s.opts.Logger)
}

// onNewNode calls fn for every node client, present and future (see
// Client.OnNewNode).
func (s *nodeSet) onNewNode(fn func(*redis.Client)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.onNew = append(s.onNew, fn)
	for _, n := range s.live {
		fn(n.client)
	}
}

func (s *nodeSet) addHook(h redis.Hook) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks = append(s.hooks, h)
	for _, n := range s.live {
		n.client.AddHook(h)
	}
}

// callCounts returns the reads and writes sent to every address so far,
// by address.
func (s *nodeSet) callCounts() []NodeStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]NodeStats, 0, len(s.counts))
	for addr, c := range s.counts {
		if r, w := c.reads.Load(), c.writes.Load(); r+w > 0 {
			out = append(out, NodeStats{Addr: addr, Reads: r, Writes: w,
				Batches: c.batch.Batches.Load(), Batched: c.batch.Commands.Load()})
		}
	}
	slices.SortFunc(out, func(a, b NodeStats) int { return strings.Compare(a.Addr, b.Addr) })
	return out
}

// poolStats are the pool statistics of the live node clients.
func (s *nodeSet) poolStats() []*redis.PoolStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	stats := make([]*redis.PoolStats, 0, len(s.live))
	for _, n := range s.live {
		stats = append(stats, n.client.PoolStats())
	}
	return stats
}

// keepOnly retires every live node whose address is not in keep.
func (s *nodeSet) keepOnly(keep map[string]bool) {
	s.mu.Lock()
	var gone []*node
	for addr, n := range s.live {
		if !keep[addr] {
			delete(s.live, addr)
			gone = append(gone, n)
		}
	}
	s.mu.Unlock()
	for _, n := range gone {
		n.retire()
	}
}

// replace retires the live node for addr (its pooled connections close
// once idle) so the next get dials afresh.
func (s *nodeSet) replace(addr string) {
	s.mu.Lock()
	n, ok := s.live[addr]
	delete(s.live, addr)
	s.mu.Unlock()
	if ok {
		n.retire()
	}
}

func (s *nodeSet) closeAll() {
	s.mu.Lock()
	all := s.live
	s.live = map[string]*node{}
	s.closed = true
	s.mu.Unlock()
	for _, n := range all {
		n.retired.Store(true)
		n.close()
	}
	if s.cache != nil {
		s.cache.Close()
	}
}

// dialer connects to data nodes (with Config.Dialer when set, and TLS
// when configured), refuses a peer outside AllowedNetworks before
// anything is sent, and marks every failure as a *failure.DialError. The
// control client's connections are then bounded by respguard (nodeSet.get),
// whoever dialled them.
func dialer(opts *Config) func(ctx context.Context, network, addr string) (net.Conn, error) {
	d := &net.Dialer{Timeout: opts.DialTimeout}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return opts.dialWith(ctx, d, network, addr, opts.TLSConfig, true)
	}
}
