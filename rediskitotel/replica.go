package rediskitotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
)

// ReplicaObserver returns a replica.Config.Observer that counts elections
// by reason, then calls next (may be nil):
//
//	rediskit.replica.elections  counter {election}  rediskit.master_name, rediskit.reason
//	    (first-round, topology, unreachable, link-down, stale, slow, recovered, rtt)
//
// The default selector of a sentinel.Client has no Observer; to count its
// elections, give the client one made with replica.NewSelector.
func (m *Metrics) ReplicaObserver(next func(replica.Event)) func(replica.Event) {
	return func(ev replica.Event) {
		m.elections.Add(background, 1, metric.WithAttributes(redisSystem,
			AttrMasterName.String(ev.MasterName), AttrReason.String(string(ev.Reason))))
		if next != nil {
			next(ev)
		}
	}
}

// exclusions are the reasons a replica can be kept out of the election.
var exclusions = []replica.Exclusion{
	replica.ExcludedUnprobed, replica.ExcludedUnreachable, replica.ExcludedLinkDown,
	replica.ExcludedStale, replica.ExcludedSlow,
}

// replicaTable holds the instruments of a selector's RTT table.
type replicaTable struct {
	rtt      metric.Float64ObservableGauge
	elected  metric.Int64ObservableGauge
	excluded metric.Int64ObservableGauge
}

func (m *Metrics) replicaTable() (replicaTable, error) {
	var t replicaTable
	var err1, err2, err3 error
	t.rtt, err1 = m.meter.Float64ObservableGauge("rediskit.replica.rtt", metric.WithUnit("s"),
		metric.WithDescription("Moving average of the node's PING round trip, as the replica election measures it."))
	t.elected, err2 = m.meter.Int64ObservableGauge("rediskit.replica.elected",
		metric.WithDescription("1 for a replica that reads from replicas go to, 0 for the others."))
	t.excluded, err3 = m.meter.Int64ObservableGauge("rediskit.replica.excluded",
		metric.WithDescription("1 for the reason a replica may not be elected (unprobed, unreachable, link-down, stale, slow), 0 for the others."))
	return t, firstErr(err1, err2, err3)
}

func (t replicaTable) observe(o metric.Observer, sel *replica.Selector) {
	t.observeRows(o, sel.Table())
}

// observeRows reports an RTT table's rows, each with extra attributes.
func (t replicaTable) observeRows(o metric.Observer, table []replica.NodeStatus, extra ...attribute.KeyValue) {
	for i := range table {
		row := &table[i]
		attrs := append(append([]attribute.KeyValue{redisSystem, AttrRole.String(string(row.Role))}, extra...), addrAttrs(row.Addr)...)
		if row.RTT > 0 {
			o.ObserveFloat64(t.rtt, row.RTT.Seconds(), metric.WithAttributes(attrs...))
		}
		if row.Role != replica.RoleReplica {
			continue
		}
		o.ObserveInt64(t.elected, boolInt(row.Elected), metric.WithAttributes(attrs...))
		for _, e := range exclusions {
			o.ObserveInt64(t.excluded, boolInt(row.Excluded == e), metric.WithAttributes(append(attrs, AttrReason.String(string(e)))...))
		}
	}
}

func (t replicaTable) instruments() []metric.Observable {
	return []metric.Observable{t.rtt, t.elected, t.excluded}
}

// RegisterReplica reports a selector's RTT table, read at collection time
// (no network call), per node (server.address, server.port, rediskit.role):
//
//	rediskit.replica.rtt       gauge s   the node's moving-average PING round trip (once probed)
//	rediskit.replica.elected   gauge     1 for a replica reads from replicas go to, else 0
//	rediskit.replica.excluded  gauge     rediskit.reason: 1 for why a replica may not be
//	                                     elected (unprobed, unreachable, link-down, stale, slow), 0 for the others
func (m *Metrics) RegisterReplica(sel *replica.Selector) (metric.Registration, error) {
	t, err := m.replicaTable()
	if err != nil {
		return nil, err
	}
	return m.observe(func(_ context.Context, o metric.Observer) error {
		t.observe(o, sel)
		return nil
	}, t.instruments()...)
}

// RegisterSentinel reports the calls a Sentinel client sent to each node
// (server.address, server.port), read from its Stats:
//
//	rediskit.sentinel.node.reads    counter {call}   read-only calls the node served (replicas and masters)
//	rediskit.sentinel.node.writes   counter {call}   writing calls sent to the node
//	rediskit.sentinel.node.batches  counter {batch}  auto-pipelined round trips to the node
//	rediskit.sentinel.node.batched  counter {call}   commands they carried (batched / batches: the mean batch)
//
// With a *replica.Selector (the default), its RTT table is reported too
// (see RegisterReplica).
func (m *Metrics) RegisterSentinel(c *sentinel.Client) (metric.Registration, error) {
	nc, err := m.nodeCounters("sentinel")
	if err != nil {
		return nil, err
	}
	cm, err := m.cacheMetrics("sentinel")
	if err != nil {
		return nil, err
	}
	instruments := append(nc.instruments(), cm.instruments()...)
	sel, hasTable := c.Selector().(*replica.Selector)
	var t replicaTable
	if hasTable {
		if t, err = m.replicaTable(); err != nil {
			return nil, err
		}
		instruments = append(instruments, t.instruments()...)
	}
	return m.observe(func(_ context.Context, o metric.Observer) error {
		st := c.Stats()
		name := AttrMasterName.String(st.MasterName)
		for _, n := range st.Nodes {
			nc.observe(o, n.Addr, n.Reads, n.Writes, n.Batches, n.Batched, redisSystem, name)
		}
		if st.Cache != (clientcache.Stats{}) { // a cache, and it has counted something
			cm.observe(o, st.Cache, redisSystem, name)
		}
		if hasTable {
			t.observe(o, sel)
		}
		return nil
	}, instruments...)
}

// nodeCounters are the per-node call counters of a routing client
// (rediskit.<client>.node.*), read from its Stats.
type nodeCounters struct {
	reads, writes, batches, batched metric.Int64ObservableCounter
}

func (m *Metrics) nodeCounters(client string) (nodeCounters, error) {
	var nc nodeCounters
	var err1, err2, err3, err4 error
	prefix := "rediskit." + client + ".node."
	nc.reads, err1 = m.meter.Int64ObservableCounter(prefix+"reads", metric.WithUnit("{call}"),
		metric.WithDescription("Read-only calls the node served."))
	nc.writes, err2 = m.meter.Int64ObservableCounter(prefix+"writes", metric.WithUnit("{call}"),
		metric.WithDescription("Writing calls sent to the node."))
	nc.batches, err3 = m.meter.Int64ObservableCounter(prefix+"batches", metric.WithUnit("{batch}"),
		metric.WithDescription("Auto-pipelined round trips to the node."))
	nc.batched, err4 = m.meter.Int64ObservableCounter(prefix+"batched", metric.WithUnit("{call}"),
		metric.WithDescription("Commands the node's auto-pipelined round trips carried."))
	return nc, firstErr(err1, err2, err3, err4)
}

func (nc nodeCounters) observe(o metric.Observer, addr string, reads, writes, batches, batched uint64, attrs ...attribute.KeyValue) {
	set := metric.WithAttributes(append(attrs, addrAttrs(addr)...)...)
	o.ObserveInt64(nc.reads, count(reads), set)
	o.ObserveInt64(nc.writes, count(writes), set)
	o.ObserveInt64(nc.batches, count(batches), set)
	o.ObserveInt64(nc.batched, count(batched), set)
}

func (nc nodeCounters) instruments() []metric.Observable {
	return []metric.Observable{nc.reads, nc.writes, nc.batches, nc.batched}
}
