package testkit

import (
	"context"
	"runtime"
	"testing"

	"github.com/redis/go-redis/v9"
)

// DataClient is what CheckHostileDataReplies needs of a routed client:
// the go-redis calls through which a caller meets a reply.
type DataClient interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
	Get(ctx context.Context, key string) *redis.StringCmd
	LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	Subscribe(ctx context.Context, channels ...string) *redis.PubSub
}

// HostileDataCall is one way a caller meets a reply: its name and the call.
type HostileDataCall struct {
	Name string
	Run  func() error
}

// HostileDataCalls are the calls that meet HostileReplies()[i] on key
// (HostileKey(i)) through c: GET and SCAN by Do (which reads any reply
// whole: where go-redis allocates what the headers declare and recurses
// into nesting), a pipeline with a healthy GET before the hostile one
// (whose reply must have been read whole), and SUBSCRIBE.
func HostileDataCalls(t *testing.T, ctx context.Context, c DataClient, key string) []HostileDataCall {
	return []HostileDataCall{
		{"GET", func() error { return c.Do(ctx, "GET", key).Err() }},
		{"pipeline", func() error {
			var before *redis.StringCmd
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
				before = p.Get(ctx, "k")
				p.Do(ctx, "GET", key)
				return nil
			})
			// go-redis fails every command of a pipeline whose reading
			// failed; the reply before the refused one was read, whole.
			if v := before.Val(); v != "ok" {
				t.Errorf("the pipeline's command before the refused reply read %q", v)
			}
			return err
		}},
		{"SCAN", func() error { return c.Do(ctx, "SCAN", "0", "MATCH", key).Err() }},
		{"SUBSCRIBE", func() error { return ReceiveOnce(ctx, c.Subscribe(ctx, key)) }},
	}
}

// ReceiveOnce is the first reply of a subscription's, which it closes.
func ReceiveOnce(ctx context.Context, ps *redis.PubSub) error {
	_, err := ps.Receive(ctx)
	_ = ps.Close()
	return err
}

// CheckHostileDataReplies checks c, a client of a NewHostileNode: the
// legal large replies (BigString, BigArray) pass; then, for each of
// HostileReplies, each of calls(i's key, the reply) fails as check says,
// allocates at most 64 MiB, and a GET after it works.
func CheckHostileDataReplies(t *testing.T, ctx context.Context, c DataClient,
	calls func(t *testing.T, key string, h HostileReply) []HostileDataCall,
	check func(t *testing.T, call string, err error, h HostileReply)) {
	t.Helper()
	healthy := func(t *testing.T) {
		t.Helper()
		if v, err := c.Get(ctx, "k").Result(); err != nil || v != "ok" {
			t.Fatalf("a GET after: %q, %v", v, err)
		}
	}
	healthy(t)
	if v, err := c.Get(ctx, "big").Result(); err != nil || len(v) != BigString {
		t.Fatalf("GET of a %d-byte string: %d bytes, %v", BigString, len(v), err)
	}
	if v, err := c.LRange(ctx, "big", 0, -1).Result(); err != nil || len(v) != BigArray {
		t.Fatalf("LRANGE of %d elements: %d, %v", BigArray, len(v), err)
	}
	for i, h := range HostileReplies() {
		t.Run(h.Name, func(t *testing.T) {
			for _, call := range calls(t, HostileKey(i), h) {
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				err := call.Run()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				check(t, call.Name, err, h)
				if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
					t.Errorf("%s: %d MiB allocated", call.Name, grew>>20)
				}
				healthy(t)
			}
		})
	}
}
