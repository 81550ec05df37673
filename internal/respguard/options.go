package respguard

import (
	"context"
	"net"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisopt"
)

// Guard makes o's connections bounded by this package (its default
// Limits, the control path's), and returns o: for the connections
// rediskit opens for itself (to sentinels; its ROLE checks and probes of
// data nodes), whose replies a hostile or broken server could otherwise
// make the process allocate without bound, or crash it, in a goroutine the
// application cannot protect. It keeps o's Dialer, or dials as go-redis
// would: o.DialTimeout (go-redis's 5 s when zero), TLS with o.TLSConfig.
func Guard(o *redis.Options) *redis.Options { return guard(o, Limits{}) }

// GuardData is Guard for the data path, the connections that carry the
// caller's own commands: lim with the data path's defaults (ForData) for
// the fields not set. Every client rediskit builds for the caller's
// commands goes through it, after the caller's adjustments of the options
// (a NodeOptions hook that replaces the Dialer is wrapped too).
func GuardData(o *redis.Options, lim Limits) *redis.Options { return guard(o, lim.ForData()) }

func guard(o *redis.Options, lim Limits) *redis.Options {
	o.Dialer = WrapDialer(baseDialer(o), lim)
	return o
}

// baseDialer is o's Dialer, or, when it has none, a dialer that dials as
// go-redis's own (redis.NewDialer) would: o.DialTimeout (go-redis's 5 s
// when zero) bounding the dial and the TLS handshake with o.TLSConfig,
// and go-redis's TCP keep-alive (probes after 30 s idle, 3 of them 5 s
// apart), with the caller's context bounding it too.
func baseDialer(o *redis.Options) DialFunc {
	if o.Dialer != nil {
		return o.Dialer
	}
	timeout := o.DialTimeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	d := &net.Dialer{Timeout: timeout, KeepAliveConfig: net.KeepAliveConfig{
		Enable: true, Idle: 30 * time.Second, Interval: 5 * time.Second, Count: 3}}
	tlsConfig := o.TLSConfig
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if tlsConfig == nil {
			return d.DialContext(ctx, network, addr)
		}
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		conn, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return redisopt.Handshake(ctx, conn, tlsConfig, addr)
	}
}
