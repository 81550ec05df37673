package rediskitotel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Scope is the instrumentation scope name of every instrument.
const Scope = "github.com/rediskit/rediskit/rediskitotel"

// Attribute keys. Where OpenTelemetry's semantic conventions have one
// (db.system.name, server.address, server.port, error.type) it is used;
// the rest carry the rediskit prefix.
const (
	AttrDBSystem     = attribute.Key("db.system.name")
	AttrServerAddr   = attribute.Key("server.address")
	AttrServerPort   = attribute.Key("server.port")
	AttrErrorType    = attribute.Key("error.type")
	AttrMasterName   = attribute.Key("rediskit.master_name")
	AttrOldMaster    = attribute.Key("rediskit.master.old")
	AttrNewMaster    = attribute.Key("rediskit.master.new")
	AttrReason       = attribute.Key("rediskit.reason")
	AttrResult       = attribute.Key("rediskit.result")
	AttrOutcome      = attribute.Key("rediskit.outcome")
	AttrMayHaveRun   = attribute.Key("rediskit.may_have_executed")
	AttrName         = attribute.Key("rediskit.name")
	AttrState        = attribute.Key("rediskit.state")
	AttrRole         = attribute.Key("rediskit.role")
	AttrRingKey      = attribute.Key("rediskit.ring.key")
	AttrRingNode     = attribute.Key("rediskit.ring.node")
	AttrDatabase     = attribute.Key("rediskit.database")
	AttrSwitchReason = attribute.Key("rediskit.switch.reason")
	AttrRedirect     = attribute.Key("rediskit.redirect")
	AttrShard        = attribute.Key("rediskit.shard")
)

var redisSystem = AttrDBSystem.String("redis")

// Metrics creates and records rediskit's instruments on one
// MeterProvider. Create one with New and hand its observers and register
// functions to the components: nothing in rediskit's core packages imports
// OpenTelemetry.
type Metrics struct {
	meter metric.Meter

	// sentinel
	masterChanges     metric.Int64Counter
	discoveryDuration metric.Float64Histogram
	readsRetried      metric.Int64Counter
	writesRefused     metric.Int64Counter
	writesRerun       metric.Int64Counter
	sentinelsSkipped  metric.Int64Counter
	failovers         metric.Int64Counter
	isolations        metric.Int64Counter
	isolationHeld     metric.Float64Histogram

	// multidb
	dbSwitches           metric.Int64Counter
	dbBreakerTransitions metric.Int64Counter
	dbUnavailable        metric.Int64Counter
	dbReadsRetried       metric.Int64Counter
	dbWritesRefused      metric.Int64Counter
	dbWritesRerun        metric.Int64Counter

	// cluster
	clusterMasterChanges    metric.Int64Counter
	clusterSlotsMoved       metric.Int64Counter
	clusterMasterFailures   metric.Int64Counter
	clusterMasterFailed     metric.Float64Histogram
	clusterReadsRetried     metric.Int64Counter
	clusterWritesRerun      metric.Int64Counter
	clusterWritesRefused    metric.Int64Counter
	clusterWritesNotDurable metric.Int64Counter

	// replica
	elections metric.Int64Counter

	// hashring
	ringExpiries metric.Int64Counter
	ringRestores metric.Int64Counter
	ringFailures metric.Int64Counter
}

// New creates the instruments on mp's meter for Scope.
func New(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		return nil, errors.New("rediskitotel: nil MeterProvider")
	}
	m := &Metrics{meter: mp.Meter(Scope)}
	var errs []error
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, err := m.meter.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
		return c
	}
	m.masterChanges = counter("rediskit.sentinel.master.changes", "{change}",
		"Times the client switched to a new master.")
	m.readsRetried = counter("rediskit.sentinel.reads.retried", "{call}",
		"Read-only calls re-run once after a failure signal.")
	m.writesRefused = counter("rediskit.sentinel.writes.refused", "{call}",
		"Writes failed with MasterChangedError instead of being re-run.")
	m.writesRerun = counter("rediskit.sentinel.writes.rerun", "{call}",
		"Writes re-run on the new master because they provably did not execute.")
	m.sentinelsSkipped = counter("rediskit.sentinel.sentinels.skipped", "{answer}",
		"Sentinel answers not used during discovery, by reason.")
	m.failovers = counter("rediskit.sentinel.failovers", "{failover}",
		"Failovers the client saw begin (writes held until the new master was confirmed).")
	m.isolations = counter("rediskit.sentinel.isolations", "{hold}",
		"Times writes were held for a master cut off from the sentinels and its replicas.")
	m.elections = counter("rediskit.replica.elections", "{election}",
		"Changes of the replica election, by reason.")
	m.dbSwitches = counter("rediskit.multidb.switches", "{switch}",
		"Changes of the active database, by reason (automatic, manual, failback).")
	m.dbBreakerTransitions = counter("rediskit.multidb.breaker.transitions", "{transition}",
		"Circuit breaker state changes, per database.")
	m.dbUnavailable = counter("rediskit.multidb.unavailable", "{episode}",
		"Times no database was healthy (calls got ErrTemporarilyUnavailable).")
	m.dbReadsRetried = counter("rediskit.multidb.reads.retried", "{call}",
		"Read-only calls re-run once on the new active database.")
	m.dbWritesRefused = counter("rediskit.multidb.writes.refused", "{call}",
		"Writes not re-run on the new active database because they may have executed.")
	m.dbWritesRerun = counter("rediskit.multidb.writes.rerun", "{call}",
		"Writes re-run on the new active database because they provably did not execute.")
	m.ringExpiries = counter("rediskit.hashring.ownership.expiries", "{expiry}",
		"Times a node's ownership deadline passed (it gave its keys up).")
	m.ringRestores = counter("rediskit.hashring.ownership.restores", "{restore}",
		"Times a renewal restored a node's ownership after its deadline passed.")
	m.ringFailures = counter("rediskit.hashring.attempts.failed", "{attempt}",
		"Failed attempts to keep a node on the ring (retried).")
	m.clusterMasterChanges = counter("rediskit.cluster.master.changes", "{change}",
		"Times a shard's slots moved to a new master, the old one no longer a master (a failover).")
	m.clusterSlotsMoved = counter("rediskit.cluster.slots.moved", "{slot}",
		"Slots that moved between two masters (a migration).")
	m.clusterMasterFailures = counter("rediskit.cluster.master.failures", "{failure}",
		"Times a master stopped answering and its writes were held.")
	m.clusterReadsRetried = counter("rediskit.cluster.reads.retried", "{call}",
		"Read-only calls re-run once after a failure without an answer.")
	m.clusterWritesRerun = counter("rediskit.cluster.writes.rerun", "{call}",
		"Writes sent again because a refusal proved they did not run.")
	m.clusterWritesRefused = counter("rediskit.cluster.writes.refused", "{call}",
		"Writes failed with MasterChangedError instead of being re-run.")
	m.clusterWritesNotDurable = counter("rediskit.cluster.writes.not_durable", "{call}",
		"Durable writes failed with NotDurableError: refused unsent, or run and not confirmed.")
	var err error
	m.clusterMasterFailed, err = m.meter.Float64Histogram("rediskit.cluster.master.failed",
		metric.WithUnit("s"),
		metric.WithDescription("How long a master that answered again and kept its slots had been failing."),
		metric.WithExplicitBucketBoundaries(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
	errs = append(errs, err)
	m.discoveryDuration, err = m.meter.Float64Histogram("rediskit.sentinel.discovery.duration",
		metric.WithUnit("s"),
		metric.WithDescription("Time to find and verify the master (asking sentinels in order, ROLE)."),
		metric.WithExplicitBucketBoundaries(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5))
	errs = append(errs, err)
	m.isolationHeld, err = m.meter.Float64Histogram("rediskit.sentinel.isolation.held",
		metric.WithUnit("s"),
		metric.WithDescription("How long writes were held for a master cut off, when the hold ended without a new master."),
		metric.WithExplicitBucketBoundaries(0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("rediskitotel: create instruments: %w", err)
	}
	return m, nil
}

// addrAttrs splits host:port into server.address and server.port.
func addrAttrs(addr string) []attribute.KeyValue {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return []attribute.KeyValue{AttrServerAddr.String(addr)}
	}
	attrs := []attribute.KeyValue{AttrServerAddr.String(host)}
	if p, err := strconv.Atoi(port); err == nil {
		attrs = append(attrs, AttrServerPort.Int(p))
	}
	return attrs
}

// observe registers f as the callback of the given observable
// instruments.
func (m *Metrics) observe(f metric.Callback, instruments ...metric.Observable) (metric.Registration, error) {
	reg, err := m.meter.RegisterCallback(f, instruments...)
	if err != nil {
		return nil, fmt.Errorf("rediskitotel: register callback: %w", err)
	}
	return reg, nil
}

var background = context.Background()
