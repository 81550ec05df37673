// Package replica chooses the replica a client reads from: the nearest
// healthy one by measured round-trip time, never one far slower than the master.
//
// Optionally, it never chooses one lagging more than a bound. It is
// the default ReplicaSelector of package sentinel for ReadFrom Replica,
// ReplicaPreferred and Nearest.
//
// Why: replicas are not interchangeable. With the master and one replica
// 42 ms from the application and another replica 300 ms away, choosing a
// replica at random (go-redis ReplicaOnly, redis-py), pinned per pooled
// connection, makes replica reads slower than master reads half of the
// time.
//
// To change the settings, observe re-elections or read the RTT table, give
// a client a Selector of your own:
//
//	// Every other field keeps the client's default (a 2 ms window, ...).
//	sel, err := replica.NewSelector(replica.Config{MaxStaleness: 5 * time.Second})
//	...
//	c, err := sentinel.NewClient(sentinel.Config{
//		MasterName: "mymaster", SentinelAddrs: addrs,
//		ReadFrom: sentinel.Nearest, ReplicaSelector: sel,
//	})
//
// A Selector serves one client; the client binds it (Bind), tells it the
// topology (UpdateTopology: the master and the replicas Sentinel reports
// healthy and ROLE confirms), asks it for each read (Pick) and closes it
// (Close).
//
// # The election
//
// Every probe round, for the client's topology:
//
//   - A replica is excluded, with the first reason that applies, when it
//     has no RTT sample yet (ExcludedUnprobed: the first round has not
//     completed, or it just joined; a round is run at once for newcomers);
//     its last probe failed (ExcludedUnreachable); its INFO says its
//     replication link is down, a full sync is under way, or it is not a
//     replica (ExcludedLinkDown); MaxStaleness is set and its lag exceeds
//     it or cannot be estimated (ExcludedStale); its average RTT exceeds
//     ExclusionFactor × the master's (ExcludedSlow). The factor rule is
//     strict: with the master at 0.5 ms, a replica at 2.4 ms is slow,
//     although only 1.9 ms farther. It is not applied while the master's
//     RTT is unknown (unreachable, not probed yet): there is no baseline,
//     and a replica that answers is then better than none.
//     Config.ExclusionMargin (default 0) adds a noise floor: a replica is
//     then slow only when also more than the margin above the master. It
//     is for RTTs of tens of microseconds (one host, loopback), where
//     50 µs against 200 µs is scheduling noise; across a network it would
//     let far replicas take reads.
//   - Elected are the eligible replicas whose average RTT is within
//     LatencyWindow of the fastest eligible one (with a negative window,
//     no window: the fastest alone, ties sharing); a replica already elected
//     stays while within 1.5 × LatencyWindow, so one whose average hovers
//     at the edge does not join and leave (and have its connections
//     closed) every round. Reads are spread over
//     them per read by the power of two choices on in-flight reads (two
//     elected replicas drawn at random, the one with fewer reads in flight
//     wins), so equally near replicas get equal shares and one that slows
//     down gets fewer at once, before the next round notices.
//   - Replica and ReplicaPreferred read from the elected replicas.
//     Nearest counts the master as a candidate: it reads from the master
//     when the master is nearer than every elected replica by more than
//     LatencyWindow (within the window, replicas are preferred, sparing the
//     master), and from the elected replicas otherwise.
//   - With no replica elected, ReplicaPreferred and Nearest read from the
//     master. Replica, which must not read from the master, reads from the
//     replicas excluded only for being slow (within LatencyWindow of the
//     nearest of them), and from no other: Pick returns "" and the
//     Sentinel client fails the read with a *sentinel.NoReplicaError
//     that gives each replica's exclusion.
//
// A replica that is unreachable, not probed yet, link-down or stale is
// never handed out, under any read preference: it may not answer, may
// serve data of a master it no longer follows, or data older than the
// caller's bound. A slow replica is different. Slowness is a comparison
// with the master, made so that reads that may go to the master go there
// rather than to a replica several times farther; a Replica read may not
// go to the master (its caller asked never to load it), and a replica
// that answers, is attached and is fresh serves it better than an error:
// slower, but correct. So a slow replica may serve ReadFrom Replica when
// no replica is eligible, and nothing else.
//
// Before the first probe round completes there is no RTT data: Nearest and
// ReplicaPreferred read from the master rather than gamble on a far node,
// and Replica has no replica (none has been vetted); the Sentinel client
// makes such a read wait for the round, within the caller's context and
// its ReadTimeout. The prober starts at the first Pick, so this lasts one
// round (a few round trips to the farthest node; one ProbeTimeout when a
// node does not answer). A replica that joins is probed at once, likewise.
//
// When the replicas Pick may return change (the elected set, or Replica's
// slow fallback), the Selector calls Env.Evict for each replica that left
// them: the client closes its pooled connections to that
// replica (idle ones at once, busy ones when their read returns), so no
// connection stays pinned to the old choice. Since the client picks the
// node per read, reads move at the next read. Evictions and the Observer's
// events are made after the election is installed, in order, from a
// goroutine of the Selector's own, so neither runs under its lock. They
// wait in a bounded queue, the one the Observers of sentinel, multidb and
// hashring use: past it an Event is dropped (Selector.EventsDropped,
// logged) but its evictions are kept.
//
// Pick costs one atomic load of the current election (immutable, swapped
// in whole after each round) and the choice: no lock, no allocation
// (BenchmarkPick).
//
// # Probing
//
// One prober per process per deployment (master name and sentinel set,
// in any order) serves every Selector bound to that deployment, so the
// probe runs once per interval however many clients exist. It starts at
// the first Pick of any of its Selectors (or Start), and stops, closing
// its connections, when the last one closes. The registry of probers is
// the only package-level mutable state in rediskit. The prober runs with
// the ProbeInterval, ProbeTimeout and EWMAAlpha of the Selector that
// created it; a Selector joining with other values logs a warning.
//
// Each round, every node of the bound Selectors' topologies is probed in
// parallel on a dedicated connection (the client's credentials, TLS and
// dialer from Env.NodeOptions; a pool of one connection; every timeout
// ProbeTimeout; no retries; when the client sets a name, that name with
// "-probe" appended, to tell probe connections apart in CLIENT LIST):
// PING twice, and the
// sample is the shorter of the two (delays added by scheduling, a busy
// host or a garbage collection only lengthen a round trip and rarely hit
// both, and the first PING may include dialling). A PING that times out
// ends the probe as failed; a PING that fails otherwise is tried again (a
// pooled connection the network closed), three PINGs at most. Then the
// master answers ROLE and each replica INFO replication. A failed probe
// marks the node unreachable, resets its average and drops its connection
// (the next round dials afresh). The election runs when the whole round is
// in; every command is bounded by ProbeTimeout, and a node that does not
// answer at all costs one timeout.
//
// RTT is smoothed with an exponentially weighted moving average: each
// sample moves the average by EWMAAlpha (default 0.75) of the difference;
// the first sample after a start or a failed probe seeds it. 0.75 makes a
// real change of latency re-rank the replicas at the next round: after the
// near (6 ms) and far (42 ms) replicas swap, with the master at 6 ms, the
// new near replica's average is 42 − 0.75 × 36 = 15 ms after one sample,
// under 3 × 6 ms, so it is elected at once (any alpha ≤ 2/3 needs two
// rounds), while a one-round outlier moves the average by three quarters
// and is down to 6% two rounds later. A second sample confirms a change:
// two samples in a row off the average by more than half of it (and
// 0.5 ms), on the same side and within a quarter of each other, re-seed
// the average at
// the newer one, so the new near replica is at 6 ms at the second round
// (within a 2 ms latency window of a 6 ms master, which Nearest needs;
// plain smoothing would take two more rounds), while an outlier followed by
// a normal sample is only smoothed. A round that finds such a sample runs
// the next one a quarter interval later (at least MinProbeInterval), not a
// whole interval, so the confirmation comes soon and a node that keeps
// jittering costs at most one extra round per interval. A swap is followed
// within one interval plus one round; Nearest with the master as near as
// the new near replica, which needs the confirmed average, within 1.25
// intervals plus two rounds.
//
// The default interval, 2 s, is the Sentinel client's default
// RefreshInterval: the election is as fresh as the topology it applies
// to. The seed design probed every 30 s, which can leave reads on a
// replica that became 7× slower for half a minute; MongoDB drivers use
// 10 s (500 ms floor), but their heartbeat also discovers the topology,
// which Sentinel does here. A round costs each node two PINGs and one ROLE
// or INFO per process, 1.5 commands per second per node at 2 s, and the
// lag estimate is good to one interval, so MaxStaleness can be a few
// seconds. The floor, MinProbeInterval, is 100 ms.
//
// # Staleness
//
// A replica's lag is judged against the master's replication offset:
//
//   - Bytes: the master's offset (its ROLE reply, this round) minus the
//     replica's. The replica's own offset (slave_repl_offset in its INFO
//     replication, read this round) is used; the acknowledged offset the
//     master's ROLE lists is the fallback (replicas acknowledge once a
//     second, so it lags by up to a second even when the replica does not).
//   - Seconds: the prober keeps the master's offsets with the times it saw
//     them (one entry per offset; an idle master costs nothing; up to 10
//     minutes or 4,096 entries). The replica lacks the byte after its
//     offset; the master wrote it after the last time it was seen at or
//     below that offset (t0) and by the first time it was seen beyond it
//     (t1). Assuming writes evenly spread over that span, the byte is dated
//     by interpolation, and the lag is the time since. It is never less
//     than the time since t1 nor more than the time since t0, so it is
//     good to one probe interval; MaxStaleness must be at least
//     ProbeInterval. A replica behind the whole history has a lag of at
//     least its age (NodeStatus.LagAtLeast). A replica that lacks nothing
//     the master was seen to hold has lag 0: with the master silent
//     (unreachable) a replica is judged against what the master last held.
//   - A replica that the master's ROLE does not list (following another
//     master, mid-failover) has no lag estimate: with MaxStaleness set it
//     is excluded. Its link status (master_link_status, a sync in
//     progress) excludes it whatever MaxStaleness says.
//   - master_last_io_seconds_ago is shown (NodeStatus.LastIO) but not
//     judged: an idle master writes to its replicas only every
//     repl-ping-replica-period (10 s by default), so silence is not lag.
//
// Offsets include the replication stream's own PINGs, so an idle master's
// offset still moves every repl-ping-replica-period; that is harmless. A
// replica that is excluded comes back at the first round that finds it
// caught up.
//
// # Observing
//
// Table returns the RTT table the election was made on: per node the
// role, average and last RTT, samples, health and last error, link and
// lag (bytes, seconds), whether it is elected (and whether Nearest reads
// go to it), and if excluded, why, in a word (Exclusion) and in a
// sentence (Why). Config.Observer receives an Event for each change of the
// election, with its Reason (first round, topology, unreachable, link
// down, stale, slow, recovered, rtt) and a Detail per node; the Logger
// gets the same at Info. Rounds and WaitRound tell how many probe rounds
// the Selector has received.
//
// A tool that shows the table without reading (the CLI's probe command)
// builds a client with its own Selector and starts the prober at once:
//
//	sel, err := replica.NewSelector(replica.Config{ProbeInterval: interval})
//	c, err := sentinel.NewClientFromURL(url, sentinel.Config{ReplicaSelector: sel})
//	defer c.Close()
//	err = sel.Start()
//	for n := uint64(1); ; n++ {
//		if err := sel.WaitRound(ctx, n); err != nil { ... }
//		print(sel.Table())
//	}
//
// # Defaults
//
// A zero Config field takes the default below, so the zero Config is the
// Sentinel client's default selector, and a Config that sets one field
// (replica.Config{MaxStaleness: 5 * time.Second}) changes that field
// alone. A negative LatencyWindow means no window: a single winner, the
// nearest replica alone. The window is 2 ms by default because on real
// networks replicas a fraction of a millisecond apart are equally near,
// and sharing the reads among them spreads the load and keeps the choice
// from following every wobble of the averages (each change closes the
// client's connections to the replica that left).
//
// Changed before the first release: the zero LatencyWindow used to elect
// a single winner, and DefaultConfig() gave the client's 2 ms window, so
// a Config that set only MaxStaleness silently stopped spreading reads.
// Now Config{}.LatencyWindow is DefaultLatencyWindow, as in the client's
// default selector; DefaultConfig is gone (use Config{}), and a single
// winner is a negative LatencyWindow.
//
//	ProbeInterval    2 s      (DefaultProbeInterval; floor 100 ms)
//	ProbeTimeout     1 s      (DefaultProbeTimeout)
//	ExclusionFactor  3.0      (DefaultExclusionFactor; math.Inf(1): off)
//	ExclusionMargin  0        (no noise floor: the factor rule is strict)
//	LatencyWindow    2 ms     (DefaultLatencyWindow; negative: a single winner)
//	MaxStaleness     0        (no bound)
//	EWMAAlpha        0.75     (DefaultEWMAAlpha)
//	Observer         none
//	Logger           the client's (Env.Logger), else discarded
//
// Reads from replicas may be stale: locks, idempotency claims, stream
// consumer groups, version counters and any flow that reads its own writes
// belong on the master (sentinel.WithReadFrom(ctx, sentinel.Master)).
package replica
