// Package cluster is a Redis Cluster client that follows failovers and
// migrations per shard without running a write twice.
//
// Each command goes to the master of its key's slot; redirects and
// refusals that prove a command did not run are followed, a shard's
// writes are held while its master fails over, and a write whose outcome
// is unknown is never run twice.
//
// Coming from go-redis's NewClusterClient: FromClusterOptions converts a
// redis.ClusterOptions into a Config, field by field, mapping each to its
// counterpart (the connection and pool settings Config does not restate
// through Config.NodeOptions) or refusing it with the reason (go-redis's
// retries, a fixed slot map, random reads).
//
// # The slot map
//
// The client reads each known node's view (the seeds of Config.Addrs
// first) at once, in one round trip per node on a small control pool of
// its own (so callers holding every connection do not hold up the read
// that finds a failover; its replies bounded by internal/respguard):
// CLUSTER NODES for the slots, roles and config epochs, with CLUSTER
// SHARDS for each node's health and replication offset (a node's own word
// on its offset beats what others heard by gossip; a replica that says it
// is loading, and a failed one, serve no read). A server that refuses
// CLUSTER NODES is read from CLUSTER SHARDS alone, one that refuses both
// from CLUSTER SLOTS: neither carries epochs. From the views it builds an
// immutable map of the 16384 slots to their masters, swapped atomically: a
// command hashes its first key (Slot, with hash tags: "{user:1}:cart" and
// "{user:1}:orders" share a slot; the key's position comes from package
// classify) and loads the map, nothing else. When two nodes disagree
// about a slot (one has not heard of a failover yet), the master with the
// higher config epoch wins, not whoever answered last. The map is read
// again every RefreshInterval (5 s), at once after a MOVED (the moved slot
// is pointed at its new master first), after a node failure, every
// FailoverPollInterval (100 ms) while a master is failing, and after
// refusals (TRYAGAIN, CLUSTERDOWN) at most once per FailoverPollInterval;
// Stats.RefreshesByCause counts them.
//
// # Redirects and refusals
//
// MOVED and ASK (sent after ASKING, on the same connection) are followed;
// TRYAGAIN, CLUSTERDOWN, LOADING, MASTERDOWN, READONLY, a dial failure and
// a command never sent are retried after the map changes or a short
// backoff (10 ms doubling, at most 200 ms): they prove the command did not
// run, so writes are retried as reads are, until WriteHoldTimeout (while a
// shard fails over, Redis's default cluster-require-full-coverage makes
// the healthy shards answer CLUSTERDOWN too: their commands wait rather
// than fail). Redirects are followed at most MaxRedirects (5) times; never
// past the caller's context.
//
// Replies are bounded on every connection, the caller's commands included
// (pipelines, transactions, pub/sub, SCAN, replica reads), by
// Config.ReplyLimits, with generous defaults (a 512 MiB string,
// 16,777,216 elements a header, 128 levels, 1 GiB a reply): a reply over
// a limit, such as a GET answered with "*2147483647", fails that command
// with a *ReplyLimitError (inside its *NodeError; the command was sent, so
// it may have run) naming the node and the limit, instead of reaching
// go-redis's reader, and closes the connection; the next command gets a
// new one.
//
// # Failover
//
// When a master stops answering (no connection, a connection lost, a
// timeout), the client marks it failing and polls the cluster every
// FailoverPollInterval; meanwhile the writes of its slots wait, up to
// WriteHoldTimeout (10 s) and within their context, and go to the master
// the cluster promotes: they never reached the old one. A write that was
// sent and got no answer may have run: it is never sent again, and fails
// with a *MasterChangedError naming the slot, the old and the new master
// (or a *NodeError when no new master appears in time), both saying
// whether it may have executed. A read is run again once. A planned
// failover (CLUSTER FAILOVER) is a MOVED for the client: nothing is lost.
//
// # Split brain
//
// A master cut off from its replicas and from most of the other masters,
// while the client still reaches it, goes on acknowledging writes until
// it sees it lost the majority (cluster-node-timeout); the majority
// promotes one of its replicas, and every write the old master
// acknowledged meanwhile is lost when it rejoins as a replica. The
// client holds the shard's writes from the first sign of it, as package
// sentinel's poll does. Every SplitBrainPollInterval (100 ms; negative
// turns it off) it asks each master with replicas TIME and ROLE and its
// replicas ROLE (on the control pool, at once, each bounded by a few
// rounds), and while a shard is held, or was cleared in the current
// episode, its master's CLUSTER NODES too:
//
//   - a replica behind its master whose received offset has not moved
//     between two rounds, longer than the stream takes to reach it (the
//     client's round trips to both and 50 ms), or that lost its link, has
//     stopped receiving; when every replica that was receiving has
//     stopped, the writes are held on suspicion (about two rounds after
//     the cut: 104-124 ms in TestMinorityPartition);
//   - the master's own CLUSTER NODES says whether it still reaches the
//     other masters: a bus PING pending longer than the round trips and
//     50 ms, a link down, PFAIL or FAIL. When enough of them have answered
//     a PING since the hold began that no majority could fail it over
//     (one of two others, two of four, ...), the hold ends, and the same
//     stall does not hold again until the replicas are seen receiving;
//     a suspicion neither cleared nor confirmed ends after 2 s. When it
//     cannot reach a majority, the hold is confirmed, and stands until the
//     cluster promotes another master (the held writes go there: they
//     never reached the old one), it reaches them again, or its replicas
//     receive again.
//
// A held write (single commands, pipelines, transactions, Watch) waits
// within WriteHoldTimeout and its context; past them it fails with a
// *NoMasterError that says the master was cut off and that nothing was
// sent. An idle master is never held (nothing to receive, nothing to
// lose), nor is one whose replica does not answer the client (a paused or
// dead replica is not watched), nor a cluster of fewer than three masters
// (none can be failed over without the others). The cost when no
// failover follows: a replica cut off alone holds its master's writes
// until another master answers the master's PING, at most half a node
// timeout (TestSplitBrainHoldsLittleWithoutFailover, 1 s node timeout: one
// hold of about 100 ms, nothing refused); a replica paused holds nothing.
// With Redis's default 15 s node timeout the cluster PINGs each node only
// every few seconds, so a suspicion may last its full 2 s. The polling
// costs one pipeline (TIME, ROLE) to each master with replicas and one
// ROLE to each replica per round, replies of a few hundred bytes whatever
// the cluster's size. CLUSTER NODES, whose reply grows with the cluster
// (about 200 bytes a node) and which the master builds each time, is read
// only from a master whose writes are held or were just cleared, until
// its replicas receive again: the first hold needs no bus view (the
// masters are counted from the map), only its confirmation or release
// does. With nothing held the masters see no CLUSTER NODES from the poll
// (TestSplitBrainHoldsLittleWithoutFailover counts them), only the map's
// refreshes. A cluster of hundreds of nodes served by many clients may
// still widen SplitBrainPollInterval (the hold then starts about two
// intervals after the cut) or turn it off. The client sees a replica's
// stream by the offsets ROLE reports, and compares the master a replica
// names with the addresses the cluster announces: behind address translation, replicas
// are not watched and nothing is held. EventMasterIsolated and
// EventIsolationEnded report each hold; Stats.SplitBrainHolds counts
// them, Stats.Isolated names the masters held now. Durable writes (below)
// lose nothing in this case either: they are held too, and a write
// acknowledged was confirmed on the replica.
//
// # Pipelines and transactions
//
// A pipeline is split per master and each part sent at once; results keep
// the pipeline's order; commands refused there with a redirect or a
// refusal that proves they did not run are run again alone, the others
// keep their results. A transaction (TxPipeline, Watch) runs on one node,
// so it must stay in one slot: one whose keys span slots is refused before
// anything is sent with a *CrossSlotError (go-redis's ClusterClient splits
// it into one MULTI/EXEC per slot, silently losing its atomicity). A
// transaction refused before it ran is run again as a command is: MOVED
// and ASK followed (ASKING, then the transaction, on one connection of the
// node ASK names; the server refuses the EXEC with TRYAGAIN if that node
// lacks some of its keys), CLUSTERDOWN, TRYAGAIN and the other refusals
// retried until WriteHoldTimeout. Watch
// is held while its slot's master fails, as a write is, and runs its
// function again only when a refusal proves nothing ran; after a failure
// without an answer it fails saying the EXEC may have run. A
// multi-key command across slots gets the server's CROSSSLOT reply.
//
// # The errors a caller sees
//
// Every error a call returns, and each command's Err in a pipeline or a
// transaction, is one of two things. Either the command's own answer,
// returned as go-redis returns it: redis.Nil, WRONGTYPE, a script's
// error, CROSSSLOT, redis.TxFailedErr (a WATCH conflict), a transaction's
// EXECABORT caused by a queued command's own syntax error. Or one of this
// package's errors: a *NodeError (the node, the slot, read or write,
// MayHaveExecuted; it wraps the cause: a timeout, a connection lost, the
// caller's context's end, or a refusal such as CLUSTERDOWN, TRYAGAIN,
// MOVED past MaxRedirects, or EXECABORT caused by a redirect), a
// *MasterChangedError, a *NoMasterError (nothing was sent), a
// *NotDurableError, a *CrossSlotError, a *CursorError, or ErrClosed after
// Close. Never a bare i/o timeout, context error, EOF or routing reply:
// errors.As with the types above places every failure.
//
// MayHaveExecuted is false only when the work provably did not run
// (never sent, or refused before it ran); a write sent without an answer
// (a timeout, the caller's deadline, a connection lost) may have run,
// and is never sent again by the client. In a pipeline each command says
// so of itself (the parts on each master succeed or fail on their own),
// and the error Exec returns is the first failed command's. A
// transaction is all or nothing: every command and the EXEC say the same
// (did not run, when a queued command or the EXEC was refused; may have,
// when the EXEC got no answer). A Watch function's own error is returned
// as it is; a failure it passed on from a command is typed as the rest.
//
// # Auto-pipelining
//
// With Config.AutoPipeline, commands that concurrent callers send to the
// same node while a batch is on the wire share the next round trip, each
// still routed, redirected, held and judged on its own (internal/routing's
// Batcher, one per node, as in package sentinel). AutoPipeline and
// AsyncAutoPipeline return go-redis's auto-pipeliners over the client:
// their batches are taken apart per command, and each node's share is sent
// in the batch's order, so what one goroutine submits without waiting runs
// in submit order on each node.
//
// # Pub/sub
//
// Subscribe, PSubscribe and SSubscribe return go-redis's own *redis.PubSub
// (Receive, ReceiveMessage, Channel, more subscriptions, Unsubscribe and
// Close all work), on a connection the client places and moves: when the
// slot map says the node no longer serves the subscription, the client
// closes the connection, and the PubSub reconnects, to the node the map
// names now, and subscribes again. Messages published during the move can
// be lost, as with any reconnection; none are while the node stays.
//
// Classic pub/sub (Subscribe, PSubscribe) is broadcast to every node, so
// one node serves every such subscription: a master of the map that is
// not failing. Its subscriptions move when it fails (a lost connection or
// a failed dial marks it failing at once), or leaves the masters of the
// map (a demotion, its removal: at the next map read, within
// RefreshInterval).
//
// Sharded pub/sub (SSubscribe) lives on the shard of the channel's slot,
// so the subscription goes to the slot's master and follows it through a
// failover and a migration of the slot. A node that loses a slot tells
// its subscribers (an sunsubscribe push, Redis 7 and Valkey): the client
// reads the map again at once then, so a subscription moves even when no
// command touches its slot. One PubSub's shard channels must share a slot
// (a hash tag: "{room:1}:a", "{room:1}:b"), in the SSubscribe call and in
// later ones on the PubSub: channels in several slots (or none) are
// refused before anything is sent, the PubSub's Receive returning a
// *SubscribeCrossSlotError (go-redis's ClusterClient sends them to the
// first channel's shard, which replies CROSSSLOT). Use one PubSub per
// slot.
//
// Every error a subscription's connection reports (Receive, ReceiveTimeout,
// Ping, the end of Channel) is a *SubscriptionError: it names the node,
// says whether the connection could not be made (no master for the slot:
// it unwraps to a *NoMasterError), timed out, was lost or moved
// (errors.Is ErrSubscriptionMoved), and unwraps to the cause; a timeout
// keeps the connection (a net.Error timeout, as go-redis expects). The
// PubSub connects and subscribes again by itself on its next call: call
// Receive again. The server's own answers to a subscription command (a
// NOPERM, a MOVED from a node the map has not caught up with, which the
// client follows at its next map read) come as go-redis's redis.Error.
//
// # SCAN
//
// A SCAN-family cursor is valid only on the node that issued it. The
// client tags the cursors it hands out with that node and continues them
// only there: SSCAN, HSCAN and ZSCAN while the node still masters the
// key's slot; SCAN, which has no key, walks every master in address
// order, a master's last page returning the start of the next one's, so
// go-redis's ScanIterator covers the whole cluster (go-redis's
// ClusterClient scans one node). When the node no longer serves the
// iteration (a failover, a migration), the call fails with a
// *CursorError (errors.Is ErrCursorLost) before anything is sent: start
// again from cursor 0. See scan.go for the details.
//
// # Durable writes
//
// Replication is asynchronous: a write a master acknowledged can be
// missing on the replica the cluster promotes. With Config.Durable (or
// WithDurable per call) a write (a command, a pipeline's part on one
// master, a transaction, Watch's EXEC) is followed on the same connection
// by WAIT n (and with Config.DurableAOF by WAITAOF 1 n after it), within
// DurableTimeout: one round trip for a command or a pipeline, two for a
// transaction. It returns nil only when n replicas confirmed it; otherwise
// a *NotDurableError (errors.Is ErrNotDurable) saying that it executed on
// the master and may be lost (MayHaveExecuted: check before re-running),
// with Acked, Required and the replicas counted.
//
// Which n makes "acknowledged" mean "survives any failover the cluster can
// make". A replica is promoted by election: when its master is flagged
// FAIL, each replica of the shard whose data is not too old (no more than
// cluster-replica-validity-factor × cluster-node-timeout, plus the ping
// period, since it last heard from its master; always, with the factor
// 0) asks the masters for votes, after a delay that grows with its rank by
// replication offset. The rank delays a lagging replica; it does not
// exclude it: if the better replicas are slow or gone, it wins. So n must
// cover every replica that could win, and WAIT must be unable to succeed
// without each of them. n is the size of the union of:
//
//   - the replicas the master streams to (its ROLE): WAIT counts
//     confirmations, not names, so every one of them that could stand in
//     for another must be in the count;
//   - the replicas of the shard in the master's own CLUSTER SHARDS that it
//     does not flag failed (FAIL), and those the merged map lists as
//     healthy: every replica that could stand for election.
//
// A replica that is down but not flagged FAIL (PFAIL, or not yet noticed)
// counts: it may be alive and cut off (a partition, a stall) with data
// young enough to win an election when it returns, so the write waits for
// it, and fails. Only once a majority of masters has flagged it FAIL is it
// left out, and durable writes of its shard go on with the others. With
// the union, WAIT n can succeed only if every counted replica is connected
// and every one confirmed; the winner of any election among them has the
// write. When the last check found a counted replica not connected to the
// master, the write is refused before it is sent (NotSent, Unconfirmable
// naming them: re-running it later is safe) rather than run and left
// unconfirmed, and a recheck is asked for.
//
// A shard without replicas has nothing to confirm a write: its durable
// writes are refused unsent, as they are while its master has no replica
// connected at all (after a SIGKILL of the master of a shard of one
// replica, the promoted replica has none until the old master returns
// and resynchronises as its replica).
//
// Where the counts come from. A background check, started by the first
// durable write: each master's ROLE and CLUSTER SHARDS, in one round trip
// on its control connection, at every new slot map (so every
// RefreshInterval, and at once after a failover), for a master no check
// has covered yet (its first durable write waits for it, within
// WriteHoldTimeout), and within 200 ms of a refused durable write. No
// round trip is added to a write. Stats.DurableReplicas lists the replicas
// counted per master, Stats.WritesNotDurable and EventWriteNotDurable the
// writes that failed so.
//
// What is promised, exactly. A durable write acknowledged was received by
// every replica counted at the last check. It can still be lost when the
// cluster promotes a replica that was not counted: one flagged FAIL then
// (crashed, or cut off from the majority), which comes back with older
// data, and wins an election before it has resynchronised, because the
// replicas that had the write are gone too (two failures; a replica
// restarted is safe: it has not heard from a master since its start, so it
// stands for no election until it has resynchronised); a replica added to
// the shard since the last check, whose confirmation can stand in for a
// counted one until the next check; and any manual CLUSTER FAILOVER FORCE
// or TAKEOVER of a replica that lacks the write (an operator's choice).
// With cluster-replica-validity-factor 0 any replica can win however old
// its data: the union covers that too, since a replica is left out only
// when FAIL. A replica announced under two addresses (replica-announce-ip
// other than its cluster address) is counted twice, which fails every
// durable write rather than let one through.
//
// DurableAOF: WAITAOF 1 n after the WAIT counts the master only once it
// has fsynced the write to its own AOF and a replica once it has; a write
// acknowledged so also survives a restart of every server it was counted
// on. It needs WAITAOF (Redis and Valkey 7.2 and newer) and appendonly yes
// on the master and the replicas; without them durable writes are refused
// unsent with a *NotDurableError wrapping ErrAOFUnavailable.
//
// With Config.AutoPipeline (or the auto-pipeliners), the durable writes
// of one batch share one WAIT at its end, counting the most replicas any
// of them needs (internal/routing's Batcher, as in package sentinel); each
// gets its own verdict. What it costs: a replica round trip per write, or
// per batch (see BENCHMARKS.md).
//
// # Events and stats
//
// Config.Observer receives an Event for each master change (the old
// master no longer masters anything: a failover), each move of slots
// between masters (a migration), a master failing and recovering, a failed
// map read, and per call a read retried, a write re-run after a refusal
// that proved it had not run, a write refused (*MasterChangedError), a
// durable write refused or not confirmed (*NotDurableError), and each
// split-brain hold begun and ended, with the Observer contract of
// internal/eventq. The same are logged
// through Config.Logger. Stats counts them, the refreshes by cause, the
// writes held, and the commands sent to each node. OnNewNode hands the
// node clients that carry the caller's commands to go-redis's
// instrumentation (redisotel), as go-redis's ClusterClient does; package
// rediskitotel turns the events and Stats into OpenTelemetry metrics.
//
// ScriptLoad, ScriptExists and ScriptFlush run on every master (they have
// no key), as on go-redis's ClusterClient, so an EVALSHA finds its script
// on whichever shard its key is.
//
// AddHook and OnNewNode reach the go-redis clients of the nodes (a node's
// client, its replica-read client, the clients subscriptions dial
// through), present and future, as on go-redis's ClusterClient; the
// control clients of the client's own map reads are not among them.
//
// # Reading from replicas
//
// Config.ReadFrom (per call: WithReadFrom) says where read-only commands
// (package classify decides) run: Master (the default), Replica,
// ReplicaPreferred or Nearest, as in package sentinel, decided per shard.
// Writes, transactions (TxPipeline, Watch), SCAN iterations and commands
// without a key always go to a master.
//
// Each shard has a replica.Selector of its own (made, re-pointed and
// closed by the topology goroutine as refreshes find shards, failovers
// and replicas, never on a call's path), all bound to one deployment key
// ("cluster:" and the sorted seeds), so one prober per cluster and
// process times every node once per replica.Config.ProbeInterval, however
// many clients and shards there are. The election runs per shard,
// relative to that shard's master, with package replica's rules (the
// exclusion factor, the latency window, the power of two choices on reads
// in flight, MaxStaleness from the master's replication offsets): the
// replicas it may elect are those the map has as healthy (CLUSTER SHARDS:
// not failed, not loading), and of those the prober finds unreachable,
// link-down or stale none serves a read. A round costs each node two
// PINGs and each master one INFO replication, which says how every one of
// its replicas is doing (online or syncing, the offset it acknowledged,
// the time since the master heard from it): no command per replica besides
// the PINGs. A replica the master does not list online, or has not heard
// from for replica.MasterSideLinkTimeout (3 s; replicas acknowledge every
// second), is link-down; its lag is judged from its acknowledged offset,
// so up to a second late (MaxStaleness of a few seconds suits it). CLUSTER
// SHARDS offsets are not used for lag: a node reports other nodes' offsets
// from gossip, which can be node-timeout/2 old. Config.Replica configures
// it.
// The prober starts at the first read that may go to a replica; until its
// first round, Nearest and ReplicaPreferred read from the master, and
// Replica waits for the round (within the call's context and
// ReadTimeout).
//
// A read sent to a replica goes over connections of the replica's own
// that send READONLY when they open (not the node's ordinary ones: a
// master demoted to a replica must answer a stale map's commands with
// MOVED, not serve them). A replica that answers MOVED (the slot left its
// shard) is a redirect as any: the read follows it to the master it names,
// and the map is read again. A replica that gives no answer is avoided by
// the read's one re-run. When a shard's election drops a replica, or a
// refresh finds it no longer a replica of any shard (promoted in a
// failover, failed), its replica connections are closed: idle ones at
// once, busy ones when their read returns. Stats.Nodes counts a replica
// read on the replica.
//
// Under Replica, a read whose shard has no replica that may serve it fails
// with a *NoReplicaError (errors.Is ErrNoReplica) naming the slot, the
// shard's master and each replica with why it was not used; nothing was
// sent. ReplicaTables shows each shard's election.
//
// In a pipeline, the commands are grouped per master as before; a group
// with no write and no SCAN page goes whole to one replica of its shard
// that the election hands out, else to the master (under Replica, a group
// whose shard has no replica fails its commands with a *NoReplicaError).
//
// Replica reads may be stale: a read that must see the caller's own write
// uses WithReadFrom(ctx, Master). A redis+cluster:// URL's readFrom
// (master, replica, replicaPreferred) applies when Config.ReadFrom is
// empty; Config.ReadFrom, when set, wins.
package cluster
