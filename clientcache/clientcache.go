package clientcache

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Config turns on client-side caching for a client (sentinel.Config.Cache,
// cluster.Config.Cache). Only reads whose context asks for it (WithTTL)
// are cached.
type Config struct {
	// MaxBytes bounds the memory the cache holds (keys, replies and a
	// fixed overhead an entry, estimated); the least recently used entries
	// go first (by second chance: an entry read since it was filled, or
	// since it was last spared, is spared once). Default DefaultMaxBytes.
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
	// MaxStale turns on fail-open reads: when a cached read cannot reach
	// a server (the client's own re-routing, holds and retries done, the
	// read failed for want of a node: connection refused or lost, no
	// answer before the deadline, no master, the cluster down, no healthy
	// database), the client returns the most recently confirmed entry it
	// holds for the read, if it was known current at most MaxStale ago
	// (on any node: a failover may have moved the key), with a
	// *StaleError that says so: the value is set on the command, and the
	// error is never nil, so that a stale value is never taken silently.
	// 0 (the default): a read that cannot reach its server fails.
	MaxStale time.Duration
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
	if c.MaxStale < 0 {
		return "MaxStale", fmt.Sprintf("is negative (%v): give how old a value may be served when its server cannot be reached, or 0 for never", c.MaxStale)
	}
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
	Flushes uint64
	// FlushesByCause splits Flushes by why the entries ended.
	FlushesByCause FlushCounts
	// StaleServed are the reads answered with a *StaleError (MaxStale).
	StaleServed uint64
	Evictions   uint64 // entries dropped for the memory bound
	TooLarge    uint64 // replies larger than the bound allows, not cached
	Bytes       int64  // the memory the entries hold (estimated)
	Entries     int
}

// Plus returns the sum of s and o (a client's cache counters with those
// of the clients it is made of).
func (s Stats) Plus(o Stats) Stats {
	return Stats{
		Hits: s.Hits + o.Hits, Misses: s.Misses + o.Misses, Fills: s.Fills + o.Fills,
		FillsDropped: s.FillsDropped + o.FillsDropped, Invalidations: s.Invalidations + o.Invalidations,
		Flushes: s.Flushes + o.Flushes, FlushesByCause: s.FlushesByCause.plus(o.FlushesByCause),
		StaleServed: s.StaleServed + o.StaleServed, Evictions: s.Evictions + o.Evictions, TooLarge: s.TooLarge + o.TooLarge,
		Bytes: s.Bytes + o.Bytes, Entries: s.Entries + o.Entries,
	}
}

// FlushCounts count a cache's flushes by cause.
type FlushCounts struct {
	// Lost: a node's tracking connection broke (killed, reset, the
	// server restarted); Silent: it stopped answering heartbeats.
	Lost, Silent uint64
	// Server: the server flushed (FLUSHALL, FLUSHDB).
	Server uint64
	// Topology: the client saw the node lose its role or slots (a
	// Sentinel switch, a cluster map without its slots, a database
	// switched away from).
	Topology uint64
}

func (f FlushCounts) plus(o FlushCounts) FlushCounts {
	return FlushCounts{Lost: f.Lost + o.Lost, Silent: f.Silent + o.Silent, Server: f.Server + o.Server, Topology: f.Topology + o.Topology}
}

// StaleError is the error of a cached read answered from an entry that
// could not be confirmed, because the read could not reach a server
// (Config.MaxStale): the command holds the entry's value, Err is why the
// read failed. errors.Is(err, redis.Nil) holds when the value served is
// a missing key's.
type StaleError struct {
	// Addr is the server the entry was read from.
	Addr string
	// Age is how long ago the entry was last known current: when its
	// server's tracking was last confirmed, or was lost.
	Age time.Duration
	// Nil: the value served is redis.Nil (the key did not exist).
	Nil bool
	// Err is the failure that made the read fall back on the entry.
	Err error
}

func (e *StaleError) Error() string {
	v := "a value"
	if e.Nil {
		v = "a missing key (redis: nil)"
	}
	return fmt.Sprintf("client-side caching: served %s cached from %s, last known current %v ago, because the read failed "+
		"(the value may be out of date; Config.MaxStale): %v", v, e.Addr, e.Age.Round(time.Millisecond), e.Err)
}

// Unwrap returns the failure, and redis.Nil when the value served is a
// missing key's.
func (e *StaleError) Unwrap() []error {
	if e.Nil {
		return []error{redis.Nil, e.Err}
	}
	return []error{e.Err}
}
