// Package cluster is a Redis Cluster client with rediskit's guarantees per
// shard: each command goes to the master of its key's slot, redirects and
// refusals that prove a command did not run are followed, a shard's writes
// are held while its master fails over, and a write whose outcome is
// unknown is never run twice.
//
// # The slot map
//
// The client reads CLUSTER NODES from every node it knows (the seeds of
// Options.Addrs first) at once, and builds an immutable map of the 16384
// slots to their masters, swapped atomically: a command hashes its first
// key (Slot, with hash tags: "{user:1}:cart" and "{user:1}:orders" share a
// slot; the key's position comes from package classify) and loads the map,
// nothing else. When two nodes disagree about a slot (one has not heard of
// a failover yet), the master with the higher config epoch wins, not
// whoever answered last. The map is read again every RefreshInterval (5 s),
// at once after a MOVED (the moved slot is pointed at its new master
// first), after a node failure, and every FailoverPollInterval (100 ms)
// while a master is failing.
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
// # Pipelines and transactions
//
// A pipeline is split per master and each part sent at once; results keep
// the pipeline's order; commands refused there with a redirect or a
// refusal that proves they did not run are run again alone, the others
// keep their results. A transaction (TxPipeline, Watch) runs on one node,
// so it must stay in one slot: one whose keys span slots is refused before
// anything is sent with a *CrossSlotError (go-redis's ClusterClient splits
// it into one MULTI/EXEC per slot, silently losing its atomicity). Watch
// is held while its slot's master fails, as a write is, and runs its
// function again only when a refusal proves nothing ran; after a failure
// without an answer it fails saying the EXEC may have run. A
// multi-key command across slots gets the server's CROSSSLOT reply.
//
// # Auto-pipelining
//
// With Options.AutoPipeline, commands that concurrent callers send to the
// same node while a batch is on the wire share the next round trip, each
// still routed, redirected, held and judged on its own (internal/routing's
// Batcher, one per node, as in package sentinel). AutoPipeline and
// AsyncAutoPipeline return go-redis's auto-pipeliners over the client:
// their batches are taken apart per command, and each node's share is sent
// in the batch's order, so what one goroutine submits without waiting runs
// in submit order on each node.
//
// # Not yet
//
// This first version reads from masters only, and does not yet offer
// pub/sub, SCAN across nodes, events or metrics; see the issues that
// follow.
package cluster
