package guard

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/configerr"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisopt"
)

// DefaultCallLimit is the total time a guarded Redis call may take when
// Config.CallLimit (or ClientConfig.CallLimit) is zero.
const DefaultCallLimit = 150 * time.Millisecond

// Config configures a Guard around an existing client (New).
type Config struct {
	// KeyPrefix is put in front of every key the guard and its components
	// use, followed by ':' (prefix "shop" gives "shop:price:sku-1").
	// Required: it must not be empty, end with ':' or contain spaces or
	// control characters.
	KeyPrefix string
	// CallLimit bounds every guarded call, whatever the client's own
	// timeouts. Default DefaultCallLimit (150 ms).
	CallLimit time.Duration
	// Server names the Redis server in errors and reports. Default: the
	// client's Addr when the client has an Options method (as *redis.Client
	// does), else empty.
	Server string
	// Logger receives the components' warnings (a cache read that failed, a
	// write-back that failed, ...). Default: discarded.
	Logger *slog.Logger
}

// Guard holds what every component shares: the client, the key prefix,
// the call limit and the logger. It is safe for concurrent use.
type Guard struct {
	client redis.Cmdable
	closer io.Closer // the client, when Open created it; nil when New wrapped it
	prefix string
	limit  time.Duration
	server string
	log    *slog.Logger

	closeOnce sync.Once
	closeErr  error
}

// optionser is what *redis.Client (and go-redis's failover client) has.
type optionser interface{ Options() *redis.Options }

// New returns a Guard around client, which may be a *redis.Client, our
// Sentinel client or any other redis.Cmdable (every redis.UniversalClient
// is one). The guard does not own the client: Close leaves it open.
//
// The call limit is enforced through the context deadline the guard hands
// to the client, so the client must honour context deadlines: a
// *redis.Client needs Options.ContextTimeoutEnabled. New refuses a client
// that says it does not, because its calls would then be bounded by the
// client's socket timeouts instead of CallLimit. New also refuses a client
// that retries commands (a *redis.Client's MaxRetries defaults to 3; set
// it to -1): go-redis re-sends a command whose reply was lost, so a
// limiter attempt would count twice and an admission would refuse its own
// caller; and one that retries dials (DialerRetries 0 means 5 attempts;
// set it to 1), so that a dead Redis fails a call at once. These are
// rediskit's client policy (the one every client rediskit builds runs
// with): clients from ClientConfig, redisurl.Config.Options and our Sentinel
// and multidb clients meet it.
func New(client redis.Cmdable, cfg Config) (*Guard, error) {
	if client == nil {
		return nil, configError("", "client", "is nil")
	}
	if err := checkPrefix("Config", cfg.KeyPrefix); err != nil {
		return nil, err
	}
	if cfg.CallLimit < 0 {
		return nil, configError("Config", "CallLimit", "must not be negative")
	}
	if cfg.CallLimit == 0 {
		cfg.CallLimit = DefaultCallLimit
	}
	if o, ok := client.(optionser); ok {
		opt := o.Options()
		if vs := redisopt.Check(opt); len(vs) > 0 {
			return nil, configError("", "client", vs.Explain(clientConsequence, "build the client with guard.ClientConfig or redisurl.Config.Options"))
		}
		if cfg.Server == "" && opt != nil {
			cfg.Server = opt.Addr
		}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Guard{
		client: client,
		prefix: cfg.KeyPrefix,
		limit:  cfg.CallLimit,
		server: cfg.Server,
		log:    cfg.Logger,
	}, nil
}

// clientConsequence says what each departure from the client policy
// would break here.
var clientConsequence = map[string]string{
	"MaxRetries":            "a limiter attempt would count twice, an admission would refuse its own caller",
	"DialerRetries":         "a call to a dead Redis would wait out the dial attempts up to CallLimit instead of failing at once",
	"ContextTimeoutEnabled": "CallLimit cannot bound its calls",
}

// ConfigError reports a setting the package cannot use: "guard:
// <Struct>.<Field> <problem>" (Struct is Config, ClientConfig,
// LimiterConfig, ...; empty for a nil argument). It never contains a
// secret.
type ConfigError = configerr.Error

// configError reports field of the configuration type strct ("" for a
// constructor's argument).
func configError(strct, field, problem string) *ConfigError {
	return &ConfigError{Package: "guard", Struct: strct, Field: field, Problem: problem}
}

// checkPrefix checks the KeyPrefix field of strct (Config or ClientConfig).
func checkPrefix(strct, p string) error {
	switch {
	case p == "":
		return configError(strct, "KeyPrefix", `is required (for example "shop"), so keys of different applications cannot collide`)
	case strings.HasSuffix(p, ":"):
		return configError(strct, "KeyPrefix", `must not end with ':' (the guard adds the separator)`)
	case strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return configError(strct, "KeyPrefix", "must not contain spaces or control characters")
	}
	return nil
}

// Client is the client the guard calls.
func (g *Guard) Client() redis.Cmdable { return g.client }

// KeyPrefix is the prefix every key starts with (without the separator).
func (g *Guard) KeyPrefix() string { return g.prefix }

// CallLimit is the limit of every guarded call.
func (g *Guard) CallLimit() time.Duration { return g.limit }

// Server is the server's name used in errors and reports.
func (g *Guard) Server() string { return g.server }

// Key joins the prefix and parts with ':': with prefix "shop",
// Key("price", "sku-1") is "shop:price:sku-1". Every component builds its
// keys with it; use it for your own commands too.
func (g *Guard) Key(parts ...string) string {
	n := len(g.prefix)
	for _, p := range parts {
		n += 1 + len(p)
	}
	var b strings.Builder
	b.Grow(n)
	b.WriteString(g.prefix)
	for _, p := range parts {
		b.WriteByte(':')
		b.WriteString(p)
	}
	return b.String()
}

// Call runs op under the guard's call limit: op receives a context whose
// deadline is at most CallLimit away, and the client it should use.
//
// What Call returns:
//   - nil, or redis.Nil unchanged (a missing key is an answer, not a
//     failure);
//   - the caller's own ctx.Err() when ctx ended before or during the call:
//     a cancellation is never reported as a Redis failure (a caller
//     deadline that expires first counts as the caller's, too, and
//     ctx.Err() is normally set by the time Call returns it; the error
//     is never a *RedisError, which is how to tell it from Redis's);
//   - else a *RedisError (matching ErrUnavailable) for any failure: the
//     limit was hit, the connection failed, or the server replied with an
//     error.
//
// A cancellation is seen when the call returns: go-redis interrupts a
// socket read at a deadline, not at a cancellation, so a call that waits
// for a reply returns at the latest at CallLimit.
//
// Call never retries. A command that was sent before the limit hit may
// still run on the server: a counter may have counted, a key may have been
// set. Choose the limit from the request's deadline: a route that reads,
// falls back and writes back spends up to two limits on Redis.
func (g *Guard) Call(ctx context.Context, op string, fn func(ctx context.Context, c redis.Cmdable) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, g.limit)
	err := fn(cctx, g.client)
	end := time.Now()
	cancel()
	if err == nil || errors.Is(err, redis.Nil) {
		return err
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if ok, cerr := callerDeadlinePassed(ctx, end); ok {
		return cerr
	}
	dl, _ := cctx.Deadline()
	return g.failure(op, err, end.Sub(start), !end.Before(dl))
}

// callerTimerGrace bounds the wait for a context's own timer after its
// deadline has passed by the clock.
const callerTimerGrace = 10 * time.Millisecond

// callerDeadlinePassed reports whether ctx's deadline had passed at t: a
// socket whose deadline is the context's can report it a moment before the
// context's own timer fires, so a failure at t is the caller's, not
// Redis's. It then waits that moment (at most callerTimerGrace: a context
// whose Done never closes, or whose timer runs on a clock that was stepped,
// must not hold the call) so that ctx.Err() is set when the caller's
// component tests it, and returns ctx.Err(), or context.DeadlineExceeded
// if the timer has not fired by then.
func callerDeadlinePassed(ctx context.Context, t time.Time) (bool, error) {
	dl, ok := ctx.Deadline()
	if !ok || t.Before(dl) {
		return false, nil
	}
	grace := time.NewTimer(callerTimerGrace)
	defer grace.Stop()
	select {
	case <-ctx.Done():
		return true, ctx.Err()
	case <-grace.C:
		return true, context.DeadlineExceeded
	}
}

// callerGaveUp reports whether err, from Call or a bounded load, is the
// caller giving up (its context cancelled or past its deadline) rather
// than a failure of Redis or the loader: ctx has ended, or err is the bare
// context error Call and loadBounded return when the caller's deadline
// passed by the clock before ctx's own timer fired
// (failure.BareContextError). A failure that wraps a context error (a
// Redis timeout, a loader's own deadline) is not bare, and stays a
// failure.
func callerGaveUp(ctx context.Context, err error) bool {
	return ctx.Err() != nil || failure.BareContextError(err)
}

func (g *Guard) failure(op string, err error, elapsed time.Duration, limitHit bool) *RedisError {
	kind := classify(err, limitHit)
	if failure.ContextError(err) {
		// Our own limit's context error: keep the text, not the identity,
		// so errors.Is(err, context.DeadlineExceeded) stays the caller's.
		err = errors.New(err.Error())
	}
	return &RedisError{Op: op, Server: g.server, Kind: kind, Elapsed: elapsed, Limit: g.limit, Err: err}
}

// Close closes the client if the guard created it (Open); a guard made by
// New leaves its client to its owner. Close is safe to call twice.
func (g *Guard) Close() error {
	g.closeOnce.Do(func() {
		if g.closer != nil {
			g.closeErr = g.closer.Close()
		}
	})
	return g.closeErr
}

// String describes the guard without secrets.
func (g *Guard) String() string {
	return fmt.Sprintf("guard.Guard{server: %q, prefix: %q, limit: %v}", g.server, g.prefix, g.limit)
}
