package rediskitotel

import (
	"context"
	"errors"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/cluster"
)

// ClusterObserver returns a cluster.Config.Observer that records the
// client's events as metrics and then calls next (which may be nil):
//
//	opts.Observer = m.ClusterObserver(opts.Observer)
func (m *Metrics) ClusterObserver(next func(cluster.Event)) func(cluster.Event) {
	return func(ev cluster.Event) {
		m.recordCluster(ev)
		if next != nil {
			next(ev)
		}
	}
}

func (m *Metrics) recordCluster(ev cluster.Event) {
	moved := metric.WithAttributes(redisSystem, AttrOldMaster.String(ev.OldMaster), AttrNewMaster.String(ev.Master))
	node := metric.WithAttributes(append([]attribute.KeyValue{redisSystem}, addrAttrs(ev.Master)...)...)
	switch ev.Kind {
	case cluster.EventMasterChanged:
		m.clusterMasterChanges.Add(background, 1, moved)
	case cluster.EventSlotsMoved:
		m.clusterSlotsMoved.Add(background, int64(ev.Slots), moved)
	case cluster.EventMasterFailing:
		m.clusterMasterFailures.Add(background, 1, node)
	case cluster.EventMasterRecovered:
		m.clusterMasterFailed.Record(background, ev.Duration.Seconds(), node)
	case cluster.EventReadRetried:
		m.clusterReadsRetried.Add(background, 1, node)
	case cluster.EventWriteRerun:
		m.clusterWritesRerun.Add(background, 1, node)
	case cluster.EventWriteRefused:
		var mce *cluster.MasterChangedError
		mayHaveRun := !errors.As(ev.Err, &mce) || mce.MayHaveExecuted
		m.clusterWritesRefused.Add(background, 1, metric.WithAttributes(redisSystem,
			AttrOldMaster.String(ev.OldMaster), AttrNewMaster.String(ev.Master), AttrMayHaveRun.Bool(mayHaveRun)))
	case cluster.EventWriteNotDurable:
		var nde *cluster.NotDurableError
		mayHaveRun := !errors.As(ev.Err, &nde) || nde.MayHaveExecuted
		m.clusterWritesNotDurable.Add(background, 1, metric.WithAttributes(append(addrAttrs(ev.Master),
			redisSystem, AttrMayHaveRun.Bool(mayHaveRun))...))
	}
	// EventRefreshFailed is counted from Stats (RegisterCluster), with
	// the refreshes.
}

// RegisterCluster reports a cluster client's Stats and replica tables,
// read at collection time (no network call):
//
//	rediskit.cluster.refreshes         counter {refresh}   rediskit.reason: why the slot map was read
//	rediskit.cluster.refreshes.failed  counter {refresh}   slot-map reads no node answered
//	rediskit.cluster.redirects         counter {redirect}  rediskit.redirect (moved|ask): redirects followed
//	rediskit.cluster.master.failing    gauge               per master: 1 while its writes are held, else 0
//	rediskit.cluster.node.reads, .writes, .batches, .batched  per node, as rediskit.sentinel.node.*
//
// and each shard's replica election (rediskit.replica.rtt, .elected,
// .excluded, as RegisterReplica, with rediskit.shard: the shard master's
// address).
func (m *Metrics) RegisterCluster(c *cluster.Client) (metric.Registration, error) {
	refreshes, err1 := m.meter.Int64ObservableCounter("rediskit.cluster.refreshes", metric.WithUnit("{refresh}"),
		metric.WithDescription("Slot-map reads started, by cause."))
	failed, err2 := m.meter.Int64ObservableCounter("rediskit.cluster.refreshes.failed", metric.WithUnit("{refresh}"),
		metric.WithDescription("Slot-map reads no node answered."))
	redirects, err3 := m.meter.Int64ObservableCounter("rediskit.cluster.redirects", metric.WithUnit("{redirect}"),
		metric.WithDescription("MOVED and ASK redirects followed."))
	failing, err4 := m.meter.Int64ObservableGauge("rediskit.cluster.master.failing",
		metric.WithDescription("1 for a master whose writes are held because it stopped answering, 0 for the others."))
	nc, err5 := m.nodeCounters("cluster")
	t, err6 := m.replicaTable()
	cm, err7 := m.cacheMetrics("cluster")
	if err := firstErr(err1, err2, err3, err4, err5, err6, err7); err != nil {
		return nil, err
	}
	return m.observe(func(_ context.Context, o metric.Observer) error {
		st := c.Stats()
		for cause, n := range st.RefreshesByCause {
			o.ObserveInt64(refreshes, count(n), metric.WithAttributes(redisSystem, AttrReason.String(strings.ReplaceAll(cause.String(), " ", "-"))))
		}
		o.ObserveInt64(failed, count(st.RefreshFailures), metric.WithAttributes(redisSystem))
		o.ObserveInt64(redirects, count(st.Moved), metric.WithAttributes(redisSystem, AttrRedirect.String("moved")))
		o.ObserveInt64(redirects, count(st.Ask), metric.WithAttributes(redisSystem, AttrRedirect.String("ask")))
		for _, addr := range st.Masters {
			isFailing := false
			for _, f := range st.Failing {
				isFailing = isFailing || f == addr
			}
			o.ObserveInt64(failing, boolInt(isFailing), metric.WithAttributes(append(addrAttrs(addr), redisSystem)...))
		}
		for _, n := range st.Nodes {
			nc.observe(o, n.Addr, n.Reads, n.Writes, n.Batches, n.Batched, redisSystem)
		}
		for master, rows := range c.ReplicaTables() {
			t.observeRows(o, rows, AttrShard.String(master))
		}
		if st.Cache != (clientcache.Stats{}) { // a cache, and it has counted something
			cm.observe(o, st.Cache, redisSystem)
		}
		return nil
	}, append(append(append([]metric.Observable{refreshes, failed, redirects, failing}, nc.instruments()...), t.instruments()...), cm.instruments()...)...)
}
