package classify

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
)

// BenchmarkClassify measures ReadOnly on go-redis commands next to the
// check go-redis's own ClusterClient makes for ReadOnly routing
// (cmd.Name(), then a lookup in the map go-redis builds from COMMAND, read
// from the same lab server), in the same run.
//
//	go test -run '^$' -bench Classify -benchmem ./classify/
func BenchmarkClassify(b *testing.B) {
	ctx := context.Background()
	info := labCommandInfo(b)
	goRedisReadOnly := func(cmd redis.Cmder) bool {
		ci := info[cmd.Name()]
		return ci != nil && ci.ReadOnly
	}
	c := New()

	cases := []struct {
		name string
		cmd  redis.Cmder
	}{
		{"get", redis.NewStringCmd(ctx, "get", "user:42:name")}, // as rdb.Get builds it
		{"GET", redis.NewCmd(ctx, "GET", "user:42:name")},       // as rdb.Do(ctx, "GET", …)
		{"OBJECT_ENCODING", redis.NewStringCmd(ctx, "object", "encoding", "k")},
		{"EVAL_shebang", redis.NewCmd(ctx, "eval", "#!lua flags=no-writes\nreturn redis.call('GET', KEYS[1])", 1, "k")},
		{"SET", redis.NewStatusCmd(ctx, "set", "k", "v")},
	}
	for _, tc := range cases {
		b.Run(tc.name+"/rediskit", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.ReadOnly(tc.cmd)
			}
		})
		b.Run(tc.name+"/go-redis", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				goRedisReadOnly(tc.cmd)
			}
		})
	}

	pipe := make([]redis.Cmder, 10)
	for i := range pipe {
		pipe[i] = redis.NewStringCmd(ctx, "get", "k")
	}
	b.Run("pipeline10/rediskit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			c.ReadOnlyPipeline(pipe)
		}
	})
	b.Run("pipeline10/go-redis", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, cmd := range pipe {
				if !goRedisReadOnly(cmd) {
					break
				}
			}
		}
	})
}

// labCommandInfo starts a lab server and returns the command info go-redis
// reads from its COMMAND reply, as a ClusterClient holds it.
func labCommandInfo(b *testing.B) map[string]*redis.CommandInfo {
	b.Helper()
	l := lab.New(b, lab.Standalone())
	rdb := l.Node(0).NewClient()
	defer rdb.Close()
	info, err := rdb.Command(context.Background()).Result()
	if err != nil {
		b.Fatal(err)
	}
	return info
}

// TestClassifyDoesNotAllocate checks the promise the hot path makes: no
// allocation for go-redis commands, argument lists and pipelines.
func TestClassifyDoesNotAllocate(t *testing.T) {
	ctx := context.Background()
	c := New()
	cmds := []redis.Cmder{
		redis.NewStringCmd(ctx, "get", "k"),
		redis.NewCmd(ctx, "GET", "k"),
		redis.NewCmd(ctx, []byte("GeT"), "k"),
		redis.NewStringCmd(ctx, "OBJECT", "ENCODING", "k"),
		redis.NewCmd(ctx, "eval", "#!lua flags=no-writes\nreturn 1", 0),
		redis.NewCmd(ctx, "EVAL", []byte("#!lua flags=no-writes,allow-stale\nreturn 1"), 0),
		redis.NewCmd(ctx, "config", "nosuch"),
		redis.NewCmd(ctx, "NOSUCHCOMMAND"),
		redis.NewStatusCmd(ctx, "set", "k", "v"),
	}
	for _, cmd := range cmds {
		if n := testing.AllocsPerRun(100, func() { c.ReadOnly(cmd) }); n != 0 {
			t.Errorf("ReadOnly(%q): %v allocations", cmd.Args(), n)
		}
		if n := testing.AllocsPerRun(100, func() { ReadOnly(cmd) }); n != 0 {
			t.Errorf("package ReadOnly(%q): %v allocations", cmd.Args(), n)
		}
	}
	if n := testing.AllocsPerRun(100, func() { c.ReadOnlyPipeline(cmds) }); n != 0 {
		t.Errorf("ReadOnlyPipeline: %v allocations", n)
	}
	args := []any{"ZRANGE", "z", "0", "-1"}
	if n := testing.AllocsPerRun(100, func() { c.ReadOnlyArgs(args...) }); n != 0 {
		t.Errorf("ReadOnlyArgs: %v allocations", n)
	}
}

// BenchmarkRoute: what a cluster client asks of every command, with one
// look at the table (Route) and with two (ReadOnlyArgs, then FirstKey).
func BenchmarkRoute(b *testing.B) {
	c := New()
	args := []any{"get", "user:1000"}
	b.Run("Route", func(b *testing.B) {
		for b.Loop() {
			if ro, first := c.Route(args); !ro || first != 1 {
				b.Fatal(ro, first)
			}
		}
	})
	b.Run("ReadOnlyArgs+FirstKey", func(b *testing.B) {
		for b.Loop() {
			if !c.ReadOnlyArgs(args...) || c.FirstKey(args) != 1 {
				b.Fatal("GET")
			}
		}
	})
}
