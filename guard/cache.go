package guard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Defaults of CacheConfig, used where a field is zero.
const (
	DefaultCacheTTL    = time.Minute
	DefaultLoadSlots   = 8
	DefaultLoadTimeout = 500 * time.Millisecond
)

// Codec turns cached values into Redis strings and back.
type Codec[V any] interface {
	Encode(V) (string, error)
	Decode(string) (V, error)
}

// StringCodec stores strings as they are. It is the default codec of a
// Cache[string].
type StringCodec struct{}

// Encode returns s.
func (StringCodec) Encode(s string) (string, error) { return s, nil }

// Decode returns s.
func (StringCodec) Decode(s string) (string, error) { return s, nil }

// JSONCodec stores values as JSON. It is the default codec of every Cache
// whose value type is not string.
type JSONCodec[V any] struct{}

// Encode returns v as JSON.
func (JSONCodec[V]) Encode(v V) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}

// Decode reads the JSON in s.
func (JSONCodec[V]) Decode(s string) (V, error) {
	var v V
	err := json.Unmarshal([]byte(s), &v)
	return v, err
}

// CacheConfig configures a read-through Cache.
type CacheConfig[V any] struct {
	// Name is the cache's namespace: its keys are <prefix>:<Name>:<id>. It
	// also names the cache in errors and logs. Required.
	Name string
	// Load reads a value from the source of truth (the database) on a miss
	// or when Redis fails. It must honour ctx: its deadline is LoadTimeout.
	// Required.
	Load func(ctx context.Context, id string) (V, error)
	// Codec encodes values for Redis. Default: StringCodec for a
	// Cache[string], JSONCodec otherwise.
	Codec Codec[V]
	// TTL is how long a loaded value stays in Redis. Default
	// DefaultCacheTTL (1 min).
	TTL time.Duration
	// TTLJitter spreads expiries, so that values loaded together do not
	// expire together: each write-back uses TTL plus a random duration in
	// [0, TTLJitter). Default TTL/10; negative: no jitter.
	TTLJitter time.Duration
	// LoadSlots is how many loads may run at once, per Cache: the bound on
	// the fallback's load on the database. Default DefaultLoadSlots (8).
	LoadSlots int
	// SlotWait is how long a load may wait for a free slot before the
	// request is refused with ErrUnavailable (ReasonBusy). Default 0:
	// refuse at once, since queueing behind a saturated database only adds
	// latency to a request that will likely time out anyway.
	SlotWait time.Duration
	// LoadTimeout bounds one load. Default DefaultLoadTimeout (500 ms). The slowest request
	// therefore takes CallLimit (read) + SlotWait + LoadTimeout + CallLimit
	// (write-back).
	LoadTimeout time.Duration
}

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=Source -linecomment

// Source says where a Cache lookup's value came from.
type Source int

const (
	// SourceCache: Redis had the value.
	SourceCache Source = iota + 1 // cache
	// SourceLoader: this lookup ran the loader.
	SourceLoader // loader
	// SourceShared: another lookup of the same key was loading it, and
	// this one shared its result.
	SourceShared // shared
)

// Result is a Cache lookup's value and where it came from.
type Result[V any] struct {
	Value  V
	Source Source
	// RedisFailed reports that Redis could not be read, so the value came
	// from the loader (a fallback) and was not written back.
	RedisFailed bool
}

// CacheStats are a Cache's counters since it was made. Every lookup
// (Lookup or Get, with an id) is counted once in each of two partitions:
//
//   - its read of Redis: Hits + Misses + ReadFailures + ReadsCanceled is
//     the number of lookups;
//   - for a lookup whose read did not hit, how it was then served or
//     not: Loaded + Shared + Refusals + LoadFailures + LoadsCanceled is
//     Misses + ReadFailures.
//
// RedisFailures, Loads and Fallbacks cut across them.
type CacheStats struct {
	Hits          uint64 // served from Redis
	Misses        uint64 // Redis answered without the value (or with one that does not decode)
	ReadFailures  uint64 // the read of Redis failed; the lookup falls back to the loader
	ReadsCanceled uint64 // the caller's context ended during the read

	Loaded        uint64 // served by the lookup's own load
	Shared        uint64 // served by another lookup's load of the same key
	Refusals      uint64 // refused with ErrUnavailable (every load slot busy, or the load timed out)
	LoadFailures  uint64 // the loader failed; its error was returned
	LoadsCanceled uint64 // the caller's context ended during the load or the wait for one

	RedisFailures uint64 // reads and write-backs that failed
	Loads         uint64 // loader calls made
	Fallbacks     uint64 // lookups served by a load (Loaded or Shared) because their read failed
}

// Cache is a fail-open read-through cache: it reads Redis, and on a miss
// or a Redis failure loads the value from the caller's loader, under a
// bounded number of concurrent loads. Concurrent lookups of one key share
// one load. A loaded value is written back (with a jittered TTL) only if
// the read reached Redis: when Redis just failed, a write would most
// likely fail too, and spend a second CallLimit.
type Cache[V any] struct {
	g           *Guard
	name        string
	load        func(context.Context, string) (V, error)
	codec       Codec[V]
	ttl         time.Duration
	jitter      time.Duration
	slots       chan struct{}
	slotWait    time.Duration
	loadTimeout time.Duration
	opGet       string
	opSet       string
	flight      flight[V]

	hits, misses, readFailures, readsCanceled             atomic.Uint64
	loaded, shared, refusals, loadFailures, loadsCanceled atomic.Uint64
	redisFailures, loads, fallbacks                       atomic.Uint64
}

// NewCache returns a Cache that uses g.
func NewCache[V any](g *Guard, cfg CacheConfig[V]) (*Cache[V], error) {
	switch {
	case g == nil:
		return nil, configError("", "guard", "is nil")
	case cfg.Name == "":
		return nil, configError("CacheConfig", "Name", "is required (it is the keys' namespace)")
	case cfg.Load == nil:
		return nil, configError("CacheConfig", "Load", "is required")
	case cfg.TTL < 0:
		return nil, configError("CacheConfig", "TTL", "must not be negative")
	case cfg.LoadSlots < 0:
		return nil, configError("CacheConfig", "LoadSlots", "must not be negative")
	case cfg.SlotWait < 0:
		return nil, configError("CacheConfig", "SlotWait", "must not be negative")
	case cfg.LoadTimeout < 0:
		return nil, configError("CacheConfig", "LoadTimeout", "must not be negative")
	}
	if cfg.TTL == 0 {
		cfg.TTL = DefaultCacheTTL
	}
	switch {
	case cfg.TTLJitter == 0:
		cfg.TTLJitter = cfg.TTL / 10
	case cfg.TTLJitter < 0:
		cfg.TTLJitter = 0
	}
	if cfg.LoadSlots == 0 {
		cfg.LoadSlots = DefaultLoadSlots
	}
	if cfg.LoadTimeout == 0 {
		cfg.LoadTimeout = DefaultLoadTimeout
	}
	if cfg.Codec == nil {
		if c, ok := any(StringCodec{}).(Codec[V]); ok {
			cfg.Codec = c
		} else {
			cfg.Codec = JSONCodec[V]{}
		}
	}
	return &Cache[V]{
		g:           g,
		name:        cfg.Name,
		load:        cfg.Load,
		codec:       cfg.Codec,
		ttl:         cfg.TTL,
		jitter:      cfg.TTLJitter,
		slots:       make(chan struct{}, cfg.LoadSlots),
		slotWait:    cfg.SlotWait,
		loadTimeout: cfg.LoadTimeout,
		opGet:       cfg.Name + " get",
		opSet:       cfg.Name + " set",
	}, nil
}

// Key is the Redis key of id.
func (c *Cache[V]) Key(id string) string { return c.g.Key(c.name, id) }

// Get returns the value of id (see Lookup).
func (c *Cache[V]) Get(ctx context.Context, id string) (V, error) {
	r, err := c.Lookup(ctx, id)
	return r.Value, err
}

// Lookup returns the value of id: from Redis, else from the loader. It
// fails with the caller's ctx.Err() when ctx ends, with an
// *UnavailableError (ErrUnavailable) when every load slot is taken or the
// load timed out, and with the loader's own error, wrapped, when the
// loader fails. A Redis failure alone never fails a lookup.
func (c *Cache[V]) Lookup(ctx context.Context, id string) (Result[V], error) {
	if id == "" {
		return Result[V]{}, fmt.Errorf("guard: %s: empty id", c.name)
	}
	key := c.Key(id)
	var raw string
	err := c.g.Call(ctx, c.opGet, func(ctx context.Context, r redis.Cmdable) error {
		var err error
		raw, err = r.Get(ctx, key).Result()
		return err
	})
	redisOK := true
	switch {
	case err == nil:
		v, derr := c.codec.Decode(raw)
		if derr == nil {
			c.hits.Add(1)
			return Result[V]{Value: v, Source: SourceCache}, nil
		}
		c.g.log.Warn("guard: cached value does not decode; loading it again", "cache", c.name, "err", derr)
		c.misses.Add(1)
	case errors.Is(err, redis.Nil):
		c.misses.Add(1)
	case callerGaveUp(ctx, err):
		c.readsCanceled.Add(1)
		return Result[V]{}, err
	default:
		redisOK = false
		c.readFailures.Add(1)
		c.redisFailures.Add(1)
		c.g.log.Warn("guard: cache read failed; falling back to the loader", "cache", c.name, "err", err)
	}
	res, err := c.loadShared(ctx, id, key, redisOK)
	if err != nil {
		var ue *UnavailableError
		switch {
		case errors.As(err, &ue):
			c.refusals.Add(1)
		case callerGaveUp(ctx, err):
			c.loadsCanceled.Add(1)
		default:
			c.loadFailures.Add(1)
		}
		return res, err
	}
	if res.Source == SourceShared {
		c.shared.Add(1)
	} else {
		c.loaded.Add(1)
	}
	if !redisOK {
		c.fallbacks.Add(1)
	}
	return res, nil
}

// loadShared loads id, or waits for a load of the same key in flight.
func (c *Cache[V]) loadShared(ctx context.Context, id, key string, redisOK bool) (Result[V], error) {
	for {
		call, leader := c.flight.join(key)
		if leader {
			return c.lead(ctx, id, key, redisOK, call)
		}
		select {
		case <-call.done:
		case <-ctx.Done():
			return Result[V]{}, ctx.Err()
		}
		if call.leaderGone && ctx.Err() == nil {
			continue // the leader's caller left; its error is not ours
		}
		if call.err != nil {
			return Result[V]{}, call.err
		}
		return Result[V]{Value: call.val, Source: SourceShared, RedisFailed: !redisOK}, nil
	}
}

// lead runs the load for everyone waiting on call, writes the value back
// if Redis was reachable, then publishes the result.
func (c *Cache[V]) lead(ctx context.Context, id, key string, redisOK bool, call *flightCall[V]) (Result[V], error) {
	finished := false
	defer func() {
		if !finished { // the loader panicked: let the waiters try themselves
			var zero V
			c.flight.finish(key, call, zero, fmt.Errorf("guard: %s: loader panicked", c.name), true)
		}
	}()
	v, err := c.loadBounded(ctx, id)
	if err == nil && redisOK {
		// Before finish: a lookup that starts after the flight ends then
		// finds the value in Redis instead of loading it again.
		c.writeBack(ctx, key, v)
	}
	c.flight.finish(key, call, v, err, err != nil && callerGaveUp(ctx, err))
	finished = true
	if err != nil {
		return Result[V]{}, err
	}
	return Result[V]{Value: v, Source: SourceLoader, RedisFailed: !redisOK}, nil
}

// loadBounded takes a load slot (waiting at most SlotWait) and runs the
// loader under LoadTimeout.
func (c *Cache[V]) loadBounded(ctx context.Context, id string) (V, error) {
	var zero V
	select {
	case c.slots <- struct{}{}:
	default:
		if c.slotWait <= 0 {
			return zero, &UnavailableError{Name: c.name, Reason: ReasonBusy}
		}
		t := time.NewTimer(c.slotWait)
		select {
		case c.slots <- struct{}{}:
			t.Stop()
		case <-t.C:
			return zero, &UnavailableError{Name: c.name, Reason: ReasonBusy}
		case <-ctx.Done():
			t.Stop()
			return zero, ctx.Err()
		}
	}
	defer func() { <-c.slots }()

	lctx, cancel := context.WithTimeout(ctx, c.loadTimeout)
	defer cancel()
	c.loads.Add(1)
	v, err := c.load(lctx, id)
	if err == nil {
		return v, nil
	}
	end := time.Now()
	if cerr := ctx.Err(); cerr != nil {
		return zero, cerr
	}
	// A loader that reports a deadline a moment before the context's timer
	// (a socket timeout set from it, say) is judged by the clock, as Call
	// judges Redis calls: the caller's deadline first, then LoadTimeout.
	if ok, cerr := callerDeadlinePassed(ctx, end); ok {
		return zero, cerr
	}
	if ldl, _ := lctx.Deadline(); errors.Is(lctx.Err(), context.DeadlineExceeded) || !end.Before(ldl) {
		return zero, &UnavailableError{Name: c.name, Reason: ReasonLoadTimeout,
			Err: fmt.Errorf("loader did not return within %v: %s", c.loadTimeout, err)}
	}
	return zero, fmt.Errorf("guard: %s: load: %w", c.name, err)
}

func (c *Cache[V]) writeBack(ctx context.Context, key string, v V) {
	s, err := c.codec.Encode(v)
	if err != nil {
		c.g.log.Warn("guard: loaded value does not encode; not cached", "cache", c.name, "err", err)
		return
	}
	ttl := c.ttl
	if c.jitter > 0 {
		ttl += rand.N(c.jitter)
	}
	err = c.g.Call(ctx, c.opSet, func(ctx context.Context, r redis.Cmdable) error {
		return r.Set(ctx, key, s, ttl).Err()
	})
	if err != nil && ctx.Err() == nil {
		c.redisFailures.Add(1)
		c.g.log.Warn("guard: cache write-back failed", "cache", c.name, "err", err)
	}
}

// Stats returns the cache's counters.
func (c *Cache[V]) Stats() CacheStats {
	return CacheStats{
		Hits:          c.hits.Load(),
		Misses:        c.misses.Load(),
		ReadFailures:  c.readFailures.Load(),
		ReadsCanceled: c.readsCanceled.Load(),
		Loaded:        c.loaded.Load(),
		Shared:        c.shared.Load(),
		Refusals:      c.refusals.Load(),
		LoadFailures:  c.loadFailures.Load(),
		LoadsCanceled: c.loadsCanceled.Load(),
		RedisFailures: c.redisFailures.Load(),
		Loads:         c.loads.Load(),
		Fallbacks:     c.fallbacks.Load(),
	}
}
