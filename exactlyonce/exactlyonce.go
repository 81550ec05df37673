package exactlyonce

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Defaults of Config's fields.
const (
	// DefaultTTL keeps a write's token at least one minute: far longer
	// than any client's write hold (sentinel's FailoverHold, cluster's
	// WriteHoldTimeout: seconds), the window in which the client sends a
	// write again, and than the time a stalled server takes to be
	// replaced. At 10,000 writes a second it holds at least 600,000 tokens
	// (a token key, which holds 16, expires a minute after its last: 13 to
	// 80 MB, BENCHMARKS.md, "Exactly-once writes").
	DefaultTTL = time.Minute
	// DefaultKeyPrefix starts every token key. A user limited by ACL key
	// patterns needs write access to it (%RW~rkx1:*), and to run HGET, HSET
	// and PEXPIRE there.
	DefaultKeyPrefix = "rkx1:"
	// MaxArgs is the most arguments (the name included) a command made
	// exactly-once may have: the script hands them to redis.pcall through
	// Lua's stack, which holds about 8,000.
	MaxArgs = 7000
)

// Config turns exactly-once writes on for a client (sentinel.Config,
// cluster.Config, rediskit.Config: ExactlyOnce). The zero value is the
// defaults.
type Config struct {
	// PerCall makes only the writes whose context says With(ctx, true)
	// exactly-once. Without it every write that can be is (and With(ctx,
	// false) opts a call out).
	PerCall bool
	// TTL is how long, at least, the server keeps a write's token and
	// reply after it ran (a token key, which holds 16, expires TTL after
	// its last). It must be at least twice the client's write hold (the
	// client refuses a shorter one). Default DefaultTTL.
	TTL time.Duration
	// KeyPrefix starts every token key; the application must not write
	// keys that start with it. Default DefaultKeyPrefix.
	KeyPrefix string
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	if c.TTL == 0 {
		c.TTL = DefaultTTL
	}
	if c.KeyPrefix == "" {
		c.KeyPrefix = DefaultKeyPrefix
	}
	return c
}

// Check returns an error for a configuration a client with a write hold of
// hold cannot keep its promise with: a token must outlive every re-send.
func (c Config) Check(hold time.Duration) error {
	c = c.WithDefaults()
	switch {
	case c.TTL < time.Millisecond:
		return fmt.Errorf("exactlyonce: TTL %v is below a millisecond", c.TTL)
	case c.TTL < 2*hold:
		return fmt.Errorf("exactlyonce: TTL %v is shorter than twice the client's write hold (%v): a write sent again near the end of the hold could find its token gone and run twice; raise TTL or shorten the hold", c.TTL, hold)
	}
	return nil
}

type ctxKey struct{}

// With returns ctx saying whether the writes made with it are
// exactly-once: on, even on a client whose Config says PerCall (a write
// that cannot be is then refused before it is sent, with an
// *UnsupportedError); off, plain writes on any client.
func With(ctx context.Context, on bool) context.Context {
	return context.WithValue(ctx, ctxKey{}, on)
}

// Asked returns what With set on ctx, and whether it set anything.
func Asked(ctx context.Context) (on, set bool) {
	on, set = ctx.Value(ctxKey{}).(bool)
	return on, set
}

// ErrUnsupported matches every *UnsupportedError.
var ErrUnsupported = errors.New("exactlyonce: not supported")

// UnsupportedError is a write that a call asked to be exactly-once
// (With(ctx, true)) and cannot be: nothing was sent.
type UnsupportedError struct {
	// Command is the command's name ("blpop").
	Command string
	// Why says why ("a blocking command", "a transaction", "the client
	// has no ExactlyOnce config").
	Why string
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("exactlyonce: %s cannot be made exactly-once (%s); nothing was sent: run it without exactlyonce.With(ctx, true), and look before running it again after an error", e.Command, e.Why)
}

// Is makes errors.Is(err, ErrUnsupported) true.
func (e *UnsupportedError) Is(target error) bool { return target == ErrUnsupported }

// RefusedError is a server that does not let the client run its
// exactly-once script (scripting disabled or denied by ACL, no write
// access to the token keys): the exactly-once writes meant for it are not
// sent. Fix the server's ACL (the user needs +evalsha +script|load, and
// +hget +hset +pexpire on %RW~<KeyPrefix>*, the commands the script runs
// on its token keys), or turn ExactlyOnce off.
type RefusedError struct {
	// Addr is the server.
	Addr string
	// Err is its reply.
	Err error
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("exactlyonce: %s refuses the exactly-once script, so exactly-once writes are not sent there (allow EVALSHA, SCRIPT LOAD and writes to the token keys in its ACL, or turn ExactlyOnce off): %v", e.Addr, e.Err)
}

func (e *RefusedError) Unwrap() error { return e.Err }

// TokenKeyError is a write whose token key holds a value rediskit did not
// write there: the application (or another tool) wrote a key under the
// token prefix. The write did not run.
type TokenKeyError struct {
	// Key is the token key.
	Key string
}

func (e *TokenKeyError) Error() string {
	return fmt.Sprintf("exactlyonce: token key %q holds a value rediskit did not write; the write did not run: keep the application's keys out of the token prefix (Config.KeyPrefix)", e.Key)
}
