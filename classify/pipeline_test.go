package classify

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
)

func cmds(ctx context.Context, lines ...[]any) []redis.Cmder {
	out := make([]redis.Cmder, len(lines))
	for i, args := range lines {
		out[i] = redis.NewCmd(ctx, args...)
	}
	return out
}

func TestReadOnlyPipeline(t *testing.T) {
	ctx := context.Background()
	get := []any{"GET", "user:42:name"}
	hgetall := []any{"HGETALL", "user:42:profile"}
	zrange := []any{"ZRANGE", "leaderboard", 0, 9, "WITHSCORES"}
	incr := []any{"INCR", "user:42:visits"}
	tests := []struct {
		name      string
		cmds      []redis.Cmder
		want      bool
		firstBad  int
		badReason Reason
	}{
		{"nil", nil, false, -1, ReasonEmpty},
		{"empty", []redis.Cmder{}, false, -1, ReasonEmpty},
		{"one read", cmds(ctx, get), true, -1, ReasonReadOnly},
		{"reads", cmds(ctx, get, hgetall, zrange), true, -1, ReasonReadOnly},
		{"reads then a write", cmds(ctx, get, incr), false, 1, ReasonWrite},
		{"a write first", cmds(ctx, incr, get), false, 0, ReasonWrite},
		{"read, write, read", cmds(ctx, get, incr, hgetall), false, 1, ReasonWrite},
		{"transaction of reads", cmds(ctx, []any{"MULTI"}, get, hgetall, []any{"EXEC"}), false, 0, ReasonTransaction},
		{"reads ending in EXEC", cmds(ctx, get, []any{"EXEC"}), false, 1, ReasonTransaction},
		{"WATCH then reads", cmds(ctx, []any{"WATCH", "k"}, get), false, 0, ReasonTransaction},
		{"SELECT then reads", cmds(ctx, []any{"SELECT", 2}, get), false, 0, ReasonSelect},
		{"reads and INFO", cmds(ctx, get, []any{"INFO"}), false, 1, ReasonServer},
		{"reads and a read-only script", cmds(ctx, get, []any{"EVAL", "#!lua flags=no-writes\nreturn 1", 0}), true, -1, ReasonReadOnly},
		{"reads and a script", cmds(ctx, get, []any{"EVAL", "return 1", 0}), false, 1, ReasonScriptMayWrite},
		{"reads and a blocking read", cmds(ctx, get, []any{"XREAD", "BLOCK", 0, "STREAMS", "s", "$"}), false, 1, ReasonBlocking},
		{"reads and an unknown command", cmds(ctx, get, []any{"NOSUCH"}), false, 1, ReasonUnknown},
		{"a nil command", []redis.Cmder{redis.NewCmd(ctx, get...), nil}, false, 1, ReasonEmpty},
	}
	c := New()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := c.ReadOnlyPipeline(tt.cmds); got != tt.want {
				t.Errorf("ReadOnlyPipeline = %v, want %v", got, tt.want)
			}
			if got := ReadOnlyPipeline(tt.cmds); got != tt.want {
				t.Errorf("package ReadOnlyPipeline = %v, want %v", got, tt.want)
			}
			d, i := c.ExplainPipeline(tt.cmds)
			if d.ReadOnly != tt.want || i != tt.firstBad || d.Reason != tt.badReason {
				t.Errorf("ExplainPipeline = %s at %d, want reason %q at %d", d, i, tt.badReason, tt.firstBad)
			}
		})
	}
}

// pipelineRecorder is a go-redis hook that records the commands of every
// pipeline the client sends, as the Sentinel client's hook will see them.
type pipelineRecorder struct {
	mu   sync.Mutex
	seen [][]redis.Cmder
}

func (r *pipelineRecorder) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (r *pipelineRecorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (r *pipelineRecorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		r.mu.Lock()
		r.seen = append(r.seen, cmds)
		r.mu.Unlock()
		return next(ctx, cmds)
	}
}

func (r *pipelineRecorder) last(t *testing.T) []redis.Cmder {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.seen) == 0 {
		t.Fatal("no pipeline reached the hook")
	}
	return r.seen[len(r.seen)-1]
}

// TestPipelinesAsHooksSeeThem runs real pipelines against a server and
// classifies what a hook receives: a plain pipeline of reads is read-only,
// the same reads in a TxPipeline are not (go-redis hands the hook the
// commands wrapped in MULTI and EXEC), and a pipeline with one write is
// not.
func TestPipelinesAsHooksSeeThem(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Standalone())
	rdb := l.Node(0).NewClient()
	defer rdb.Close()
	rec := &pipelineRecorder{}
	rdb.AddHook(rec)
	c := New()

	reads := func(p redis.Pipeliner) {
		p.Get(ctx, "user:42:name")
		p.HGetAll(ctx, "user:42:profile")
		p.ZRangeWithScores(ctx, "leaderboard", 0, 9)
	}
	tests := []struct {
		name      string
		tx        bool
		queue     func(redis.Pipeliner)
		want      bool
		firstBad  int
		badReason Reason
	}{
		{"pipeline of reads", false, reads, true, -1, ReasonReadOnly},
		{"transaction of reads", true, reads, false, 0, ReasonTransaction},
		{"pipeline with a write", false, func(p redis.Pipeliner) {
			p.Get(ctx, "user:42:name")
			p.Incr(ctx, "user:42:visits")
		}, false, 1, ReasonWrite},
	}
	for _, tt := range tests {
		run := rdb.Pipelined
		if tt.tx {
			run = rdb.TxPipelined
		}
		if _, err := run(ctx, func(p redis.Pipeliner) error { tt.queue(p); return nil }); err != nil && err != redis.Nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := rec.last(t)
		if c.ReadOnlyPipeline(got) != tt.want {
			t.Errorf("%s: ReadOnlyPipeline(%v) = %v, want %v", tt.name, got, !tt.want, tt.want)
		}
		if d, i := c.ExplainPipeline(got); i != tt.firstBad || d.Reason != tt.badReason {
			t.Errorf("%s: ExplainPipeline = %s at %d, want %q at %d", tt.name, d, i, tt.badReason, tt.firstBad)
		}
	}
}
