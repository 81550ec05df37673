package guard_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
)

// A client from ClientConfig bounds its replies: a server answering a GET
// with a header no Redis sends fails that call with a *ReplyLimitError
// naming the server and the limit, and the next call works; a 20 MiB
// string (past the control path's 16 MiB) passes.
func TestClientConfigBoundsReplies(t *testing.T) {
	node := testkit.NewHostileNode(t, nil)
	// Timeouts with room for a loaded machine: the check is on the error.
	g, err := guard.Open(guard.ClientConfig{Addr: node.Addr(), KeyPrefix: "t", DialTimeout: 2 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: 10 * time.Second, CallLimit: 20 * time.Second,
		ReplyLimits: guard.ReplyLimits{MaxReplyElements: testkit.HostileFloodLimit}})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	get := func(key string) (string, error) {
		var v string
		err := g.Call(ctx, "get", func(ctx context.Context, c redis.Cmdable) error {
			// Do reads a reply whole: where go-redis allocates what the
			// headers declare and recurses into nesting.
			cmd := redis.NewCmd(ctx, "GET", key)
			_ = c.(interface {
				Process(context.Context, redis.Cmder) error
			}).Process(ctx, cmd)
			r, err := cmd.Text()
			v = r
			return err
		})
		return v, err
	}
	if v, err := get("big"); err != nil || len(v) != testkit.BigString {
		t.Fatalf("GET of a %d-byte string: %d bytes, %v", testkit.BigString, len(v), err)
	}
	for i, h := range testkit.HostileReplies() {
		_, err := get(testkit.HostileKey(i))
		var le *guard.ReplyLimitError
		if !errors.As(err, &le) || le.Addr != node.Addr() || le.What != h.What || !strings.Contains(err.Error(), "the limit is") {
			t.Errorf("%s: %v; want a *ReplyLimitError on %s for %q", h.Name, err, node.Addr(), h.What)
		}
		if v, err := get("k"); err != nil || v != "ok" {
			t.Fatalf("%s: a GET after: %q, %v", h.Name, v, err)
		}
	}
}
