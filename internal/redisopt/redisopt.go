// Package redisopt applies rediskit's policy to the go-redis clients it
// creates for itself: the layer above decides what is retried and how long
// a call may take, so go-redis must not retry, must honour context
// deadlines, and must not send commands of its own on connect.
package redisopt

import (
	"context"
	"crypto/tls"
	"net"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Inner sets, on o, the settings every inner go-redis client of rediskit
// runs with, and returns o:
//
//   - MaxRetries -1: no command is re-sent by go-redis.
//   - DialerRetries 1: one dial attempt (go-redis treats 0 as 5 attempts,
//     100 ms apart).
//   - ContextTimeoutEnabled: a context deadline bounds socket reads and
//     writes too (go-redis ignores it otherwise).
//   - DisableIdentity: no CLIENT SETINFO on connect.
//   - Maintenance notifications off: a Redis Enterprise feature whose
//     "auto" mode costs a command per connection and starts a background
//     goroutine per client.
func Inner(o *redis.Options) *redis.Options {
	o.MaxRetries = -1
	o.DialerRetries = 1
	o.ContextTimeoutEnabled = true
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return o
}

// Handshake runs a TLS client handshake on conn for addr, bounded by ctx.
// A config without ServerName is cloned with the host of addr, as go-redis
// does for its own dialer. On failure conn is closed.
func Handshake(ctx context.Context, conn net.Conn, cfg *tls.Config, addr string) (*tls.Conn, error) {
	if cfg.ServerName == "" {
		cfg = cfg.Clone()
		if host, _, err := net.SplitHostPort(addr); err == nil {
			cfg.ServerName = host
		}
	}
	tc := tls.Client(conn, cfg)
	if err := tc.HandshakeContext(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	return tc, nil
}
