package guard

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rediskit/rediskit/internal/failure"
)

// LimitScript is the limiter's Lua script. It counts an attempt and, on
// the window's first attempt, starts the window, in one step: a crash
// between INCR and PEXPIRE cannot leave a counter without a TTL (the
// pattern of the Redis docs' rate limiter). A counter found without a TTL
// (written by something else) gets one too. It returns the count and the
// window's remaining milliseconds.
//
// KEYS[1] is the counter, ARGV[1] the window in milliseconds.
const LimitScript = `local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`

// LimitScriptSHA is the SHA1 digest of LimitScript, as EVALSHA takes it
// (a test checks it).
const LimitScriptSHA = "1e41cfc412e6f2421d73aaf3e2078ab84078a3e2"

// LimiterConfig configures a fixed-window rate limiter.
type LimiterConfig struct {
	// Name is the limiter's namespace: its counters are
	// <prefix>:<Name>:<id>. It also names it in errors and logs. Required.
	Name string
	// Limit attempts are allowed per id per Window. Required.
	Limit int64
	// Window starts at an id's first attempt and lasts this long (at least
	// 1 ms). Required.
	Window time.Duration
}

// Allowance is what a limiter counted for one attempt.
type Allowance struct {
	// Count is the number of attempts in the window, this one included.
	Count int64
	// Remaining is how many more attempts the window allows.
	Remaining int64
	// Reset is the time until the window ends.
	Reset time.Duration
}

// LimiterStats are a Limiter's counters since it was made.
type LimiterStats struct {
	Allowed     uint64 // attempts within the limit
	Rejected    uint64 // attempts over the limit (ErrTooManyRequests)
	Unavailable uint64 // attempts refused because Redis failed (ErrUnavailable)
}

// Limiter is a fail-closed rate limiter: Limit attempts per id per Window,
// counted in Redis from the id's first attempt. When Redis fails, the
// limit cannot be checked and the attempt is refused (ErrUnavailable),
// never let through.
//
// An attempt is never retried: if the reply is lost, the attempt may
// already have been counted, and a retry would count it twice. The one
// exception is a NOSCRIPT reply (the server does not have the script,
// after a restart, a failover or SCRIPT FLUSH): nothing ran, so the
// limiter loads the script and runs it again within the same call limit
// (by EVAL when the load reached another node than the key's, as a
// cluster client's may).
type Limiter struct {
	g        *Guard
	name     string
	limit    int64
	window   time.Duration
	windowMS string
	op       string

	allowed, rejected, unavailable atomic.Uint64
}

// NewLimiter returns a Limiter that uses g. It does not contact Redis: the
// script is loaded when the first EVALSHA finds it missing.
func NewLimiter(g *Guard, cfg LimiterConfig) (*Limiter, error) {
	switch {
	case g == nil:
		return nil, configError("", "guard", "is nil")
	case cfg.Name == "":
		return nil, configError("LimiterConfig", "Name", "is required (it is the counters' namespace)")
	case cfg.Limit <= 0:
		return nil, configError("LimiterConfig", "Limit", "must be positive")
	case cfg.Window < time.Millisecond:
		return nil, configError("LimiterConfig", "Window", "must be at least 1ms")
	}
	return &Limiter{
		g:        g,
		name:     cfg.Name,
		limit:    cfg.Limit,
		window:   cfg.Window,
		windowMS: strconv.FormatInt(cfg.Window.Milliseconds(), 10),
		op:       cfg.Name + " limit",
	}, nil
}

// Key is the Redis key of id's counter.
func (l *Limiter) Key(id string) string { return l.g.Key(l.name, id) }

// Allow counts an attempt for id. It returns nil when the attempt is
// within the limit; a *LimitError (ErrTooManyRequests, with RetryAfter)
// when it is over; an *UnavailableError (ErrUnavailable) when Redis failed;
// the caller's ctx.Err() when ctx ended. The Allowance is filled whenever
// Redis answered.
func (l *Limiter) Allow(ctx context.Context, id string) (Allowance, error) {
	if id == "" {
		return Allowance{}, fmt.Errorf("guard: %s: empty id", l.name)
	}
	key := l.Key(id)
	var count, ttl int64
	err := l.g.Call(ctx, l.op, func(ctx context.Context, c redis.Cmdable) error {
		var err error
		count, ttl, err = l.run(ctx, c, key)
		return err
	})
	if err != nil {
		if callerGaveUp(ctx, err) {
			return Allowance{}, err
		}
		l.unavailable.Add(1)
		l.g.log.Warn("guard: rate limit cannot be checked; refusing", "limiter", l.name, "err", err)
		return Allowance{}, &UnavailableError{Name: l.name, Reason: ReasonRedis, Err: err}
	}
	a := Allowance{Count: count, Remaining: max(l.limit-count, 0), Reset: time.Duration(ttl) * time.Millisecond}
	if count > l.limit {
		l.rejected.Add(1)
		return a, &LimitError{Name: l.name, Limit: l.limit, Window: l.window, Count: count, RetryAfter: a.Reset}
	}
	l.allowed.Add(1)
	return a, nil
}

// run runs the script by EVALSHA, loading it once if the server lacks it.
func (l *Limiter) run(ctx context.Context, c redis.Cmdable, key string) (count, ttl int64, err error) {
	keys := []string{key}
	res, err := c.EvalSha(ctx, LimitScriptSHA, keys, l.windowMS).Int64Slice()
	if failure.NoScript(err) {
		if err := c.ScriptLoad(ctx, LimitScript).Err(); err != nil {
			return 0, 0, err
		}
		res, err = c.EvalSha(ctx, LimitScriptSHA, keys, l.windowMS).Int64Slice()
		if failure.NoScript(err) {
			// A cluster client sends SCRIPT LOAD (it has no key) to a node
			// of its choosing, not always the key's. Nothing has run: EVAL
			// runs the script on the key's node, which caches it.
			res, err = c.Eval(ctx, LimitScript, keys, l.windowMS).Int64Slice()
		}
	}
	if err != nil {
		return 0, 0, err
	}
	if len(res) != 2 {
		return 0, 0, fmt.Errorf("guard: %s: unexpected script reply %v", l.name, res)
	}
	return res[0], res[1], nil
}

// Stats returns the limiter's counters.
func (l *Limiter) Stats() LimiterStats {
	return LimiterStats{Allowed: l.allowed.Load(), Rejected: l.rejected.Load(), Unavailable: l.unavailable.Load()}
}
