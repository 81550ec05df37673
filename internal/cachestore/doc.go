// Package cachestore is the machinery of rediskit's server-assisted
// client-side cache, under every topology: a Store of cached replies per
// node and key, bounded in bytes, and a Tracker per node that keeps the
// server's promise to send invalidations and says, at every moment,
// whether that promise holds.
//
// # How invalidations arrive: one broadcast connection a node
//
// Each node's Tracker holds one connection that asks the server to track
// every key in broadcast mode and to send the invalidations to itself
// (CLIENT ID, then CLIENT TRACKING ON REDIRECT <its own id> BCAST
// [PREFIX p ...], then SUBSCRIBE __redis__:invalidate, RESP2). In
// broadcast mode the server invalidates by key, whoever read it, so the
// tracking does not depend on the connections the reads go on: cached
// reads take the node's ordinary pool (routing, auto-pipelining, holds and
// re-run rules unchanged), and a pooled connection that dies or is reaped
// costs nothing. The alternatives, and why not:
//
//   - RESP3 invalidations pushed on the reading connections themselves
//     (rueidis's default, go-redis v9.22's cache): a push is only read when
//     its connection is next used; an idle pooled connection holds its
//     invalidations unread for as long as it stays idle, and a closed one
//     loses the server's tracking of every key read on it. A pool of them
//     needs a reader goroutine on every connection, or a flush whenever one
//     closes.
//   - Default (per-read) tracking redirected to one connection: the keys a
//     connection read are tracked only while that connection lives, so the
//     same flush on every pooled connection's end, which go-redis's pool
//     does not report.
//
// Broadcast mode sends an invalidation for every write of a tracked key,
// cached here or not: its cost is one short message a write on the node
// (to each caching client), bounded with Prefixes when only some keys are
// read through the cache.
//
// # Epochs: an entry is served only under the connection it was filled under
//
// A Node's entries belong to epochs. A Tracker starts a new epoch with
// every connection it makes and ends it when that connection is lost
// (Node.Flush): every entry of an ended epoch stops being served at once,
// without walking them, and a read reserved in an ended epoch is not
// filled. A read reserved while the node has no tracking connection is
// never filled: its invalidation may be lost.
//
// # The in-flight marker
//
// A cached read is reserved (Store.Reserve) before it is sent, and filled
// (Store.Fill) with its reply; an invalidation of its key between the two
// (Store.Invalidate) removes the key's state, and the Fill, which holds the
// state it reserved, finds it gone and drops the reply. So a read that the
// server ran before a write, and whose reply arrives after that write's
// invalidation, is not cached; one whose reply arrives first is cached and
// then invalidated.
//
// # The client's own writes
//
// The server's invalidation of a write the client made comes on the
// tracking connection, while the write's reply comes on the pooled one: a
// read that follows the write in the caller's goroutine could be served
// the entry the write replaced. So each topology's write path, once a
// write has run (or may have), calls NodeCache.Wrote, which ends the
// node's entries of every key of the write (classify.KeyIndexes).
//
// # The bounds
//
//   - Connected: the server queues a write's invalidation while it runs
//     the write, and sends it in the same event-loop turn as the write's
//     reply; it is applied when the Tracker's goroutine reads it. A read
//     that begins after the write was acknowledged can be served the
//     replaced entry only until then: the time for the message to reach
//     the client and be read.
//   - Partitioned or stalled: the Tracker sends a PING every Heartbeat, one
//     at a time; its reply proves that every invalidation the server sent
//     before reading it has arrived (one connection keeps order), so the
//     node's entries are served until HeartbeatTimeout after the PING was
//     sent, no longer: a silent connection stops its node's hits within
//     HeartbeatTimeout of the last PING answered, whatever the scheduling.
//     Nothing else extends that: an invalidation read now may have waited
//     in a buffer.
//   - Lost (EOF, reset, killed): the node's epoch ends as soon as the
//     Tracker reads the error, and its entries stop being served.
//   - FLUSHALL, FLUSHDB: an invalidation without keys; the node's entries
//     are removed (Store.Purge).
//
// # Fail-open
//
// Entries of an ended epoch are kept (until evicted) for Store.GetStale:
// Cache.FailOpen, the last step of every topology's read path (after its
// re-resolution, redirects and database switches, so that the failure has
// reached the topology first), answers a read that could not reach a
// server (failure.Unreachable) from the youngest entry of the read on any node no
// older than MaxStale, the age counted from the last moment the entry was
// known current (the end of its epoch, or the node's last confirmation),
// and returns a *clientcache.StaleError. Any node: the entry may come from
// a master that a failover has since replaced.
package cachestore
