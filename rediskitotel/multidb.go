package rediskitotel

import (
	"context"
	"math"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/multidb"
)

// Attribute keys of the multi-database metrics.
const (
	AttrOldDatabase = attribute.Key("rediskit.database.old")
	AttrNewDatabase = attribute.Key("rediskit.database.new")
	AttrFromState   = attribute.Key("rediskit.breaker.from")
	AttrToState     = attribute.Key("rediskit.breaker.to")
)

// MultiDBObserver returns a multidb.Config.Observer that counts switches of
// the active database (by reason), breaker transitions, all-unhealthy
// episodes and retried or refused work, then calls next (may be nil):
//
//	rediskit.multidb.switches             counter {switch}     rediskit.database.old, rediskit.database.new, rediskit.switch.reason (automatic|manual|failback)
//	rediskit.multidb.breaker.transitions  counter {transition} rediskit.database, rediskit.breaker.from, rediskit.breaker.to
//	rediskit.multidb.unavailable          counter {episode}    no database was healthy
//	rediskit.multidb.reads.retried        counter {call}
//	rediskit.multidb.writes.refused       counter {call}       writes not re-run on the new database (may have executed)
//	rediskit.multidb.writes.rerun         counter {call}       writes re-run on the new database (provably did not execute)
func (m *Metrics) MultiDBObserver(next func(multidb.Event)) func(multidb.Event) {
	return func(ev multidb.Event) {
		m.recordMultiDB(ev)
		if next != nil {
			next(ev)
		}
	}
}

func (m *Metrics) recordMultiDB(ev multidb.Event) {
	switch ev.Kind {
	case multidb.EventActiveChanged:
		m.dbSwitches.Add(background, 1, metric.WithAttributes(redisSystem,
			AttrOldDatabase.String(ev.Old), AttrNewDatabase.String(ev.New), AttrSwitchReason.String(ev.Reason.String())))
	case multidb.EventBreakerChanged:
		m.dbBreakerTransitions.Add(background, 1, metric.WithAttributes(redisSystem,
			AttrDatabase.String(ev.Database), AttrFromState.String(ev.From.String()), AttrToState.String(ev.To.String())))
	case multidb.EventAllUnhealthy:
		m.dbUnavailable.Add(background, 1, metric.WithAttributes(redisSystem))
	case multidb.EventReadRetried:
		m.dbReadsRetried.Add(background, 1, metric.WithAttributes(redisSystem))
	case multidb.EventWriteRefused:
		m.dbWritesRefused.Add(background, 1, metric.WithAttributes(redisSystem))
	case multidb.EventWriteRerun:
		m.dbWritesRerun.Add(background, 1, metric.WithAttributes(redisSystem))
	}
}

// RegisterMultiDB reports, read from c.Stats() at collection time, per
// database (rediskit.database):
//
//	rediskit.multidb.active         gauge              1 for the active database, 0 for the others
//	rediskit.multidb.breaker.state  gauge              rediskit.state: 1 for the breaker's state (closed, open, half-open), 0 for the others
//	rediskit.multidb.probe.duration gauge s            the last health probe's latency
//	rediskit.multidb.failures       counter {failure}  connection failures and timeouts seen in traffic
//	rediskit.multidb.batches        counter {batch}    auto-pipelined round trips to the database (one on a *redis.Client)
//	rediskit.multidb.batched        counter {call}     commands they carried
func (m *Metrics) RegisterMultiDB(c *multidb.Client) (metric.Registration, error) {
	active, err1 := m.meter.Int64ObservableGauge("rediskit.multidb.active",
		metric.WithDescription("1 for the database that serves traffic, 0 for the others."))
	state, err2 := m.meter.Int64ObservableGauge("rediskit.multidb.breaker.state",
		metric.WithDescription("1 for the state of the database's circuit breaker (closed, open, half-open), 0 for the others."))
	probe, err3 := m.meter.Float64ObservableGauge("rediskit.multidb.probe.duration", metric.WithUnit("s"),
		metric.WithDescription("Latency of the database's last health probe."))
	failures, err4 := m.meter.Int64ObservableCounter("rediskit.multidb.failures", metric.WithUnit("{failure}"),
		metric.WithDescription("Connection failures and timeouts seen in traffic to the database."))
	batches, err5 := m.meter.Int64ObservableCounter("rediskit.multidb.batches", metric.WithUnit("{batch}"),
		metric.WithDescription("Auto-pipelined round trips to the database."))
	batched, err6 := m.meter.Int64ObservableCounter("rediskit.multidb.batched", metric.WithUnit("{call}"),
		metric.WithDescription("Commands the database's auto-pipelined round trips carried."))
	cm, err7 := m.cacheMetrics("multidb")
	if err := firstErr(err1, err2, err3, err4, err5, err6, err7); err != nil {
		return nil, err
	}
	states := []multidb.BreakerState{multidb.Closed, multidb.Open, multidb.HalfOpen}
	return m.observe(func(_ context.Context, o metric.Observer) error {
		st := c.Stats()
		if st.Cache != (clientcache.Stats{}) { // a cache, and it has counted something
			cm.observe(o, st.Cache, redisSystem)
		}
		dbs := st.Databases
		for i := range dbs {
			db := &dbs[i]
			attrs := []attribute.KeyValue{redisSystem, AttrDatabase.String(db.Name)}
			o.ObserveInt64(active, boolInt(db.Active), metric.WithAttributes(attrs...))
			for _, s := range states {
				o.ObserveInt64(state, boolInt(db.State == s), metric.WithAttributes(append(attrs, AttrState.String(s.String()))...))
			}
			if db.Checked {
				o.ObserveFloat64(probe, db.LastProbeLatency.Seconds(), metric.WithAttributes(attrs...))
			}
			o.ObserveInt64(failures, count(db.Failures), metric.WithAttributes(attrs...))
			o.ObserveInt64(batches, count(db.Batches), metric.WithAttributes(attrs...))
			o.ObserveInt64(batched, count(db.Batched), metric.WithAttributes(attrs...))
		}
		return nil
	}, append([]metric.Observable{active, state, probe, failures, batches, batched}, cm.instruments()...)...)
}

// count is a counter's value for an Int64 instrument: saturated at the
// largest int64, which no counter of a running process reaches.
func count(n uint64) int64 {
	if n > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(n)
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}
