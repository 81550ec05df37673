package redisopt

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The policy's retry settings, as go-redis options take them.
const (
	// MaxRetries -1: no command is re-sent by go-redis (0 would mean 3
	// retries, go-redis's default).
	MaxRetries = -1
	// DialerRetries 1: one dial attempt per connection (go-redis treats 0
	// or less as 5 attempts, 100 ms apart).
	DialerRetries = 1
)

// Inner sets, on o, the settings every go-redis client rediskit creates
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
//
// The last two save round trips; the first three are what Check verifies.
func Inner(o *redis.Options) *redis.Options {
	o.MaxRetries = MaxRetries
	o.DialerRetries = DialerRetries
	o.ContextTimeoutEnabled = true
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	return o
}

// InnerCluster sets Inner's settings on the options of a go-redis
// ClusterClient, which passes them to the client of every node, and
// returns o. (It leaves MaxRedirects to the caller: go-redis's
// ClusterClient follows redirects and re-sends after network errors within
// that one bound.)
func InnerCluster(o *redis.ClusterOptions) *redis.ClusterOptions {
	p := Inner(&redis.Options{})
	o.MaxRetries = p.MaxRetries
	o.DialerRetries = p.DialerRetries
	o.ContextTimeoutEnabled = p.ContextTimeoutEnabled
	o.DisableIdentity = p.DisableIdentity
	o.MaintNotificationsConfig = p.MaintNotificationsConfig
	return o
}

// Violation is one way a client's options depart from the policy.
type Violation struct {
	// Field is the redis.Options field: "MaxRetries", "DialerRetries" or
	// "ContextTimeoutEnabled".
	Field string
	// Problem says what the client does, with the value it has, e.g.
	// "retries commands (MaxRetries 3; go-redis's default is 3)".
	Problem string
}

// Violations are what Check found, in field order.
type Violations []Violation

// String joins the problems with "; ".
func (vs Violations) String() string {
	parts := make([]string, len(vs))
	for i, v := range vs {
		parts[i] = v.Problem
	}
	return strings.Join(parts, "; ")
}

// Has reports whether field is among the violations.
func (vs Violations) Has(field string) bool {
	for _, v := range vs {
		if v.Field == field {
			return true
		}
	}
	return false
}

// Fix is the settings that satisfy the policy, for error messages.
const Fix = "set MaxRetries -1, DialerRetries 1 and ContextTimeoutEnabled"

// Explain describes a refused client for an error message: every
// violation with what it would break for the refusing package
// (consequence, by Field; a field without one is left unexplained), then
// Fix and alternative (how else to get a client that meets the policy).
func (vs Violations) Explain(consequence map[string]string, alternative string) string {
	var b strings.Builder
	for i, v := range vs {
		if i > 0 {
			b.WriteString("; it ")
		}
		b.WriteString(v.Problem)
		if c := consequence[v.Field]; c != "" {
			b.WriteString(" (here: " + c + ")")
		}
	}
	b.WriteString("; " + Fix + ", or " + alternative)
	return b.String()
}

// Check reports every way opt lets go-redis act on its own where rediskit
// must decide: it retries commands, retries dials, or ignores context
// deadlines. nil means none. opt is what a live client's Options()
// returns, which go-redis has normalized: MaxRetries -1 reads 0 and 0
// reads 3; DialerRetries 0 reads 5. (Raw options cannot be checked the
// same way, since a raw MaxRetries 0 means 3 retries; build the client
// first, or use Inner.)
//
// A retried command may already have run (a counter counts twice, a write
// lands twice, an admission refuses its own caller); retried dials make a
// dead server cost several attempts instead of one; a client that ignores
// context deadlines cannot be bounded by the caller's limits.
func Check(opt *redis.Options) Violations {
	if opt == nil {
		return nil
	}
	var vs Violations
	if opt.MaxRetries > 0 {
		vs = append(vs, Violation{Field: "MaxRetries",
			Problem: fmt.Sprintf("retries commands (MaxRetries %d; go-redis's default is 3), and a retried command may already have run", opt.MaxRetries)})
	}
	if opt.DialerRetries > DialerRetries {
		vs = append(vs, Violation{Field: "DialerRetries",
			Problem: fmt.Sprintf("retries dials (%d attempts; DialerRetries 0 means 5), so a dead server costs several attempts instead of one", opt.DialerRetries)})
	}
	if !opt.ContextTimeoutEnabled {
		vs = append(vs, Violation{Field: "ContextTimeoutEnabled",
			Problem: "ignores context deadlines (ContextTimeoutEnabled is false), so no deadline bounds its socket reads and writes"})
	}
	return vs
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
