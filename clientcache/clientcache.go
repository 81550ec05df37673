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
