package cachestore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/failure"
)

// Cache is one client's cache: one store for all its nodes, and a
// tracker for each node it reads from through the cache.
type Cache struct {
	cfg   clientcache.Config
	cl    *classify.Classifier
	log   *slog.Logger
	store *Store
	// trackers are every node's tracker goroutine, Close waits for them;
	// mu orders their starts before the wait.
	mu       sync.Mutex
	trackers sync.WaitGroup
	// nodes are the nodes tracked and not closed: FailOpen looks for a
	// read's entry on each (the node that cached it may not be the one the
	// failed read was for: a failover moved the key).
	nodesMu sync.Mutex
	nodes   map[*Node]struct{}
}

// New returns a client's cache of cfg (with its defaults), which caches
// the commands cl says are read-only (see Cacheable), and logs to log.
func New(cfg clientcache.Config, cl *classify.Classifier, log *slog.Logger) *Cache {
	cfg = cfg.WithDefaults()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Cache{cfg: cfg, cl: cl, log: log, store: NewStore(cfg.MaxBytes, cfg.MaxTTL), nodes: map[*Node]struct{}{}}
}

// Stats are the cache's counters (Entries walks the store).
func (c *Cache) Stats() clientcache.Stats {
	if c == nil {
		return clientcache.Stats{}
	}
	k := &c.store.counts
	hits, misses := c.store.HitsMisses()
	f := clientcache.FlushCounts{Lost: k.FlushesLost.Load(), Silent: k.FlushesSilent.Load(),
		Server: k.FlushesServer.Load(), Topology: k.FlushesTopology.Load()}
	return clientcache.Stats{
		Hits: hits, Misses: misses, Fills: k.Fills.Load(), FillsDropped: k.FillsRaced.Load(),
		Invalidations: k.Invalidations.Load(), Flushes: f.Lost + f.Silent + f.Server + f.Topology, FlushesByCause: f,
		StaleServed: k.StaleServed.Load(), Evictions: k.Evictions.Load(),
		TooLarge: k.TooLarge.Load(), Bytes: c.store.Bytes(), Entries: c.store.Entries(),
	}
}

// Track prepares caching the node of opts: its tracker connects in the
// background on the node's first cached read (a node the client never
// reads through the cache costs no connection), and its reads are cached
// once it has.
func (c *Cache) Track(opts *redis.Options) *NodeCache {
	node := NewNode(opts.Addr)
	t := newTracker(TrackerConfig{
		Options: opts, Store: c.store, Node: node, Prefixes: c.cfg.Prefixes,
		Heartbeat: c.cfg.Heartbeat, HeartbeatTimeout: c.cfg.HeartbeatTimeout, Logger: c.log,
	})
	c.nodesMu.Lock()
	c.nodes[node] = struct{}{}
	c.nodesMu.Unlock()
	return &NodeCache{c: c, node: node, tracker: t}
}

// Close waits for the trackers of the nodes closed (NodeCache.Close).
func (c *Cache) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.trackers.Wait()
}

// NodeCache is a cache's part for one node.
type NodeCache struct {
	c       *Cache
	node    *Node
	tracker *Tracker
	once    sync.Once // starts the tracker
}

// start runs the node's tracker, once.
func (n *NodeCache) start() {
	n.once.Do(func() {
		n.c.mu.Lock()
		defer n.c.mu.Unlock()
		if n.tracker.ctx.Err() == nil { // not closed before its first read
			n.tracker.start(&n.c.trackers)
		}
	})
}

// Node is the store's part for the node.
func (n *NodeCache) Node() *Node { return n.node }

// Flush stops serving the node's entries (a role or slots the client saw
// it lose): reads of it are cached afresh.
func (n *NodeCache) Flush() {
	n.c.store.counts.flushed(FlushTopology)
	n.node.Flush(time.Now())
}

// Close stops the node's tracker and frees its entries (a node the client
// no longer uses). It does not wait for the tracker's goroutine to end:
// Cache.Close does.
func (n *NodeCache) Close() {
	n.tracker.stop()
	n.c.nodesMu.Lock()
	delete(n.c.nodes, n.node)
	n.c.nodesMu.Unlock()
	n.c.store.Purge(n.node)
}

// Wrote ends the node's entries of every key the client's own writes in
// cmd, or in cmds, touched, once they have run (or may have): the read
// that follows a write in the caller's program then misses and reads the
// new value, without waiting for the server's invalidation, which is on
// its way on another connection. Reads in cmds are skipped; n may be nil.
func (n *NodeCache) Wrote(cmd redis.Cmder, cmds []redis.Cmder) {
	if n == nil {
		return
	}
	if cmd != nil {
		n.wrote(cmd)
	}
	for _, q := range cmds {
		n.wrote(q)
	}
}

func (n *NodeCache) wrote(q redis.Cmder) {
	if n.c.cl.ReadOnly(q) {
		return
	}
	args := q.Args()
	for i := range n.c.cl.KeyIndexes(args) {
		if key, ok := classify.KeyString(args[i]); ok {
			n.c.store.Invalidate(n.node, key)
		}
	}
}

// Asked returns the TTL of a call whose single command should go through
// the node's cache (Do): the node has one (n may be nil) and ctx asks for
// it (clientcache.WithTTL). Checked before the client builds its send
// function, so that a call the cache is not asked for costs nothing.
func (n *NodeCache) Asked(ctx context.Context) (time.Duration, bool) {
	if n == nil {
		return 0, false
	}
	return clientcache.TTL(ctx)
}

// Do runs a read through the cache: a hit sets cmd's reply and returns
// without sending; otherwise send runs it (on this node) and its reply is
// cached for at most ttl, unless an invalidation of its key came first. A
// command that cannot be cached (see Cacheable) is only sent.
func (n *NodeCache) Do(cmd redis.Cmder, ttl time.Duration, send func() error) error {
	key, sub, ok := Cacheable(cmd)
	if !ok || !n.tracker.Tracks(key) {
		return send()
	}
	n.start() // on the node's first cacheable read (a write never starts it); then a load
	now := nanotime()
	var tk Ticket // on the stack: a miss allocates nothing for it
	if v, hit := n.c.store.getOrReserve(n.node, key, sub, now, &tk); hit {
		if Restore(cmd, v) {
			return cmd.Err()
		}
		tk = *n.c.store.Reserve(n.node, key, sub) // a reply of another type: read it again
	}
	err := send()
	if err == nil || errors.Is(err, redis.Nil) {
		if v, size, ok := Extract(cmd); ok {
			// The TTL counts from before the send: an entry never
			// outlives it.
			n.c.store.fill(&tk, v, size, ttl, now)
			return err
		}
	}
	n.c.store.Abandon(&tk)
	return err
}

// FailOpen is the last step of a cached read that failed, after the
// client's own re-routing, holds and retries (Config.MaxStale): when err
// says no server could be reached for it (failure.Unreachable), and an entry of
// the read, on any node of the cache, was known current at most MaxStale
// ago, cmd gets the youngest such entry's value and FailOpen returns a
// *clientcache.StaleError (also set as cmd's error). Otherwise it returns
// err. c may be nil.
func (c *Cache) FailOpen(ctx context.Context, cmd redis.Cmder, err error) error {
	if c == nil || c.cfg.MaxStale <= 0 || cmd == nil || !failure.Unreachable(err) {
		return err
	}
	if _, asked := clientcache.TTL(ctx); !asked {
		return err
	}
	key, sub, ok := Cacheable(cmd)
	if !ok {
		return err
	}
	now := time.Now()
	var (
		best    any
		bestAge time.Duration
		from    *Node
	)
	c.nodesMu.Lock()
	for node := range c.nodes {
		if v, age, ok := c.store.GetStale(node, key, sub, now, c.cfg.MaxStale); ok && (from == nil || age < bestAge) {
			best, bestAge, from = v, age, node
		}
	}
	c.nodesMu.Unlock()
	if from == nil || !Restore(cmd, best) {
		return err
	}
	c.store.counts.StaleServed.Add(1)
	se := &clientcache.StaleError{Addr: from.Addr(), Age: bestAge, Nil: errors.Is(cmd.Err(), redis.Nil), Err: err}
	cmd.SetErr(se)
	return se
}
