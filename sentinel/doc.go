// Package sentinel is a go-redis client for Redis Sentinel deployments that
// finds the master reliably, sends read-only work to replicas when asked,
// and follows failovers without running a write twice.
//
//	c, err := sentinel.NewClient(sentinel.Config{
//		MasterName:    "mymaster",
//		SentinelAddrs: []string{"10.0.0.1:26379", "10.0.0.2:26379", "10.0.0.3:26379"},
//		ReadFrom:      sentinel.ReplicaPreferred,
//	})
//	...
//	err = c.Set(ctx, "k", "v", 0).Err() // every go-redis command method works
//
// Client satisfies redis.UniversalClient: Pipeline, TxPipeline, Watch,
// Subscribe and the rest behave as in go-redis, routed as described here.
// NewClientFromURL takes a redis+sentinel:// URL (see package redisurl).
//
// # Finding the master
//
// The client asks the sentinels in order. A sentinel that is down or slow
// (SentinelTimeout) is skipped; the one that answers is asked first next
// time; further sentinels are learned from SENTINEL SENTINELS. The node a
// sentinel names is verified with ROLE. ROLE alone cannot expose a stale
// sentinel mid-failover, because the old master keeps answering "master"
// until Sentinel demotes it (seconds later), so the client asks SENTINEL
// MASTER, which gives the address GET-MASTER-ADDR-BY-NAME gives plus the
// master's config epoch, and skips a sentinel whose epoch is older than one
// already seen, or which names a master the client left at that epoch. (A
// sentinel user not allowed SENTINEL MASTER is asked GET-MASTER-ADDR-BY-NAME
// and judged by ROLE alone.) When no sentinel qualifies, discovery retries
// briefly within the caller's context and DiscoveryTimeout; the
// *DiscoveryError lists every sentinel and why it was skipped. A
// MasterName no sentinel monitors is not retried: the error matches
// ErrUnknownMaster at once and lists, in Monitored, the names the
// sentinels do monitor (a typo is the usual cause).
//
// The client subscribes to the events of every known sentinel, not one: the
// sentinel that leads a failover announces +switch-master about a second
// after the others, and it is the only one that announces the replica it
// promotes, before promoting it. Events are hints: nothing is switched
// before ROLE confirms it. Because events can be missed (a sentinel that
// restarted a second ago is not subscribed to yet), the topology is also
// re-checked every RefreshInterval, asking every sentinel (SENTINEL
// MASTER, REPLICAS and SENTINELS, one round trip each), and every
// SentinelPollInterval (250 ms) every sentinel is asked SENTINEL MASTER:
// a leader whose flags say failover_in_progress, and whose SENTINEL
// REPLICAS flags a replica promoted, holds writes as +selected-slave does.
//
// Further sentinels are learned from SENTINEL SENTINELS: a peer is learned
// only when most of the sentinels that answered list it, and never past
// MaxSentinels (10), so one sentinel cannot make the client dial (and send
// the sentinel password to) addresses of its own.
//
// Replicas are bounded likewise: a refresh keeps at most MaxReplicas (256)
// of the replicas the sentinels list, across all of them, and validates
// each address (below) before anything is dialled; only those it keeps are
// checked with ROLE, read from, probed by the poll and counted for durable
// writes. Past the bound it keeps the replicas listed by the most
// sentinels, ties in the order first listed (the sentinels in the order
// asked, each list in its order), refused addresses last; it reports the
// cut once (EventReplicasLimited, a WARN log) until the lists fit again,
// and refuses durable writes meanwhile (a *NotDurableError, not sent): the
// replicas left out could be promoted without them. (A sentinel listing
// 50,000 replicas made the client dial thousands of them, a SET miss its
// 2 s deadline and Close take 10 s; now the client dials at most 256 of
// them, and what remains is reading the list: 0.2-0.3 s for 50,000 rows.)
//
// # What the client trusts
//
// The client dials whatever address a sentinel names and sends the data
// nodes' credentials there: a sentinel that lies, or one an attacker
// controls, can redirect traffic and collect credentials. Every address in
// a reply (SENTINEL tables, ROLE, events) is validated before it is
// dialled, and a malformed one (an empty host, a port out of range) is
// refused with an *AddressError that names the server and what it said.
// AllowedNetworks, when set, is the only place the client connects to (a
// host name is checked once resolved, before anything is sent); MapAddr
// translates announced addresses, for NAT and port forwarding. TLS with
// verification is what proves a node is the one it claims to be.
//
// Nothing a sentinel, or a data node answering the client's own commands
// (ROLE, the probes), sends may crash the process or make it allocate
// without bound: replies on those connections are checked before go-redis
// parses them (a line over 64 KiB, a string over 16 MiB, an aggregate of
// over 65,536 elements, a reply of over a million elements or 32 MiB, or
// one go-redis cannot read, closes the connection as a bad server's), and
// a panic in any goroutine the client owns is recovered and reported. The
// replies to the caller's own commands (pipelines, transactions, pub/sub,
// SCAN and replica reads included) are bounded too, by Config.ReplyLimits,
// with generous defaults (a 512 MiB string, 16,777,216 elements a header,
// 128 levels, 1 GiB a reply): a reply over a limit, such as a GET
// answered with "*2147483647", fails that command with a *ReplyLimitError
// (inside its *NodeError; the command was sent, so it may have run) naming
// the node and the limit, and closes the connection; the next command
// gets a new one.
//
// # Failovers
//
// When the leading sentinel announces the replica it promotes
// (+selected-slave), the client stops sending writes to the old master at
// once: writes wait (up to FailoverHold) instead. From that moment, what
// the old master acknowledges can be discarded when it is demoted. The
// client then polls the candidate's ROLE and switches as soon as it answers
// master (typically within a few hundred milliseconds), or when a sentinel
// announces +switch-master. A replica that answers ROLE master while the
// master still does (a promotion the client did not hear of, or an
// operator's REPLICAOF NO ONE) also holds writes, but its ROLE alone never
// moves them: the client switches only when a sentinel names it, and
// otherwise, after FailoverHold, goes on writing to the master the
// sentinels name. Writes that waited are then sent to the new master: they
// never reached the old one. A failover the client followed on the
// candidate's ROLE can still be aborted (its leader died before announcing
// it): the other sentinels then name the old master at its old epoch and
// turn the candidate back into its replica. The client returns to the old
// master as soon as the candidate answers ROLE as that master's replica,
// provided no sentinel ever named the candidate at a newer epoch; plain
// writes the candidate acknowledged meanwhile are lost with its resync, as
// they would be for any client. Connections to the old master are closed: idle ones
// at once, busy ones when their command returns; none is reused. A write
// that waited FailoverHold (or until its context ended) fails with a
// *WriteHeldError (errors.Is ErrFailoverInProgress), unsent: re-running it
// is safe.
//
// # A master cut off
//
// When the master is cut off from the sentinels and its replicas while the
// client still reaches it, Sentinel promotes a replica and everything the
// old master acknowledges meanwhile is lost when the partition heals. The
// sentinel poll sees it coming, and holds writes (as in a failover, up to
// FailoverHold each, failing with a *WriteHeldError) at the first sign
// that the replicas do not receive the master's writes while Sentinel may
// act on it:
//
//   - every replica Sentinel could promote stopped advancing between two
//     polls while the master was ahead of it, or lost its link (ROLE on
//     the master and on each, every poll); or
//   - a sentinel cannot reach the master (a PING of its pending longer
//     than a round trip between them can take, which the client bounds
//     by its own round trips to each; or the master flagged down or
//     disconnected), and the master cannot get a write confirmed by all
//     of them (PUBLISH and WAIT, on a channel of its own).
//
// Until a quorum of sentinels cannot reach the master, such a hold is a
// suspicion: it ends as soon as that quorum has had a PING answered by
// the master since the hold began (they still reach it, so no failover
// comes and nothing is lost), once per episode. Once the quorum cannot
// reach it either, the hold lasts until the sentinels replace the master
// (writes go to the new one) or reach it again. EventMasterIsolated and
// EventIsolationEnded report it. Against go-redis's NewFailoverClient in
// the same partition, this loses about a tenth as many acknowledged
// writes (0.09-0.15 in BENCHMARKS.md); durable writes lose none. SentinelPollInterval
// (negative: off) sets the pace; each poll is a SENTINEL MASTER to every
// sentinel and a ROLE to the master and each replica.
//
// A call that fails with a sign that the master may have moved (a
// connection refused or dropped, READONLY, MASTERDOWN, LOADING) triggers
// one re-resolution, shared by the calls failing at the same time. A
// timeout starts one in the background and returns at once: the caller has
// already waited its read timeout, and timed-out work is never re-run. The
// caller's own cancellation or deadline is not a sign of anything. Then:
//
//   - Read-only work (a command, a pipeline, a script the classifier calls
//     read-only) is re-run once on the re-resolved target. A second failure
//     is returned as it is.
//   - Writing work is re-run once on the new master only if it provably did
//     not execute: no connection was made, it was never sent, or every write
//     in it was refused before execution (READONLY, MASTERDOWN, LOADING, or
//     EXECABORT for a transaction). StrictWrites forbids even that.
//   - Otherwise (a timeout, a connection lost after sending, a pipeline
//     whose earlier writes ran) the call fails with a *MasterChangedError
//     naming the sentinel, the new and the old master, and whether the work
//     may have executed. The client already points at the new master;
//     whether to re-run is the caller's decision. A timeout alone never
//     re-runs a write.
//   - If the master did not change, the error is returned: a failure with
//     no answer from the node (a connection not made or lost, a timeout)
//     as a *NodeError that names the node and whether the work may have
//     run, and unwraps to what go-redis reported; a reply from the server
//     (WRONGTYPE, redis.Nil, ...) as go-redis returns it.
//
// The data-node clients run with go-redis retries off (MaxRetries -1,
// DialerRetries 1): this package alone decides what is re-run.
//
// # Acknowledged writes that vanish, and durable writes
//
// Replication is asynchronous: a write the master acknowledged can be
// missing on the replica Sentinel promotes. The early hold above makes that
// window short, but no client can close it alone. With Durable (or
// WithDurable per call) every write is followed, on the same connection, by
// WAIT within DurableTimeout; the call succeeds only if WAIT counts as many
// confirmations as there are replicas in this union, and otherwise fails
// with a *NotDurableError:
//
//   - every replica the master's ROLE lists as connected (the ones it
//     streams to; WAIT counts their acknowledgements);
//   - every replica any sentinel knows, down or not, but those with
//     replica-priority 0, which Sentinel never promotes
//     (DurableEveryKnownReplica, the default). With DurablePromotable,
//     the opt-in for availability, only the replicas a sentinel could
//     promote now: those its SENTINEL REPLICAS does not flag s_down,
//     o_down or disconnected, with a replica-priority other than 0 and a
//     master link down for at most ten times down-after-milliseconds, plus
//     how long the sentinel has seen the master down (Sentinel's own rules
//     for choosing). Every sentinel, because any may lead the next
//     failover, and one's view can be wrong for a moment (one just
//     restarted lists every replica disconnected);
//   - every replica the client verified itself (ROLE), and every listed
//     replica whose ROLE says master (a promotion under way: it cannot
//     confirm, so nothing is durable, as it must not be).
//
// Reachable or not from the client: a replica the client cannot reach,
// which Sentinel and the master can, still counts. Why the whole union:
// WAIT counts confirmations, not names, and after a promotion the old
// master keeps replicating to the other replicas until Sentinel
// reconfigures them. Any smaller count can be met by those replicas without
// the promoted one, and the write is then lost with the old master. With
// the union, WAIT succeeds only if every connected replica confirmed, and
// it can succeed at all only if every counted replica is connected; the
// promoted replica, gone from the old master, can never be one of them.
// When the last refresh found a counted replica not connected to the
// master, a durable write is refused before it is sent (a *NotDurableError
// with NotSent and Unconfirmable: re-running it later is safe) rather than
// run and left unconfirmed, and a refresh is asked for at once.
//
// What is promised, exactly. A durable write acknowledged was received by
// every replica counted as of the last topology refresh (RefreshInterval;
// the lists come from it, so no round trip is added to the write; a
// replica that attached to the master since is not counted until the next
// one). With the default scope, every replica any sentinel knows was
// counted, so none can be promoted without the write, whatever fails
// afterwards. With DurablePromotable the write can still be lost when
// Sentinel later promotes a replica that was not counted when it was
// confirmed: one that was down then (crashed, or flagged down or
// disconnected by every sentinel), comes back with older data, and is
// promoted because the replicas that had the write are gone too (two
// failures). The commonest way there is a double fault: the master is
// killed, a replica is promoted and confirms writes without it, that
// replica is killed while the first is still down, and the first
// restarts from its old data and is promoted (Sentinel admits a replica
// whose link to the master has been down only since it restarted). A
// replica the sentinels learn of only later (a new one added from an old
// backup and promoted before it synchronised) is outside both promises.
//
// What each scope survives, for a durable write once acknowledged, and
// what it costs (each row is a lab test: TestDurableDoubleFault,
// TestDurableScopesWhenADownReplicaComesBackStale, TestDurableAOF,
// TestPartitionedMasterLosesFewWrites, TestRandomFaults; figures in
// BENCHMARKS.md):
//
//	fault, after the write was acknowledged      EveryKnownReplica (default)  Promotable
//	a replica down when it was confirmed, then   survives: refused while the  lost
//	  promoted with older data                   replica was down
//	double fault: master killed, the replica     survives: refused while the  lost
//	  promoted killed while the first is down,   first was down
//	  the first restarted stale and promoted
//	the old master restarted stale, or any       survives                     survives
//	  replica restarted with old data, while
//	  the master lives: it resynchronises
//	the master cut off from the sentinels and    survives: no replica         survives
//	  its replicas, the client still reaching    confirms across the cut
//	  it (the others promote a replica)          (and the poll holds writes)
//	sentinels killed or restarted, one at a      survives: the union of       survives
//	  time (a restarted one lists replicas       every sentinel's view
//	  disconnected)
//	every server that had it loses power         with DurableAOF: survives    same as
//	                                             (fsynced); without: lost     the default
//	a replica added later, from an old backup,   lost                         lost
//	  promoted before it synchronised
//
//	cost                                         EveryKnownReplica (default)  Promotable
//	a replica crashes (or the master does, and   writes refused unsent until  refused until every
//	  is failed over)                            it is back and in sync       sentinel flags it down
//	a replica gone for good                      refused until SENTINEL       refused until flagged
//	                                             RESET <master> forgets it    down (seconds)
//	a replica hangs (SIGSTOP, a black hole)      refused until it is back     refused until the master
//	                                                                          drops it (repl-timeout)
//	                                                                          and it is flagged down
//	after a planned failover                     refused until Sentinel converts the old master
//	                                             (four publish periods, ~11 s with Redis's timings)
//	every write                                  one replica round trip (WAIT; with DurableAOF,
//	                                             WAIT and WAITAOF)
//
// So with the default scope, after a master crashes and is failed over,
// durable writes are refused (a *NotDurableError with NotSent and the old
// master in Unconfirmable: safe to re-run later) until the old master is
// back and converted into a replica, or an operator who knows it is gone
// for good runs SENTINEL RESET on every sentinel. Choose
// DurablePromotable where writing on through a crash matters more than a
// second fault within the same outage.
//
// Stats.DurableReplicas and NotDurableError.Replicas list the replicas
// counted. What it costs: one replica round trip per write (see
// BENCHMARKS.md). Durable writes fail while a counted replica cannot
// confirm: one that crashed, until it is back (with DurablePromotable,
// until every sentinel flags it down, down-after-milliseconds); one that
// hangs, until the master also drops it (repl-timeout, 60 s by default),
// because it could wake and confirm in place of the replica being
// promoted, and with the default scope until it is back; one that is
// resynchronising, until it is in sync. After a failover, Sentinel lists the old master as a replica of
// the new one, and durable writes count it: if it is still running, they
// fail until Sentinel has turned it into a replica and it has synchronised
// (until then Sentinel could promote it, without the new master's writes:
// Sentinel's choice does not look at the role a replica reports); if it
// is gone, until it is back (with DurablePromotable, until a refresh
// finds it flagged down or disconnected). Sentinel
// turns it into a replica at the first INFO it sends it four publish
// periods after the switch: with Redis's own timings (info-period 10 s,
// publish-period 2 s) durable writes fail for about 11 s after every
// failover (11.1-11.8 s in BENCHMARKS.md), with the lab's 3.2-3.3 s. No client can shorten that safely:
// only that conversion makes the old master unpromotable, and a client
// running REPLICAOF on it would race Sentinel. An operator who knows the
// failover is done can run REPLICAOF <new master> on the old master,
// which is what Sentinel will do. A replica reported under two different
// addresses is counted twice, which fails every durable write rather than
// let one through: this happens when replicas announce a hostname
// (replica-announce-ip) that the master's ROLE reports as given while
// Sentinel, with resolve-hostnames yes and announce-hostnames no, reports
// the resolved IP. Set announce-hostnames yes on the sentinels (or announce
// IPs) to use durable writes there; Stats.DurableReplicas shows the
// doubled entries.
//
// Received is not on disk. WAIT counts replicas that received the write,
// in memory: a power cut of every server it was counted on loses it. With
// Config.DurableAOF the same count is asked of the append-only files: WAIT
// and then WAITAOF 1 N on the same connection, so a write succeeds only
// once the master fsynced it to its AOF and N replicas fsynced it to
// theirs. It needs WAITAOF (Redis 7.2 or newer, Valkey 7.2 or newer) and
// appendonly yes on the master and every counted replica (with
// appendfsync always an fsync follows each write; with everysec WAITAOF
// waits for the next one, up to a second). A master without WAITAOF
// (Redis 7.0) or without an AOF refuses DurableAOF writes before they are
// sent: a *NotDurableError with NotSent whose Cause wraps
// ErrAOFUnavailable, checked once per master and again at most every
// second while it fails. A counted replica without an AOF never confirms,
// so the writes run and fail as not durable (AOF, Acked and LocalFsynced
// say what was fsynced). Why WAIT first: a replica reports its fsynced
// offset when it answers the master's request for acknowledgements, and
// Valkey 8.0 answers the request that comes with the write before the
// fsync that follows it, then reports again only a second later; the
// WAIT's own round gives the replicas the time to fsync. Measured on
// Valkey 8.0.1 with appendfsync always and two replicas (2026-12-05,
// BenchmarkWaitAOFSequences): write + WAITAOF 1.005 s at the median,
// write + WAIT + WAITAOF 1.06 ms (p90 2.5 ms); the
// first durable write after a replica's full synchronisation still takes
// about a second (it rewrites its AOF and reports the fsync with its next
// periodic acknowledgement).
//
// # Reads from replicas
//
// ReadFrom (or WithReadFrom per call) chooses where read-only work runs:
// Master (default), Replica, ReplicaPreferred, Nearest. "Read-only" is
// decided by package classify, per command, per pipeline (all commands
// read-only), and per script (EVAL_RO, or a no-writes shebang); MULTI,
// server commands, blocking and pub/sub commands go to the master. The
// ReplicaSelector chooses among the replicas Sentinel reports healthy (not
// s_down, o_down or disconnected, link up) and ROLE confirms, and the
// client reads only from the replica it hands out. When it hands out none,
// ReplicaPreferred and Nearest read from the master; Replica, which never
// reads the master, fails with a *NoReplicaError (errors.Is ErrNoReplica)
// naming the deployment and, for each replica, why it was not used.
//
// The default selector is latency-aware (package replica): one prober per
// process and deployment times PING to the master and every replica on
// dedicated connections every 2 s, starting at the first read that may go
// to a replica, and reads go to the replica with the lowest smoothed
// round-trip time (replicas within 2 ms of it share the reads), never to
// one slower than 3 × the master, one whose probe failed, one whose
// replication link is down, or (with a staleness bound) one lagging
// beyond it. Nearest counts the master as a candidate: it reads from the
// master when the master is nearer than every eligible replica by more
// than that window. Until the first probe round completes (milliseconds
// after the first such read), Nearest and ReplicaPreferred read from the
// master rather than gamble on a far replica, and Replica waits for the
// round (within the caller's context and ReadTimeout). With no eligible
// replica, Replica reads from the nearest replica excluded only for being
// slow (slower than the master, but answering, attached and fresh: better
// than an error, since it may not read the master), and fails when there
// is none. When the election changes, pooled connections to replicas that
// left it are closed. Give Config.ReplicaSelector a replica.Selector of your own to
// change its settings (interval, exclusion factor, window, a staleness
// bound), to receive its re-elections (its Observer), or to read its RTT
// table.
//
// Reads from replicas may be seconds stale. Locks, idempotency claims,
// stream consumer-group operations, version counters, and any flow that
// reads its own writes must use the master: WithReadFrom(ctx, Master).
//
// # Work that spans calls: SCAN, blocking calls, Conn
//
// A SCAN, SSCAN, HSCAN or ZSCAN cursor is valid only on the node that
// issued it. The client tags every cursor it returns with that node, in
// bits no server cursor uses, and continues a tagged cursor there
// whatever ReadFrom or the replica election says by then: an iteration
// neither skips nor repeats elements because two replicas share the
// reads. When the node is no longer one the client routes to (the master
// was replaced, the replica left the healthy set), the call fails unsent
// with a *CursorError (errors.Is ErrCursorLost): start again from cursor 0.
// ScanIterator works unchanged.
//
// A blocking call (BLPOP, BRPOP, BLMOVE, BZPOPMIN, XREAD and XREADGROUP
// with BLOCK, WAIT, ...) waiting on the master when the client switches to a
// new one is ended with CLIENT UNBLOCK ... ERROR (nothing was popped, the
// call provably did not run) and sent again to the new master, so a
// consumer follows the failover at once instead of waiting on the old
// master until it is demoted or its timeout ends.
//
// Conn and EphemeralConn are pinned to the master of the moment and do not
// follow failovers; a subscription does (below). Wait and WaitAOF are
// refused with an *UnsupportedError (errors.Is ErrUnsupported): WAIT counts
// the writes of its own connection, and the client chooses the
// connection of each call; use durable writes. So is
// RegisterPushNotificationHandler. Every other method of *redis.Client
// works as in go-redis, routed.
//
// # The errors a caller sees
//
// Every error a call returns, and each command's Err in a pipeline or a
// transaction, is one of two things. Either the command's own answer,
// returned as go-redis returns it: redis.Nil, WRONGTYPE, a script's
// error, redis.TxFailedErr (a WATCH conflict), a transaction's EXECABORT
// caused by a queued command's own syntax error. Or one of this package's
// errors: a *NodeError (the node and its role, read or write,
// MayHaveExecuted; it wraps the cause: a timeout, a connection lost, the
// caller's context's end, or a refusal such as READONLY or LOADING when
// no new master took over), a *MasterChangedError, a *WriteHeldError, a
// *NotDurableError, a *NoReplicaError, a *DiscoveryError (no master known
// yet), a *CursorError, or ErrClosed after Close. Never a bare i/o
// timeout, context error or EOF: errors.As with the types above places
// every failure.
//
// MayHaveExecuted is false only when the work provably did not run
// (never sent, or refused before it ran); a write sent without an answer
// (a timeout, the caller's deadline, a connection lost) may have run,
// and is never sent again by the client. In a pipeline each command says
// so of itself, and the error Exec returns is the first failed command's.
// A transaction is all or nothing: every command and the EXEC say the
// same (did not run, when a queued command or the EXEC was refused; may
// have, when the EXEC got no answer). A Watch function's own error is
// returned as it is; a failure it passed on from a command is typed as
// the rest.
//
// # Auto-pipelining
//
// With Config.AutoPipeline, commands that concurrent callers run on the
// same node at the same time share round trips: while one batch is on the
// wire (at most AutoPipelineInflight of them per node, each on its own
// connection, and beyond the first only while the client has fewer than
// that on the wire in all), the commands that arrive queue, and the next
// batch sends up to AutoPipelineMaxBatch of them as one pipeline. A far
// node (round trips of 1 ms or more) gets as many batches on the wire as
// the pool has connections: there, waiting for another caller's batch
// would cost a whole round trip, more than the shared one saves. Nothing
// else changes:
// each command is routed on its own (a read to the replica the election
// names, the write beside it to the master), held during a failover,
// re-run once (a read) or only if it provably did not run (a write), or
// refused with a *MasterChangedError, exactly as alone; a connection lost
// under a batch fails each of its commands with that error, to be judged
// on its own. Durable writes of one batch are confirmed by one WAIT (and
// WAITAOF) at its end, counting at least the replicas each needs (the
// other commands of that batch get their replies after it too). A caller
// alone finds the node idle and its command is sent at once, alone: no
// delay, no pipeline. Pipelines, transactions, blocking commands and SCAN
// are never batched.
//
// Use it with many goroutines sending small commands (a web service's
// handlers): measured on one lab master on 2026-12-05, 2.81× go-redis's
// throughput for GET from 64 goroutines and 6.11× from 256, ahead of
// go-redis's own AutoPipeline (2.20× and 4.08×) and rueidis (1.85× and
// 2.77×); at 8 goroutines rueidis was ahead (BENCHMARKS.md, "Auto-pipelining:
// rediskit, go-redis, go-redis AutoPipeline, rueidis"). Paced callers on a
// far master lose nothing to it: 8 callers writing 1,000 times a second
// to a master 6 ms away had the same acknowledged writes and p90 with it
// as without. What it changes: a batch is
// sent without its callers' cancellation, so that one caller giving up
// does not fail the others' commands; a caller whose context ends while
// its command waits in the queue gets the context's error (the command
// was never sent), but once sent it waits for the reply, until the latest
// deadline of its batch's callers (ReadTimeout and WriteTimeout when one
// of them has none). Order is kept within a goroutine (its
// calls block), not between goroutines, as without it. Hooks on the node
// clients (AddHook, OnNewNode) see a batch as one pipeline, with the
// context of its first command's caller.
//
// AutoPipeline and AsyncAutoPipeline return go-redis's auto-pipeliners,
// made on a front of the client: their batches are taken apart and each
// command is routed, held, re-run or refused as above; then each node's
// commands of the batch go to it in the batch's order, as one pipeline.
// go-redis's auto-pipeliners keep submit order (one batch at a time), so
// the commands one goroutine submits to AsyncAutoPipeline without waiting
// for their results run in that order on each node: a write, then the
// write after it; a read routed to a replica is not ordered against the
// master's writes (read from the master, WithReadFrom, when it must see
// them). A command re-run after a failure signal (a read; a write that
// provably did not run) runs after the batch's commands that were not
// refused. go-redis runs those batches without the callers' contexts, so
// deadlines and the per-call options (WithReadFrom, WithDurable) do not
// reach them: Config applies. Config.AutoPipeline keeps both, and is the
// faster of the two (BENCHMARKS.md).
//
// # Credentials, TLS, pub/sub
//
// Data nodes and sentinels have separate credentials. CredentialsProvider
// is called for every new data-node connection, so the new master after a
// failover gets the current token. TLSConfig applies to data nodes and
// (unless SentinelTLSConfig is set) to sentinels. Subscribe, PSubscribe and
// SSubscribe follow the master: after a failover, the subscription is made
// again on the new master (messages published during the switch can be
// lost). A subscription's connection that the client closes for a switch
// reports an error matching ErrSubscriptionMoved to a caller reading it
// with Receive. Every error a subscription's connection reports (Receive,
// ReceiveTimeout, Ping, the end of Channel) is a *SubscriptionError: it
// names the node, says whether the connection could not be made, timed
// out, was lost or moved, and unwraps to the cause; a timeout keeps the
// connection (it is a net.Error timeout, as go-redis expects). The PubSub
// connects and subscribes again by itself on its next call: call Receive
// again. The server's own answers to a subscription command (a NOPERM
// from an ACL) come as go-redis's redis.Error, as a command's answer
// does.
//
// # Standalone primary
//
// Config.Primary (instead of MasterName and SentinelAddrs), or a redis://
// URL given to NewClientFromConfig (rediskit.NewClientFromURL does so),
// serves a primary no Sentinel manages: a standalone server, or a managed
// service's primary endpoint with read replicas. The client is the same,
// with the primary itself as the source of the topology: ROLE on it every
// RefreshInterval says it is a master and lists its replicas (or
// Config.Replicas names them, e.g. a service's read-replica endpoints),
// each checked with ROLE as a sentinel's list is. So it keeps every
// promise above that does not need a failover: reads re-run once, a write
// re-sent only when provably not executed and otherwise a *NodeError
// saying whether it may have run, bounded calls, durable writes confirmed
// with WAIT by every replica it lists (refused unsent when that cannot
// be), replica reads with package replica's latency election, SCAN pins,
// auto-pipelining, reply bounds, hooks and OnNewNode, subscriptions.
// Without Sentinel nobody promotes a replica: a write the primary
// refused unsent (its connection refused during a restart) waits for it
// to answer again, within FailoverHold and the caller's context, and is
// sent once more; one that may have run fails with a *NodeError saying so.
// In TestStandaloneRestart (a SIGKILL and restart from the AOF, then a 2 s
// stall, 8 writers with 500 ms deadlines) go-redis's NewClient wrote 0-5
// ids twice a run and let 8 calls a run outlive their deadline by more
// than 100 ms; this client none of either (BENCHMARKS.md). A primary that answers
// ROLE as a replica gets a *DiscoveryError saying so (Primary set), and
// nothing is sent to it. String says "standalone primary=".
//
// # Observing
//
// Config.Observer receives every Event (master changed, replicas changed,
// failover started, master isolated, read retried, write re-run or
// refused, sentinel skipped), in order, from a goroutine of the client's
// own, so a slow Observer holds up neither a failover nor a call: events
// it has no time for wait in a bounded queue, and past it are dropped
// (counted in Stats.EventsDropped, logged). Close delivers what is
// queued, within a bound. The same contract holds for the Observers of
// replica, multidb and hashring.
// Stats returns counters and the current topology; Config.Logger receives
// records. Diagnose returns a staged trace of the path to the master for a
// person to read; its connections are bounded as the client's own are (a
// reply over a limit fails its step with a *StageError naming the server),
// and the replicas it considers as the client's refreshes are.
//
// AddHook hooks see the caller's calls, once each, as in go-redis, and
// not the client's own checks (ROLE, probes, CLIENT ID before a blocking
// call); a durable write reaches them as the pipeline that carries it and
// the WAIT that confirms it, on one connection. For the standard go-redis
// instrumentation, which must wrap each node's client to record the node
// that served a call, use OnNewNode:
//
//	c.OnNewNode(func(rc *redis.Client) { _ = redisotel.InstrumentTracing(rc) })
//
// It is called for every data node the client has and every one it makes
// later (after a failover, for a new replica). Config.InternalHook is the
// other half: it sees the client's own traffic (the sentinels', the ROLE
// checks, CLIENT ID and CLIENT UNBLOCK) and none of the caller's.
package sentinel
