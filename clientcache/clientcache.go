package clientcache

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Config turns on client-side caching for a client (sentinel.Config.Cache,
// cluster.Config.Cache). Only reads whose context asks for it (WithTTL)
// are cached.
type Config struct {
	// MaxBytes bounds the memory the cache holds (keys, replies and a
	// fixed overhead an entry, estimated); the least recently used entries
	// go first. Default DefaultMaxBytes.
	MaxBytes int64
	// MaxTTL caps how long an entry is kept, whatever WithTTL asks: a
	// safety net, since invalidations end an entry as soon as its key
	// changes. Default DefaultMaxTTL.
	MaxTTL time.Duration
	// Prefixes restrict the tracking (and so the caching) to keys with one
	// of these prefixes: the server then sends invalidations only for
	// writes to them. None: every key.
	Prefixes []string
	// Heartbeat is how often each node's invalidation connection is
	// pinged; HeartbeatTimeout is how long after a ping was sent the
	// node's entries are served without its reply: the staleness bound
	// when the connection goes silent (a partition). Defaults
	// DefaultHeartbeat, DefaultHeartbeatTimeout.
	Heartbeat, HeartbeatTimeout time.Duration
}

// Defaults of Config.
const (
	DefaultMaxBytes = 64 << 20
	DefaultMaxTTL   = 10 * time.Minute
	// DefaultHeartbeat: ten pings a second a node, each a few bytes.
	DefaultHeartbeat = 100 * time.Millisecond
	// DefaultHeartbeatTimeout: a reply may be late by two heartbeats on a
	// busy machine before the node's entries stop being served.
	DefaultHeartbeatTimeout = 300 * time.Millisecond
)

// ErrTrackingUnavailable is the error of a server that will not track
// reads for the cache (CLIENT TRACKING unknown, as on Redis before 6, or
// forbidden by the ACL). The client's reads on that node are not cached,
// and it logs this error at error level: caching is never silently off.
var ErrTrackingUnavailable = errors.New("client-side caching: the server does not track reads")

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.MaxBytes <= 0 {
		c.MaxBytes = DefaultMaxBytes
	}
	if c.MaxTTL <= 0 {
		c.MaxTTL = DefaultMaxTTL
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = DefaultHeartbeat
	}
	if c.HeartbeatTimeout <= 0 {
		c.HeartbeatTimeout = DefaultHeartbeatTimeout
	}
	return c
}

// Check returns the field of c (with its defaults) that cannot be used,
// and why; "" when every field can.
func (c Config) Check() (field, problem string) {
	if c.HeartbeatTimeout <= c.Heartbeat {
		return "HeartbeatTimeout", fmt.Sprintf("%v is not above Heartbeat (%v): every ping would time out before the next", c.HeartbeatTimeout, c.Heartbeat)
	}
	return "", ""
}

// Resolved is what a client's constructor keeps of its Config.Cache: a
// copy with the defaults, or nil for none; field and problem name what
// cannot be used (see Check).
func (c *Config) Resolved() (resolved *Config, field, problem string) {
	if c == nil {
		return nil, "", ""
	}
	cc := c.WithDefaults()
	if field, problem = cc.Check(); field != "" {
		return nil, field, problem
	}
	return &cc, "", ""
}

type ttlKey struct{}

// WithTTL returns a context whose reads are served from the client's
// cache, and cached for at most ttl (and Config.MaxTTL; 0: MaxTTL) when
// they are not. A read the cache cannot hold (a command not in the
// cacheable list, several keys) runs as without it. Writes ignore it.
func WithTTL(ctx context.Context, ttl time.Duration) context.Context {
	return context.WithValue(ctx, ttlKey{}, ttl)
}

// TTL returns what WithTTL put in ctx, and whether it did.
func TTL(ctx context.Context) (time.Duration, bool) {
	ttl, ok := ctx.Value(ttlKey{}).(time.Duration)
	return ttl, ok
}

// Stats are a client's cache counters since it was made (a client's
// Stats().Cache; all zero without a cache).
type Stats struct {
	Hits   uint64 // reads served from the cache
	Misses uint64 // cacheable reads sent to the server
	// Fills are replies cached; FillsDropped replies not cached because
	// their key was invalidated, or their node's tracking lost, while they
	// were in flight.
	Fills, FillsDropped uint64
	// Invalidations are keys the servers invalidated that had entries or
	// reads in flight.
	Invalidations uint64
	// Flushes are the times a node's entries stopped being served at once:
	// its tracking connection lost or silent, the server flushed, or the
	// node lost its role or slots.
	Flushes   uint64
	Evictions uint64 // entries dropped for the memory bound
	TooLarge  uint64 // replies larger than the bound allows, not cached
	Bytes     int64  // the memory the entries hold (estimated)
	Entries   int
}
