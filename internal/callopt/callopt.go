package callopt

import (
	"context"

	"github.com/rediskit/rediskit/redisurl"
)

// key is the type of this package's context keys: unexported, so no other
// package can set or read them except through the functions below.
type key int

const (
	readFromKey key = iota
	durableKey
)

// WithReadFrom returns ctx carrying rf as the read preference of the calls
// made with it. An empty rf means the client's own ReadFrom.
func WithReadFrom(ctx context.Context, rf redisurl.ReadFrom) context.Context {
	return context.WithValue(ctx, readFromKey, rf)
}

// ReadFrom returns the read preference ctx carries, or def when it carries
// none (or an empty one).
func ReadFrom(ctx context.Context, def redisurl.ReadFrom) redisurl.ReadFrom {
	if rf, ok := ctx.Value(readFromKey).(redisurl.ReadFrom); ok && rf != "" {
		return rf
	}
	return def
}

// WithDurable returns ctx saying whether the writes made with it are
// durable (confirmed by WAIT before they are acknowledged).
func WithDurable(ctx context.Context, durable bool) context.Context {
	return context.WithValue(ctx, durableKey, durable)
}

// Durable reports whether ctx's writes are durable: what WithDurable set,
// or def when it set nothing.
func Durable(ctx context.Context, def bool) bool {
	if d, ok := ctx.Value(durableKey).(bool); ok {
		return d
	}
	return def
}
