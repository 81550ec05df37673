package cachestore

import (
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
)

// isCacheable reports whether the replies of the command named name
// (lower case) may be cached: one key (the first argument), a reply that
// depends only on the key's value (not on the clock, as TTL's does, nor on
// chance, as SRANDMEMBER's), and a go-redis command type Extract can copy.
// Every one is read-only in the command table, which
// TestCacheableAreReadOnly checks: a hit does not ask the table again,
// and the read path has. A switch, not a map: every cached read asks, and
// a hit from one goroutine took a sixth of its time hashing the name
// (BenchmarkCacheable).
func isCacheable(name string) bool {
	switch name {
	case "get", "getrange", "strlen", "exists", "type",
		"getbit", "bitcount", "bitpos",
		"hget", "hmget", "hgetall", "hexists", "hlen",
		"hstrlen", "hkeys", "hvals",
		"lindex", "llen", "lrange", "lpos",
		"smembers", "sismember", "smismember", "scard",
		"zcard", "zcount", "zlexcount", "zscore", "zmscore",
		"zrank", "zrevrank", "zrange", "zrangebyscore",
		"zrangebylex", "zrevrange", "zrevrangebyscore", "zrevrangebylex":
		return true
	}
	return false
}

// Cacheable reports whether cmd's reply may be cached, and returns its key
// and its shape: the command and its other arguments, which tell its
// replies for one key apart (HGET k a from HGET k b).
func Cacheable(cmd redis.Cmder) (key, sub string, ok bool) {
	args := cmd.Args()
	if len(args) < 2 {
		return "", "", false
	}
	name := cmd.Name() // lower-cased afresh on every call: once
	if !isCacheable(name) {
		return "", "", false
	}
	if name == "exists" && len(args) != 2 {
		return "", "", false // several keys: several nodes' entries
	}
	key, ok = classify.KeyString(args[1])
	if !ok {
		return "", "", false
	}
	if len(args) == 2 {
		return key, name, true // GET k: no string to build on a hit
	}
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args[2:] {
		b.WriteByte(0)
		switch v := a.(type) {
		case string:
			b.WriteString(v)
		case []byte:
			b.Write(v)
		case int:
			b.WriteString(strconv.Itoa(v))
		case int64:
			b.WriteString(strconv.FormatInt(v, 10))
		case float64:
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		default:
			s, ok := classify.KeyString(a)
			if !ok {
				return "", "", false // an argument we cannot tell apart reliably
			}
			b.WriteString(s)
		}
	}
	return key, b.String(), true
}

// nilReply is a cached redis.Nil (a missing key, field or member).
type nilReply struct{}

// Extract returns the reply of cmd, which has run, as a value to cache
// and its size in bytes (an estimate); ok is false when the reply is an
// error other than redis.Nil, or of a type not cached.
func Extract(cmd redis.Cmder) (v any, size int64, ok bool) {
	if err := cmd.Err(); err != nil {
		if err == redis.Nil { //nolint:errorlint // go-redis returns redis.Nil itself
			return nilReply{}, 8, true
		}
		return nil, 0, false
	}
	switch c := cmd.(type) {
	case *redis.StringCmd:
		return c.Val(), int64(len(c.Val())), true
	case *redis.StatusCmd:
		return c.Val(), int64(len(c.Val())), true
	case *redis.IntCmd:
		return c.Val(), 8, true
	case *redis.BoolCmd:
		return c.Val(), 8, true
	case *redis.FloatCmd:
		return c.Val(), 8, true
	case *redis.StringSliceCmd:
		return slices.Clone(c.Val()), stringsSize(c.Val()), true
	case *redis.IntSliceCmd:
		return slices.Clone(c.Val()), int64(8 * len(c.Val())), true
	case *redis.BoolSliceCmd:
		return slices.Clone(c.Val()), int64(len(c.Val())), true
	case *redis.FloatSliceCmd:
		return slices.Clone(c.Val()), int64(8 * len(c.Val())), true
	case *redis.MapStringStringCmd:
		var n int64
		for k, v := range c.Val() {
			n += int64(len(k)+len(v)) + 32
		}
		return maps.Clone(c.Val()), n, true
	case *redis.ZSliceCmd:
		var n int64
		for _, z := range c.Val() {
			s, ok := z.Member.(string)
			if !ok {
				return nil, 0, false
			}
			n += int64(len(s)) + 32
		}
		return slices.Clone(c.Val()), n, true
	case *redis.SliceCmd:
		var n int64
		for _, e := range c.Val() {
			switch e := e.(type) {
			case nil:
				n += 8
			case string:
				n += int64(len(e)) + 16
			default:
				return nil, 0, false // nested replies: not cached
			}
		}
		return slices.Clone(c.Val()), n, true
	}
	return nil, 0, false
}

func stringsSize(ss []string) int64 {
	n := int64(16 * len(ss))
	for _, s := range ss {
		n += int64(len(s))
	}
	return n
}

// Restore sets cmd's reply to v, a value Extract returned for a command
// of the same type, copying what the caller could change; false when v
// does not fit cmd.
func Restore(cmd redis.Cmder, v any) bool {
	if _, isNil := v.(nilReply); isNil {
		cmd.SetErr(redis.Nil)
		return true
	}
	switch c := cmd.(type) {
	case *redis.StringCmd:
		return restoreAs(v, c.SetVal)
	case *redis.StatusCmd:
		return restoreAs(v, c.SetVal)
	case *redis.IntCmd:
		return restoreAs(v, c.SetVal)
	case *redis.BoolCmd:
		return restoreAs(v, c.SetVal)
	case *redis.FloatCmd:
		return restoreAs(v, c.SetVal)
	case *redis.StringSliceCmd:
		return restoreAs(v, cloned(c.SetVal))
	case *redis.IntSliceCmd:
		return restoreAs(v, cloned(c.SetVal))
	case *redis.BoolSliceCmd:
		return restoreAs(v, cloned(c.SetVal))
	case *redis.FloatSliceCmd:
		return restoreAs(v, cloned(c.SetVal))
	case *redis.ZSliceCmd:
		return restoreAs(v, cloned(c.SetVal))
	case *redis.SliceCmd:
		return restoreAs(v, cloned(c.SetVal))
	case *redis.MapStringStringCmd:
		return restoreAs(v, func(m map[string]string) { c.SetVal(maps.Clone(m)) })
	}
	return false
}

// restoreAs sets v with set when v is a T.
func restoreAs[T any](v any, set func(T)) bool {
	t, ok := v.(T)
	if ok {
		set(t)
	}
	return ok
}

// cloned is set, given a copy: the cache's slice stays the cache's.
func cloned[E any](set func([]E)) func([]E) {
	return func(s []E) { set(slices.Clone(s)) }
}
