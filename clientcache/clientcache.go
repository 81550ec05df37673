package clientcache

import (
	"context"
	"time"

	"github.com/rediskit/rediskit/internal/cachestore"
)

// Config turns on client-side caching for a client (sentinel.Config.Cache).
// Only reads whose context asks for it (WithTTL) are cached.
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
	DefaultMaxBytes         = 64 << 20
	DefaultMaxTTL           = 10 * time.Minute
	DefaultHeartbeat        = cachestore.DefaultHeartbeat
	DefaultHeartbeatTimeout = cachestore.DefaultHeartbeatTimeout
)

// ErrTrackingUnavailable is returned by a client's constructor when the
// server will not track reads for the cache (CLIENT TRACKING unknown, as
// on Redis before 6, or forbidden by the ACL): caching is refused at
// start, never silently off.
var ErrTrackingUnavailable = cachestore.ErrTrackingUnavailable

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
