package rediskitotel

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rediskit/rediskit/guard"
)

// RegisterCache reports a guard.Cache's counters (read from its Stats when
// metrics are collected) under name:
//
//	rediskit.guard.cache.reads{rediskit.result=hit|miss|error|canceled}
//	rediskit.guard.cache.fills{rediskit.result=loaded|shared|refused|error|canceled}
//	rediskit.guard.cache.fallbacks
//	rediskit.guard.redis.failures{rediskit.name, rediskit.component=cache}
//
// Each lookup counts once in reads (how its read of Redis ended: the
// series add up to the lookups), and once in fills if its read did not
// hit (how it was then served: the series add up to reads miss + error).
// fallbacks counts the fills (loaded or shared) of lookups whose read
// failed.
//
// stats is the cache's Stats method (guard.Cache is generic).
func (m *Metrics) RegisterCache(name string, stats func() guard.CacheStats) (metric.Registration, error) {
	reads, err1 := m.meter.Int64ObservableCounter("rediskit.guard.cache.reads", metric.WithUnit("{lookup}"),
		metric.WithDescription("Cache lookups by how their read of Redis ended: hit, miss, error (Redis failed), canceled (the caller's context ended)."))
	fills, err2 := m.meter.Int64ObservableCounter("rediskit.guard.cache.fills", metric.WithUnit("{lookup}"),
		metric.WithDescription("Cache lookups that did not hit, by how they were served: loaded (their own load), shared (another lookup's load), refused (loader busy or timed out), error (the loader failed), canceled (the caller's context ended)."))
	fallbacks, err3 := m.meter.Int64ObservableCounter("rediskit.guard.cache.fallbacks", metric.WithUnit("{lookup}"),
		metric.WithDescription("Cache lookups served by a load because their read of Redis failed."))
	failures, err4 := m.redisFailures()
	if err := firstErr(err1, err2, err3, err4); err != nil {
		return nil, err
	}
	base := []attribute.KeyValue{redisSystem, AttrName.String(name)}
	return m.observe(func(_ context.Context, o metric.Observer) error {
		s := stats()
		for _, r := range []struct {
			counter metric.Int64ObservableCounter
			result  string
			n       uint64
		}{
			{reads, "hit", s.Hits}, {reads, "miss", s.Misses}, {reads, "error", s.ReadFailures}, {reads, "canceled", s.ReadsCanceled},
			{fills, "loaded", s.Loaded}, {fills, "shared", s.Shared}, {fills, "refused", s.Refusals},
			{fills, "error", s.LoadFailures}, {fills, "canceled", s.LoadsCanceled},
		} {
			o.ObserveInt64(r.counter, count(r.n), metric.WithAttributes(append(base, AttrResult.String(r.result))...))
		}
		o.ObserveInt64(fallbacks, count(s.Fallbacks), metric.WithAttributes(base...))
		o.ObserveInt64(failures, count(s.RedisFailures), metric.WithAttributes(append(base, attribute.String("rediskit.component", "cache"))...))
		return nil
	}, reads, fills, fallbacks, failures)
}

// RegisterLimiter reports a guard.Limiter's attempts under name:
//
//	rediskit.guard.limiter.attempts{rediskit.result=allowed|limited|unavailable}
//	rediskit.guard.redis.failures{rediskit.name, rediskit.component=limiter}
func (m *Metrics) RegisterLimiter(name string, l *guard.Limiter) (metric.Registration, error) {
	attempts, err1 := m.meter.Int64ObservableCounter("rediskit.guard.limiter.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Rate-limited attempts by result: allowed, limited (429), unavailable (Redis failed: 503)."))
	failures, err2 := m.redisFailures()
	if err := firstErr(err1, err2); err != nil {
		return nil, err
	}
	base := []attribute.KeyValue{redisSystem, AttrName.String(name)}
	return m.observe(func(_ context.Context, o metric.Observer) error {
		s := l.Stats()
		o.ObserveInt64(attempts, count(s.Allowed), metric.WithAttributes(append(base, AttrResult.String("allowed"))...))
		o.ObserveInt64(attempts, count(s.Rejected), metric.WithAttributes(append(base, AttrResult.String("limited"))...))
		o.ObserveInt64(attempts, count(s.Unavailable), metric.WithAttributes(append(base, AttrResult.String("unavailable"))...))
		o.ObserveInt64(failures, count(s.Unavailable), metric.WithAttributes(append(base, attribute.String("rediskit.component", "limiter"))...))
		return nil
	}, attempts, failures)
}

// RegisterGate reports a guard.Gate's admissions under name:
//
//	rediskit.guard.admission.attempts{rediskit.result=admitted|busy|unavailable}
//	rediskit.guard.redis.failures{rediskit.name, rediskit.component=admission}
func (m *Metrics) RegisterGate(name string, g *guard.Gate) (metric.Registration, error) {
	attempts, err1 := m.meter.Int64ObservableCounter("rediskit.guard.admission.attempts", metric.WithUnit("{attempt}"),
		metric.WithDescription("Admission attempts by result: admitted, busy (409), unavailable (Redis failed: 503)."))
	failures, err2 := m.redisFailures()
	if err := firstErr(err1, err2); err != nil {
		return nil, err
	}
	base := []attribute.KeyValue{redisSystem, AttrName.String(name)}
	return m.observe(func(_ context.Context, o metric.Observer) error {
		s := g.Stats()
		o.ObserveInt64(attempts, count(s.Admitted), metric.WithAttributes(append(base, AttrResult.String("admitted"))...))
		o.ObserveInt64(attempts, count(s.Busy), metric.WithAttributes(append(base, AttrResult.String("busy"))...))
		o.ObserveInt64(attempts, count(s.Unavailable), metric.WithAttributes(append(base, AttrResult.String("unavailable"))...))
		o.ObserveInt64(failures, count(s.Unavailable), metric.WithAttributes(append(base, attribute.String("rediskit.component", "admission"))...))
		return nil
	}, attempts, failures)
}

func (m *Metrics) redisFailures() (metric.Int64ObservableCounter, error) {
	return m.meter.Int64ObservableCounter("rediskit.guard.redis.failures", metric.WithUnit("{failure}"),
		metric.WithDescription("Redis calls that failed (unreachable, timeout, refused) in a guard component."))
}

// RegisterHealth reports a guard.Monitor's last report under name:
//
//	rediskit.guard.health.state{rediskit.state}  1 for the current state, 0 for the others
//	rediskit.guard.health.age                    seconds since the last check started
//	rediskit.guard.health.ping                   the last PING's latency, seconds
//
// Reading them makes no network call: the Monitor's cached report is used.
func (m *Metrics) RegisterHealth(name string, mon *guard.Monitor) (metric.Registration, error) {
	state, err1 := m.meter.Int64ObservableGauge("rediskit.guard.health.state",
		metric.WithDescription("1 for the state of the last health check (writable, reachable, read-only, out-of-memory, auth-failed, timeout, unreachable, ...), 0 for the others."))
	age, err2 := m.meter.Float64ObservableGauge("rediskit.guard.health.age", metric.WithUnit("s"),
		metric.WithDescription("Seconds since the last health check started."))
	ping, err3 := m.meter.Float64ObservableGauge("rediskit.guard.health.ping", metric.WithUnit("s"),
		metric.WithDescription("Latency of the last health check's PING."))
	if err := firstErr(err1, err2, err3); err != nil {
		return nil, err
	}
	base := []attribute.KeyValue{redisSystem, AttrName.String(name)}
	return m.observe(func(_ context.Context, o metric.Observer) error {
		r := mon.Last()
		for s := guard.StateUnknown; s <= guard.StateErrorReply; s++ {
			v := int64(0)
			if s == r.State {
				v = 1
			}
			o.ObserveInt64(state, v, metric.WithAttributes(append(base, AttrState.String(s.String()))...))
		}
		if !r.At.IsZero() {
			o.ObserveFloat64(age, time.Since(r.At).Seconds(), metric.WithAttributes(base...))
			o.ObserveFloat64(ping, r.Ping.Seconds(), metric.WithAttributes(base...))
		}
		return nil
	}, state, age, ping)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
