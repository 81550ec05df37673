package guard

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/safe"
)

// Defaults of HealthConfig and MonitorConfig.
const (
	DefaultProbeKey        = "health:write"
	DefaultProbeTTL        = 60 * time.Second
	DefaultMonitorInterval = 5 * time.Second
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=State -linecomment

// State is what a health check found.
type State int

const (
	// StateUnknown: no check has completed (a Monitor before its first).
	StateUnknown State = iota // unknown
	// StateWritable: PING answered and the write probe succeeded.
	StateWritable // writable
	// StateReachable: PING answered; no write probe was asked for.
	StateReachable // reachable
	// StateUnreachable: no connection (refused, reset, DNS, ...).
	StateUnreachable // unreachable
	// StateTimeout: no answer within the call limit (a stalled or
	// black-holed server).
	StateTimeout // timeout
	// StatePoolFull: every connection of the client was busy.
	StatePoolFull // pool-full
	// StateAuthFailed: the server refused the credentials.
	StateAuthFailed // auth-failed
	// StateReadOnly: PING answered, but the write probe got READONLY: a
	// replica (after a failover, the configured address may point at the
	// demoted primary).
	StateReadOnly // read-only
	// StateOutOfMemory: PING answered, but the write probe got OOM: the
	// server is at maxmemory under noeviction.
	StateOutOfMemory // out-of-memory
	// StateErrorReply: another error reply (LOADING, MASTERDOWN,
	// MISCONF, ...); see Report.Err.
	StateErrorReply // error-reply
)

var failureStates = map[Failure]State{
	FailureUnreachable: StateUnreachable,
	FailureTimeout:     StateTimeout,
	FailurePoolFull:    StatePoolFull,
	FailureAuth:        StateAuthFailed,
	FailureReadOnly:    StateReadOnly,
	FailureOutOfMemory: StateOutOfMemory,
	FailureReply:       StateErrorReply,
}

// Report is the result of one health check.
type Report struct {
	State State
	// Server is the guard's server name.
	Server string
	// At is when the check started.
	At time.Time
	// PingOK reports that PING answered PONG.
	PingOK bool
	// Ping is PING's latency, or how long it ran before it failed.
	Ping time.Duration
	// WriteProbed reports that the write probe ran (PING answered and a
	// write probe was asked for).
	WriteProbed bool
	// Write is the write probe's latency, or how long it ran before it
	// failed.
	Write time.Duration
	// Took is the whole check's duration.
	Took time.Duration
	// Err is the failure (a *RedisError), nil for StateWritable and
	// StateReachable.
	Err error
}

// Writable reports that the write probe succeeded.
func (r Report) Writable() bool { return r.State == StateWritable }

// String is a one-line summary: state, server and latencies.
func (r Report) String() string {
	var b strings.Builder
	b.WriteString(r.State.String())
	if r.Server != "" {
		b.WriteString(" ")
		b.WriteString(r.Server)
	}
	if r.State == StateUnknown {
		return b.String()
	}
	fmt.Fprintf(&b, " (ping %s %v", okText(r.PingOK), r.Ping.Round(time.Microsecond))
	if r.WriteProbed {
		fmt.Fprintf(&b, ", write %s %v", okText(r.State == StateWritable), r.Write.Round(time.Microsecond))
	}
	b.WriteString(")")
	return b.String()
}

func okText(ok bool) string {
	if ok {
		return "ok"
	}
	return "failed"
}

// HealthConfig configures a Checker.
type HealthConfig struct {
	// WriteProbe makes every check also SET a dedicated key, to tell a
	// writable primary from a server that answers PING but refuses writes
	// (a read-only replica, a primary out of memory).
	WriteProbe bool
	// ProbeKey is the probe's key under the guard's prefix (Guard.Key
	// with this name). Use a key the application may write and nothing
	// else uses. Default DefaultProbeKey ("health:write").
	ProbeKey string
	// ProbeTTL is the probe key's TTL. Default DefaultProbeTTL (60 s).
	ProbeTTL time.Duration
}

// Checker checks a Redis server: PING, then optionally a write probe.
// Each step runs as a guarded call (Guard.Call), so a check takes at most
// two call limits.
//
// A passing check says the server answered PING (and accepted one small
// SET) just now: it does not test EVAL, large writes or every Cluster
// slot, and it does not guarantee the next request.
type Checker struct {
	g     *Guard
	write bool
	key   string
	ttl   time.Duration
}

// NewChecker returns a Checker that uses g.
func NewChecker(g *Guard, cfg HealthConfig) (*Checker, error) {
	switch {
	case g == nil:
		return nil, configError("", "guard", "is nil")
	case cfg.ProbeTTL < 0:
		return nil, configError("HealthConfig", "ProbeTTL", "must not be negative")
	}
	if cfg.ProbeKey == "" {
		cfg.ProbeKey = DefaultProbeKey
	}
	if cfg.ProbeTTL == 0 {
		cfg.ProbeTTL = DefaultProbeTTL
	}
	return &Checker{g: g, write: cfg.WriteProbe, key: g.Key(cfg.ProbeKey), ttl: cfg.ProbeTTL}, nil
}

// ProbeKey is the write probe's full key.
func (c *Checker) ProbeKey() string { return c.key }

// Check runs one check. Redis's problems are in the Report; the error is
// non-nil only when ctx ended (the report is then incomplete).
func (c *Checker) Check(ctx context.Context) (Report, error) {
	r := Report{Server: c.g.server, At: time.Now()}

	err := c.g.Call(ctx, "health ping", func(ctx context.Context, cl redis.Cmdable) error {
		return cl.Ping(ctx).Err()
	})
	r.Ping = time.Since(r.At)
	if err != nil {
		return c.failed(ctx, r, err)
	}
	r.PingOK = true
	if !c.write {
		r.State = StateReachable
		r.Took = time.Since(r.At)
		return r, nil
	}

	r.WriteProbed = true
	began := time.Now()
	value := strconv.FormatInt(began.UnixMilli(), 10)
	err = c.g.Call(ctx, "health write probe", func(ctx context.Context, cl redis.Cmdable) error {
		return cl.Set(ctx, c.key, value, c.ttl).Err()
	})
	r.Write = time.Since(began)
	if err != nil {
		return c.failed(ctx, r, err)
	}
	r.State = StateWritable
	r.Took = time.Since(r.At)
	return r, nil
}

func (c *Checker) failed(ctx context.Context, r Report, err error) (Report, error) {
	r.Took = time.Since(r.At)
	if callerGaveUp(ctx, err) {
		return r, err
	}
	r.Err = err
	var re *RedisError
	if errors.As(err, &re) {
		r.State = failureStates[re.Kind]
	} else {
		r.State = StateErrorReply
	}
	return r, nil
}

// MonitorConfig configures a Monitor.
type MonitorConfig struct {
	// Interval is the time between the end of one check and the start of
	// the next. Default DefaultMonitorInterval (5 s).
	Interval time.Duration
	// OnReport, if set, receives every report, from the monitor's
	// goroutine (to update metrics, say). It must return quickly.
	OnReport func(Report)
}

// Monitor runs a Checker periodically and keeps the last report, so that
// readiness endpoints and metrics read a cached value instead of making a
// network call per probe.
//
// Where Redis belongs in probes: not in liveness, ever — restarting a
// healthy process does not bring back an external store, and a Redis
// outage would restart every replica of the service at once. Not in
// readiness either, for a service whose routes degrade (a catalog that
// falls back to the database while login and payment refuse on their own
// routes with a meaningful 503): an unready service gets no traffic at
// all, so the routes that still work would fail too, and clients would
// get the load balancer's generic error instead of the route's own, until
// the probes notice the recovery. Even for a service that needs Redis on
// every request, readiness only helps if other instances can reach a
// Redis this one cannot. Export the Monitor's state as a metric
// (degraded, read-only, ...) and alert on it instead.
type Monitor struct {
	checker  *Checker
	interval time.Duration
	onReport func(Report)

	mu   sync.Mutex
	last Report

	cancel    context.CancelFunc
	done      chan struct{}
	closeOnce sync.Once
}

// NewMonitor starts a Monitor: the first check runs at once, in the
// monitor's goroutine. Close stops it.
func NewMonitor(c *Checker, cfg MonitorConfig) (*Monitor, error) {
	switch {
	case c == nil:
		return nil, configError("", "checker", "is nil")
	case cfg.Interval < 0:
		return nil, configError("MonitorConfig", "Interval", "must not be negative")
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultMonitorInterval
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &Monitor{checker: c, interval: cfg.Interval, onReport: cfg.OnReport, cancel: cancel, done: make(chan struct{})}
	go m.run(ctx)
	return m, nil
}

func (m *Monitor) run(ctx context.Context) {
	defer close(m.done)
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		var r Report
		var err error
		if perr := safe.Call(func() { r, err = m.checker.Check(ctx) }); perr != nil {
			// A reply go-redis could not handle: the check says nothing
			// this round; the next one runs at the next interval.
			t.Reset(m.interval)
			continue
		}
		if err != nil {
			return // ctx ended: Close was called
		}
		m.mu.Lock()
		m.last = r
		m.mu.Unlock()
		if m.onReport != nil {
			// The caller's OnReport panicking must not end the process
			// from a goroutine the caller cannot protect: the monitor
			// goes on.
			_ = safe.Call(func() { m.onReport(r) })
		}
		t.Reset(m.interval)
	}
}

// Last returns the last completed check's report (State StateUnknown
// before the first). Its At says how old it is.
func (m *Monitor) Last() Report {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.last
}

// Close stops the monitor and waits for its goroutine, at most the time a
// check in progress takes to end (its call limit). It is safe to call
// twice.
func (m *Monitor) Close() error {
	m.closeOnce.Do(func() {
		m.cancel()
		<-m.done
	})
	return nil
}
