package cachestore

import (
	"context"
	"errors"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
)

// TestCacheable: which commands are cached, and their shapes.
func TestCacheable(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		cmd      redis.Cmder
		ok       bool
		key, sub string
	}{
		{redis.NewStringCmd(ctx, "GET", "k"), true, "k", "get"},
		{redis.NewStringCmd(ctx, "get", "k"), true, "k", "get"},
		{redis.NewStringCmd(ctx, "HGET", "h", "f1"), true, "h", "hget\x00f1"},
		{redis.NewStringSliceCmd(ctx, "LRANGE", "l", 0, -1), true, "l", "lrange\x000\x00-1"},
		{redis.NewZSliceCmd(ctx, "ZRANGE", "z", 0, 10, "WITHSCORES"), true, "z", "zrange\x000\x0010\x00WITHSCORES"},
		{redis.NewIntCmd(ctx, "EXISTS", "k"), true, "k", "exists"},
		{redis.NewIntCmd(ctx, "EXISTS", "k1", "k2"), false, "", ""},  // two keys
		{redis.NewStatusCmd(ctx, "SET", "k", "v"), false, "", ""},    // a write
		{redis.NewIntCmd(ctx, "INCR", "k"), false, "", ""},           // a write
		{redis.NewDurationCmd(ctx, 1, "TTL", "k"), false, "", ""},    // changes with the clock
		{redis.NewStringCmd(ctx, "SRANDMEMBER", "s"), false, "", ""}, // random
		{redis.NewSliceCmd(ctx, "MGET", "a", "b"), false, "", ""},    // several keys
		{redis.NewStringCmd(ctx, "GET"), false, "", ""},              // no key
		{redis.NewStringCmd(ctx, "OBJECT", "ENCODING", "k"), false, "", ""},
	} {
		key, sub, ok := Cacheable(c.cmd)
		if ok != c.ok || key != c.key || sub != c.sub {
			t.Errorf("%v: %q %q %v, want %q %q %v", c.cmd.Args(), key, sub, ok, c.key, c.sub, c.ok)
		}
	}
}

// TestCacheableAreReadOnly: every command the cache may serve is
// read-only in the built-in command table (Redis 7.0's and Valkey 8.0's
// COMMAND replies): a write is never cached, and Cacheable need not ask
// (see isCacheable). Every command of the table is asked, read from its
// generated source (the table is internal to package classify), so that
// a name added to isCacheable is checked whatever it is.
func TestCacheableAreReadOnly(t *testing.T) {
	src, err := os.ReadFile("../../classify/table_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	cl := classify.New()
	var cached []string
	for _, m := range regexp.MustCompile(`(?m)^\t\{Name: "([a-z0-9_-]+)"`).FindAllSubmatch(src, -1) {
		name := string(m[1])
		if !isCacheable(name) || slices.Contains(cached, name) {
			continue
		}
		cached = append(cached, name)
		if !cl.ReadOnlyArgs(name, "k") || !cl.ReadOnlyArgs(strings.ToUpper(name), "k") {
			t.Errorf("%s is cached but is not read-only in the command table: %+v", name, cl.Explain(name, "k"))
		}
	}
	// 37 commands, every one in the table (a name isCacheable knows but
	// the table does not would escape the loop above).
	if len(cached) != 37 {
		t.Errorf("%d of the table's commands are cacheable, want 37: %v", len(cached), cached)
	}
	for _, name := range []string{"set", "getdel", "getex", "getset", "ttl", "pttl", "srandmember", "hrandfield", "zrandmember", "spop", "lpop", "object", "dump", "keys", "scan", "sort", "sort_ro", "bitfield_ro"} {
		if isCacheable(name) {
			t.Errorf("%s is cacheable", name)
		}
	}
}

// TestExtractRestore: every cached reply type comes back equal, as a
// copy the caller may change without changing the cache.
func TestExtractRestore(t *testing.T) {
	ctx := context.Background()
	set := func(c redis.Cmder, v any) redis.Cmder {
		reflect.ValueOf(c).MethodByName("SetVal").Call([]reflect.Value{reflect.ValueOf(v)})
		return c
	}
	for _, c := range []struct {
		ran   redis.Cmder
		fresh redis.Cmder
	}{
		{set(redis.NewStringCmd(ctx, "GET", "k"), "v"), redis.NewStringCmd(ctx, "GET", "k")},
		{set(redis.NewStatusCmd(ctx, "TYPE", "k"), "string"), redis.NewStatusCmd(ctx, "TYPE", "k")},
		{set(redis.NewIntCmd(ctx, "STRLEN", "k"), int64(3)), redis.NewIntCmd(ctx, "STRLEN", "k")},
		{set(redis.NewBoolCmd(ctx, "HEXISTS", "h", "f"), true), redis.NewBoolCmd(ctx, "HEXISTS", "h", "f")},
		{set(redis.NewFloatCmd(ctx, "ZSCORE", "z", "m"), 1.5), redis.NewFloatCmd(ctx, "ZSCORE", "z", "m")},
		{set(redis.NewStringSliceCmd(ctx, "SMEMBERS", "s"), []string{"a", "b"}), redis.NewStringSliceCmd(ctx, "SMEMBERS", "s")},
		{set(redis.NewIntSliceCmd(ctx, "LPOS", "l", "x"), []int64{1, 2}), redis.NewIntSliceCmd(ctx, "LPOS", "l", "x")},
		{set(redis.NewBoolSliceCmd(ctx, "SMISMEMBER", "s", "a"), []bool{true}), redis.NewBoolSliceCmd(ctx, "SMISMEMBER", "s", "a")},
		{set(redis.NewFloatSliceCmd(ctx, "ZMSCORE", "z", "a"), []float64{2}), redis.NewFloatSliceCmd(ctx, "ZMSCORE", "z", "a")},
		{set(redis.NewMapStringStringCmd(ctx, "HGETALL", "h"), map[string]string{"f": "v"}), redis.NewMapStringStringCmd(ctx, "HGETALL", "h")},
		{set(redis.NewZSliceCmd(ctx, "ZRANGE", "z", 0, -1, "WITHSCORES"), []redis.Z{{Score: 1, Member: "m"}}), redis.NewZSliceCmd(ctx, "ZRANGE", "z", 0, -1, "WITHSCORES")},
		{set(redis.NewSliceCmd(ctx, "HMGET", "h", "a", "b"), []any{"x", nil}), redis.NewSliceCmd(ctx, "HMGET", "h", "a", "b")},
	} {
		v, size, ok := Extract(c.ran)
		if !ok || size <= 0 {
			t.Fatalf("%v: Extract %v %d", c.ran.Args(), ok, size)
		}
		if !Restore(c.fresh, v) {
			t.Fatalf("%v: Restore refused its own value", c.ran.Args())
		}
		want := reflect.ValueOf(c.ran).MethodByName("Val").Call(nil)[0].Interface()
		got := reflect.ValueOf(c.fresh).MethodByName("Val").Call(nil)[0].Interface()
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: restored %v, want %v", c.ran.Args(), got, want)
		}
		// The caller changing what it got leaves the cache as it was.
		switch g := got.(type) {
		case []string:
			g[0] = "changed"
		case map[string]string:
			g["f"] = "changed"
		case []any:
			g[0] = "changed"
		default:
			continue
		}
		again := reflect.New(reflect.TypeOf(c.fresh).Elem()).Interface().(redis.Cmder)
		Restore(again, v)
		if got := reflect.ValueOf(again).MethodByName("Val").Call(nil)[0].Interface(); !reflect.DeepEqual(got, want) {
			t.Fatalf("%v: a caller's change reached the cache: %v", c.ran.Args(), got)
		}
	}
	// redis.Nil is cached as such; other errors are not cached.
	miss := redis.NewStringCmd(ctx, "GET", "k")
	miss.SetErr(redis.Nil)
	v, _, ok := Extract(miss)
	fresh := redis.NewStringCmd(ctx, "GET", "k")
	if !ok || !Restore(fresh, v) || fresh.Err() != redis.Nil { //nolint:errorlint // go-redis's own sentinel value
		t.Fatalf("a nil reply: extract %v, restored %v", ok, fresh.Err())
	}
	wrong := redis.NewStringCmd(ctx, "GET", "k")
	wrong.SetErr(errors.New("WRONGTYPE Operation against a key holding the wrong kind of value"))
	if _, _, ok := Extract(wrong); ok {
		t.Fatal("an error reply was cached")
	}
	if Restore(redis.NewIntCmd(ctx, "STRLEN", "k"), "a string") {
		t.Fatal("Restore put a string into an IntCmd")
	}
}

// BenchmarkCacheable is what every cached read asks first: whether its
// command may be cached, and its key.
func BenchmarkCacheable(b *testing.B) {
	cmd := redis.NewStringCmd(context.Background(), "get", "key")
	for b.Loop() {
		if _, _, ok := Cacheable(cmd); !ok {
			b.Fatal("GET is not cacheable")
		}
	}
}
