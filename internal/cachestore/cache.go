package cachestore

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
)

// Config is a client's cache, as the client's own config gives it.
type Config struct {
	MaxBytes         int64
	MaxTTL           time.Duration
	Prefixes         []string
	Heartbeat        time.Duration
	HeartbeatTimeout time.Duration
	Classifier       *classify.Classifier
	Logger           *slog.Logger
}

// Cache is one client's cache: one store for all its nodes, and a
// tracker for each node it reads from through the cache.
type Cache struct {
	cfg   Config
	store *Store
	// trackers are every node's tracker goroutine, Close waits for them.
	trackers sync.WaitGroup
}

// New returns a client's cache.
func New(cfg Config) *Cache {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Cache{cfg: cfg, store: NewStore(cfg.MaxBytes, cfg.MaxTTL)}
}

// Store is the cache's store.
func (c *Cache) Store() *Store { return c.store }

// Check refuses a server that will not track reads (see CheckTracking).
func (c *Cache) Check(ctx context.Context, opts *redis.Options) error {
	return CheckTracking(ctx, opts, c.cfg.Prefixes)
}

// Track starts caching the node of opts: its tracker connects in the
// background, and its reads are cached once it has.
func (c *Cache) Track(opts *redis.Options) *NodeCache {
	node := NewNode(opts.Addr)
	t := newTracker(TrackerConfig{
		Options: opts, Store: c.store, Node: node, Prefixes: c.cfg.Prefixes,
		Heartbeat: c.cfg.Heartbeat, HeartbeatTimeout: c.cfg.HeartbeatTimeout, Logger: c.cfg.Logger,
	})
	t.start(&c.trackers)
	return &NodeCache{c: c, node: node, tracker: t}
}

// Close waits for the trackers of the nodes closed (NodeCache.Close).
func (c *Cache) Close() { c.trackers.Wait() }

// NodeCache is a cache's part for one node.
type NodeCache struct {
	c       *Cache
	node    *Node
	tracker *Tracker
}

// Node is the store's part for the node.
func (n *NodeCache) Node() *Node { return n.node }

// Close stops the node's tracker and frees its entries (a node the client
// no longer uses). It does not wait for the tracker's goroutine to end:
// Cache.Close does.
func (n *NodeCache) Close() {
	n.tracker.stop()
	n.c.store.Purge(n.node)
}

// Do runs a read through the cache: a hit sets cmd's reply and returns
// without sending; otherwise send runs it (on this node) and its reply is
// cached for at most ttl, unless an invalidation of its key came first. A
// command that cannot be cached (see Cacheable) is only sent.
func (n *NodeCache) Do(cmd redis.Cmder, ttl time.Duration, send func() error) error {
	key, sub, ok := Cacheable(n.c.cfg.Classifier, cmd)
	if !ok || !n.tracker.Tracks(key) {
		return send()
	}
	if v, hit := n.c.store.Get(n.node, key, sub, time.Now()); hit && Restore(cmd, v) {
		return cmd.Err()
	}
	tk := n.c.store.Reserve(n.node, key, sub)
	err := send()
	if err == nil || errors.Is(err, redis.Nil) {
		if v, size, ok := Extract(cmd); ok {
			n.c.store.Fill(tk, v, size, ttl, time.Now())
			return err
		}
	}
	n.c.store.Abandon(tk)
	return err
}
