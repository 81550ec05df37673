package oncewrite

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/exactlyonce"
)

// BenchmarkWrap is the client's cost of making a write exactly-once.
func BenchmarkWrap(b *testing.B) {
	w, err := New(&exactlyonce.Config{}, 0, classify.New(), nil)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	cmd := redis.NewStatusCmd(ctx, "set", "user:{42}:name", "v")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := w.Wrap(ctx, cmd); err != nil {
			b.Fatal(err)
		}
	}
}
