package rediskitotel

import (
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rediskit/rediskit/clientcache"
)

// cacheMetrics are a client's client-side cache instruments (its
// Stats().Cache), named rediskit.<client>.cache.*:
//
//	hits, misses            counter {read}   cacheable reads served from the cache / sent
//	fills, fills.dropped    counter {reply}  replies cached / not cached (invalidated in flight)
//	invalidations           counter {key}    keys the servers invalidated
//	flushes                 counter {flush}  times a node's entries ended at once, by cause
//	                                         (attribute cause: lost, silent, server, topology)
//	stale                   counter {read}   reads answered from an unconfirmed entry (MaxStale)
//	evictions               counter {entry}  entries dropped for the memory bound
//	bytes, entries          gauge            what the cache holds
type cacheMetrics struct {
	hits, misses, fills, dropped, invalidations, flushes, stale, evictions metric.Int64ObservableCounter
	bytes, entries                                                         metric.Int64ObservableGauge
}

func (m *Metrics) cacheMetrics(client string) (cacheMetrics, error) {
	p := "rediskit." + client + ".cache."
	var cm cacheMetrics
	errs := make([]error, 10)
	counter := func(i int, name, unit, desc string) metric.Int64ObservableCounter {
		var c metric.Int64ObservableCounter
		c, errs[i] = m.meter.Int64ObservableCounter(p+name, metric.WithUnit(unit), metric.WithDescription(desc))
		return c
	}
	cm.hits = counter(0, "hits", "{read}", "Cacheable reads served from the client-side cache.")
	cm.misses = counter(1, "misses", "{read}", "Cacheable reads sent to the server.")
	cm.fills = counter(2, "fills", "{reply}", "Replies cached.")
	cm.dropped = counter(3, "fills.dropped", "{reply}", "Replies not cached: their key was invalidated, or their node's tracking lost, in flight.")
	cm.invalidations = counter(4, "invalidations", "{key}", "Keys the servers invalidated that had entries or reads in flight.")
	cm.flushes = counter(5, "flushes", "{flush}", "Times a node's entries stopped being served at once, by cause: tracking lost or silent, server flush, role or slots lost.")
	cm.evictions = counter(6, "evictions", "{entry}", "Entries dropped for the memory bound.")
	cm.bytes, errs[7] = m.meter.Int64ObservableGauge(p+"bytes", metric.WithUnit("By"), metric.WithDescription("Memory the cache's entries hold (estimated)."))
	cm.entries, errs[8] = m.meter.Int64ObservableGauge(p+"entries", metric.WithUnit("{entry}"), metric.WithDescription("Entries the cache holds."))
	cm.stale = counter(9, "stale", "{read}", "Reads that could not reach a server, answered from an unconfirmed entry with a StaleError (MaxStale).")
	return cm, firstErr(errs...)
}

func (cm cacheMetrics) observe(o metric.Observer, st clientcache.Stats, attrs ...attribute.KeyValue) {
	set := metric.WithAttributes(attrs...)
	o.ObserveInt64(cm.hits, count(st.Hits), set)
	o.ObserveInt64(cm.misses, count(st.Misses), set)
	o.ObserveInt64(cm.fills, count(st.Fills), set)
	o.ObserveInt64(cm.dropped, count(st.FillsDropped), set)
	o.ObserveInt64(cm.invalidations, count(st.Invalidations), set)
	for cause, n := range map[string]uint64{"lost": st.FlushesByCause.Lost, "silent": st.FlushesByCause.Silent,
		"server": st.FlushesByCause.Server, "topology": st.FlushesByCause.Topology} {
		o.ObserveInt64(cm.flushes, count(n), metric.WithAttributes(append(attrs[:len(attrs):len(attrs)], attribute.String("cause", cause))...))
	}
	o.ObserveInt64(cm.stale, count(st.StaleServed), set)
	o.ObserveInt64(cm.evictions, count(st.Evictions), set)
	o.ObserveInt64(cm.bytes, st.Bytes, set)
	o.ObserveInt64(cm.entries, int64(st.Entries), set)
}

func (cm cacheMetrics) instruments() []metric.Observable {
	return []metric.Observable{cm.hits, cm.misses, cm.fills, cm.dropped, cm.invalidations, cm.flushes, cm.stale, cm.evictions, cm.bytes, cm.entries}
}
