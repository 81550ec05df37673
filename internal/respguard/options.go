package respguard

import (
	"context"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisopt"
)

// Guard makes o's connections bounded by this package (its default
// Limits), and returns o: for the connections rediskit opens for itself
// (to sentinels; its ROLE checks and probes of data nodes), whose replies
// a hostile or broken server could otherwise make the process allocate
// without bound, or crash it, in a goroutine the application cannot
// protect. It keeps o's Dialer, or dials as go-redis would: o.DialTimeout
// (go-redis's 5 s when zero), TLS with o.TLSConfig.
func Guard(o *redis.Options) *redis.Options {
	dial := o.Dialer
	if dial == nil {
		timeout := o.DialTimeout
		if timeout == 0 {
			timeout = 5 * time.Second
		}
		d := &net.Dialer{Timeout: timeout, KeepAlive: 5 * time.Minute}
		tlsConfig := o.TLSConfig
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			conn, err := d.DialContext(ctx, network, addr)
			if err != nil || tlsConfig == nil {
				return conn, err
			}
			return redisopt.Handshake(ctx, conn, tlsConfig, addr)
		}
	}
	o.Dialer = WrapDialer(dial, Limits{})
	return o
}
