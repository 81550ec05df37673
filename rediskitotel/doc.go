// Package rediskitotel records what rediskit's components decide and see
// as OpenTelemetry metrics. It is the only package of rediskit that
// imports OpenTelemetry: the components expose observers (event callbacks)
// and Stats, and this package turns them into instruments on the
// MeterProvider you give it.
//
//	m, err := rediskitotel.New(provider)
//	cfg.Observer = m.Observer(cfg.Observer)                          // rediskit.Config, any topology
//	m.Register(client)                                               // the rediskit.Client it made
//	sentinelCfg.Observer = m.SentinelObserver(sentinelCfg.Observer) // sentinel.Config
//	ringCfg.Observer = m.RingObserver(nil)                           // hashring.Config
//	m.RegisterCache("price", prices.Stats)                           // guard components
//	m.RegisterHealth("redis", monitor)
//	multidbCfg.Observer = m.MultiDBObserver(nil)                     // multidb.Config
//	m.RegisterMultiDB(client)
//	clusterOpts.Observer = m.ClusterObserver(clusterOpts.Observer)   // cluster.Config
//	m.RegisterCluster(clusterClient)
//
// Event-driven counters are recorded as events happen; gauges and the
// guard's counters are read from the components when metrics are
// collected (no network call: the health state is the Monitor's cached
// report). Every Register function returns a metric.Registration to stop
// reporting.
//
// # Naming
//
// Attributes follow OpenTelemetry's semantic conventions where they have
// one (db.system.name = "redis", server.address, server.port,
// error.type); metric names and other attributes use the "rediskit."
// prefix, as the conventions define no metric for these decisions. Every
// series carries db.system.name = "redis"; the lists below leave it out.
//
// # Metrics
//
// Sentinel client (SentinelObserver):
//
//	rediskit.sentinel.master.changes     counter {change}   rediskit.master_name, rediskit.master.old, rediskit.master.new
//	    The client switched to a new master.
//	rediskit.sentinel.discovery.duration histogram s        rediskit.master_name, rediskit.outcome (found|failed)
//	    Time to find and verify the master: asking the sentinels in order, ROLE.
//	rediskit.sentinel.reads.retried      counter {call}     rediskit.master_name
//	    Read-only calls re-run once after a failure signal.
//	rediskit.sentinel.writes.refused     counter {call}     rediskit.master_name, rediskit.may_have_executed
//	    Writes failed with a MasterChangedError rather than re-run.
//	rediskit.sentinel.writes.rerun       counter {call}     rediskit.master_name
//	    Writes re-run on the new master because they provably did not execute.
//	rediskit.sentinel.sentinels.skipped  counter {answer}   rediskit.master_name, rediskit.reason, rediskit.sentinel
//	    Sentinel answers not used: down, slow, auth, unknown master, stale,
//	    role mismatch, unverified, error.
//	rediskit.sentinel.failovers          counter {failover} rediskit.master_name
//	    Failovers the client saw begin (writes held until the new master).
//	rediskit.sentinel.isolations         counter {hold}     rediskit.master_name
//	    Times writes were held for a master cut off from the sentinels and
//	    its replicas (sentinel.EventMasterIsolated).
//	rediskit.sentinel.isolation.held     histogram s        rediskit.master_name
//	    How long such a hold lasted when it ended without a new master
//	    (sentinel.EventIsolationEnded); a new master counts as a master
//	    change instead.
//
// The client's calls per node, and the replica election (RegisterSentinel,
// which also reports the RTT table of the client's *replica.Selector;
// RegisterReplica for a selector alone; ReplicaObserver as
// replica.Config.Observer; per node: server.address, server.port,
// rediskit.role):
//
//	rediskit.sentinel.node.reads   counter {call}      rediskit.master_name
//	    Read-only calls the node served (replicas, or the master).
//	rediskit.sentinel.node.writes  counter {call}      rediskit.master_name
//	    Writing calls (commands, pipelines, transactions) sent to the node.
//	rediskit.sentinel.node.batches counter {batch}     rediskit.master_name
//	    Auto-pipelined round trips to the node (Config.AutoPipeline, or
//	    an auto-pipeliner's), a command sent alone included.
//	rediskit.sentinel.node.batched counter {call}      rediskit.master_name
//	    The commands those round trips carried: batched / batches is the
//	    mean batch.
//	rediskit.replica.rtt           gauge s
//	    The node's moving-average PING round trip, once probed.
//	rediskit.replica.elected       gauge
//	    1 for a replica that reads from replicas go to, 0 for the others.
//	rediskit.replica.excluded      gauge               rediskit.reason
//	    1 for why a replica may not be elected (unprobed, unreachable,
//	    link-down, stale, slow), 0 for the others.
//	rediskit.replica.elections     counter {election}  rediskit.master_name, rediskit.reason
//	    Election changes by reason (first-round, topology, unreachable,
//	    link-down, stale, slow, recovered, rtt).
//
// Cluster client (ClusterObserver as cluster.Config.Observer; a node is
// server.address, server.port):
//
//	rediskit.cluster.master.changes     counter {change}   rediskit.master.old, rediskit.master.new
//	    A shard's slots moved to a new master and the old one masters
//	    none: a failover (a CLUSTER FAILOVER too).
//	rediskit.cluster.slots.moved        counter {slot}     rediskit.master.old, rediskit.master.new
//	    Slots moved between two masters that both remain (a migration).
//	rediskit.cluster.master.failures    counter {failure}  node
//	    Times a master stopped answering: its writes were held.
//	rediskit.cluster.master.failed      histogram s        node
//	    How long a failing master that answered again and kept its slots
//	    had been failing (one replaced counts as a master change instead).
//	rediskit.cluster.reads.retried      counter {call}     node
//	    Reads that failed on the node without an answer and were run again
//	    once.
//	rediskit.cluster.writes.rerun       counter {call}     node
//	    Writes sent again because a refusal (TRYAGAIN, CLUSTERDOWN, a dial
//	    failure, ...) proved they did not run; once per call.
//	rediskit.cluster.writes.refused     counter {call}     rediskit.master.old, rediskit.master.new, rediskit.may_have_executed
//	    Writes failed with a *cluster.MasterChangedError rather than run
//	    twice.
//	rediskit.cluster.writes.not_durable counter {call}     node, rediskit.may_have_executed
//	    Durable writes failed with a *cluster.NotDurableError (false:
//	    refused unsent).
//
// Read from the client's Stats and ReplicaTables at collection
// (RegisterCluster):
//
//	rediskit.cluster.refreshes          counter {refresh}  rediskit.reason (start|periodic|moved|node-failed|failover-poll|refused|pubsub)
//	    Slot-map reads started, by cause (Stats.RefreshesByCause).
//	rediskit.cluster.refreshes.failed   counter {refresh}
//	    Slot-map reads no node answered (cluster.EventRefreshFailed).
//	rediskit.cluster.redirects          counter {redirect} rediskit.redirect (moved|ask)
//	    MOVED and ASK redirects followed.
//	rediskit.cluster.master.failing     gauge              node
//	    1 for a master of the map whose writes are held, 0 for the others.
//	rediskit.cluster.node.reads, .writes, .batches, .batched
//	    Per node, as rediskit.sentinel.node.* (a replica read counts on the
//	    replica).
//	rediskit.replica.rtt, .elected, .excluded                rediskit.shard
//	    Each shard's election, as RegisterReplica reports a selector's,
//	    with rediskit.shard: the shard master's address. The RTTs appear
//	    once the prober runs (the first read under a ReadFrom other than
//	    Master).
//
// A cluster has no name as a Sentinel master has: to tell two clusters'
// client-wide series (refreshes, redirects) apart, give each its own
// MeterProvider or add an attribute in a View.
//
// Client-side caching (Config.Cache of a Sentinel, cluster or multidb
// client; package clientcache), read from Stats().Cache by
// RegisterSentinel (with rediskit.master_name), RegisterCluster and
// RegisterMultiDB, once the cache has counted anything:
//
//	rediskit.<client>.cache.hits, .misses          counter {read}
//	    Cacheable reads served from the cache, and sent to the server.
//	rediskit.<client>.cache.fills, .fills.dropped  counter {reply}
//	    Replies cached, and not cached because their key was invalidated
//	    (or their node's tracking lost) while they were in flight.
//	rediskit.<client>.cache.invalidations          counter {key}
//	    Keys the servers invalidated that had entries or reads in flight.
//	rediskit.<client>.cache.flushes                counter {flush}
//	    Times a node's entries stopped being served at once: its tracking
//	    connection lost or silent, the server flushed, or the node lost its
//	    role or slots.
//	rediskit.<client>.cache.evictions              counter {entry}
//	    Entries dropped for the memory bound.
//	rediskit.<client>.cache.bytes, .entries        gauge
//	    What the cache holds (bytes estimated).
//
// # The standard go-redis instrumentation
//
// go-redis's extra/redisotel (InstrumentTracing, InstrumentMetrics) hooks a
// *redis.Client. The rediskit clients route each call to a node's own
// client, so instrument the nodes, present and future, with OnNewNode, as
// redisotel does on a go-redis ClusterClient; the spans and pool metrics
// then name the node that served each call, and the clients' own checks
// (ROLE, slot-map reads, probes) make none:
//
//	c.OnNewNode(func(rc *redis.Client) { // sentinel, cluster and multidb clients
//		_ = redisotel.InstrumentTracing(rc)
//		_ = redisotel.InstrumentMetrics(rc)
//	})
//
// On a cluster client, a node's replica reads go over a client of their
// own (its connections send READONLY), also passed to OnNewNode, with the
// node's address as its pool.name.
//
// Guards (RegisterCache, RegisterLimiter, RegisterGate, RegisterHealth;
// rediskit.name is the name given at registration):
//
//	rediskit.guard.cache.reads         counter {lookup}  rediskit.name, rediskit.result (hit|miss|error|canceled)
//	    Lookups by how their read of Redis ended; they add up to the lookups.
//	rediskit.guard.cache.fills         counter {lookup}  rediskit.name, rediskit.result (loaded|shared|refused|error|canceled)
//	    Lookups that did not hit, by how they were served (their own load,
//	    another lookup's, refused, the loader failed, the caller left); they
//	    add up to reads miss + error.
//	rediskit.guard.cache.fallbacks     counter {lookup}  rediskit.name
//	    Lookups served by a load (loaded or shared) because their read failed.
//	rediskit.guard.limiter.attempts    counter {attempt} rediskit.name, rediskit.result (allowed|limited|unavailable)
//	    Limiter decisions: allowed, over the limit (429), or refused because
//	    Redis failed (fail-closed, 503).
//	rediskit.guard.admission.attempts  counter {attempt} rediskit.name, rediskit.result (admitted|busy|unavailable)
//	    Admission decisions: admitted, refused because another holder has the
//	    key (409), or refused because Redis failed (503).
//	rediskit.guard.redis.failures      counter {failure} rediskit.name, rediskit.component (cache|limiter|admission)
//	    Redis calls that failed in a guard component.
//	rediskit.guard.health.state        gauge            rediskit.name, rediskit.state
//	    1 for the last health check's state (writable, reachable, read-only,
//	    out-of-memory, auth-failed, timeout, unreachable, pool-full,
//	    error-reply, unknown), 0 for the others.
//	rediskit.guard.health.age          gauge s           rediskit.name
//	    Seconds since the last health check started.
//	rediskit.guard.health.ping         gauge s           rediskit.name
//	    The last check's PING latency.
//
// Multi-database client (MultiDBObserver, RegisterMultiDB; rediskit.database
// names a database):
//
//	rediskit.multidb.active               gauge              rediskit.database
//	    1 for the database that serves traffic, 0 for the others.
//	rediskit.multidb.switches             counter {switch}   rediskit.database.old, rediskit.database.new, rediskit.switch.reason (automatic|manual|failback)
//	    Changes of the active database: after a failure, by an operator, or
//	    back to a higher-weight database that is healthy again.
//	rediskit.multidb.breaker.state        gauge              rediskit.database, rediskit.state (closed|open|half-open)
//	    1 for the breaker's state, 0 for the others.
//	rediskit.multidb.breaker.transitions  counter {transition} rediskit.database, rediskit.breaker.from, rediskit.breaker.to
//	    Circuit breaker state changes (closed, open, half-open).
//	rediskit.multidb.probe.duration       gauge s            rediskit.database
//	    The last health probe's latency.
//	rediskit.multidb.failures             counter {failure}  rediskit.database
//	    Connection failures and timeouts seen in traffic.
//	rediskit.multidb.batches              counter {batch}    rediskit.database
//	    Auto-pipelined round trips to a database on a *redis.Client (one
//	    on a rediskit client batches per node: see its own metrics).
//	rediskit.multidb.batched              counter {call}     rediskit.database
//	    The commands those round trips carried.
//	rediskit.multidb.unavailable          counter {episode}
//	    Times no database was healthy.
//	rediskit.multidb.reads.retried        counter {call}
//	    Read-only calls that failed on the old database and were re-run
//	    once on the new active one.
//	rediskit.multidb.writes.refused       counter {call}
//	    Writes that failed on the old database and may have executed there,
//	    so were not re-run (the caller got a DatabaseChangedError).
//	rediskit.multidb.writes.rerun         counter {call}
//	    Writes re-run on the new active database because they provably did
//	    not execute on the old one (refused before being sent).
//
// Hash ring (RingObserver, RegisterRingNode; attributes rediskit.ring.key,
// rediskit.ring.node):
//
//	rediskit.hashring.nodes               gauge {node}
//	    Nodes on the ring in this node's view (0 once its deadline passed).
//	rediskit.hashring.share               gauge 1
//	    Fraction of the ring this node owns.
//	rediskit.hashring.ownership.expiries  counter {expiry}
//	    Times the node's ownership deadline passed without a renewal: it
//	    gave up its keys (Contains false) until Redis answered again.
//	rediskit.hashring.ownership.restores  counter {restore}
//	    Times a heartbeat and read after an expiry gave the node its keys
//	    back.
//	rediskit.hashring.attempts.failed     counter {attempt}
//	    Failed Redis attempts to heartbeat or read the ring (each is
//	    retried with backoff until the deadline).
package rediskitotel
