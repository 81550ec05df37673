// Package clientcache configures rediskit's server-assisted client-side
// cache: reads served in process, from replies the server promised to
// invalidate, and never served once that promise may have lapsed.
//
// Turn it on in a client's config (rediskit.Config.Cache, for any URL;
// sentinel.Config.Cache, which also covers a standalone server;
// cluster.Config.Cache; multidb.Config.Cache) and ask for it per read
// with WithTTL:
//
//	c, err := sentinel.NewClient(sentinel.Config{..., Cache: &clientcache.Config{MaxBytes: 256 << 20}})
//	v, err := c.Get(clientcache.WithTTL(ctx, time.Minute), "user:42").Result()
//
// # What is cached
//
// Reads of one key whose reply depends only on the key's value, and that
// the command table says are read-only: GET, GETRANGE, STRLEN, EXISTS
// (one key), TYPE, GETBIT, BITCOUNT, BITPOS; HGET, HMGET, HGETALL,
// HEXISTS, HLEN, HSTRLEN, HKEYS, HVALS; LINDEX, LLEN, LRANGE, LPOS;
// SMEMBERS, SISMEMBER, SMISMEMBER, SCARD; ZCARD, ZCOUNT, ZLEXCOUNT, ZSCORE,
// ZMSCORE, ZRANK, ZREVRANK, ZRANGE and its BYSCORE / BYLEX / REV forms. A
// missing key's reply (redis.Nil) is cached too. Not cached: replies that
// change without a write (TTL, PTTL, OBJECT), random ones (SRANDMEMBER,
// HRANDFIELD), multi-key reads (MGET), pipelines and transactions, and any
// write. An entry is kept per node and per command shape: GET k and
// STRLEN k are two entries, both ended by one invalidation of k.
//
// # When an entry is served
//
// Each node the client reads from has one tracking connection (CLIENT
// TRACKING in broadcast mode, the invalidations redirected to itself), and
// an entry is served only while the connection it was filled under holds
// and has answered a ping within HeartbeatTimeout. So:
//
//   - a write by anyone ends the key's entries when its invalidation
//     arrives, in the same event-loop turn as the write's reply on the
//     server; a read in flight when it arrives is not cached;
//   - a write through the client itself ends the client's entries of its
//     keys as soon as it has run: a read that follows it reads it;
//   - the tracking connection lost (killed, the server restarted) ends
//     every entry of the node at once; silent (a partition), within
//     HeartbeatTimeout of its last answered ping;
//   - a Sentinel switch, a cluster shard's failover or a slot migration
//     moves reads to another node, whose entries are its own; the node
//     that lost the master role or the slots has its entries ended as
//     soon as the client sees the change (Sentinel's +switch-master, the
//     cluster's next slot map). Until then a demoted master, now a replica
//     of the new one, invalidates as it applies the new master's writes:
//     its entries lag the new master by that replication delay;
//   - a multidb switch moves reads to another database, whose entries are
//     its own; switching back serves the first database's entries only if
//     its tracking held meanwhile;
//   - FLUSHALL and FLUSHDB end every entry of the node.
//
// A server that cannot track (Redis before 6, CLIENT TRACKING forbidden by
// the ACL) is found when its tracking connection is first made (a
// client's constructor dials nothing): its reads are not cached, and the
// client logs ErrTrackingUnavailable with the server's reason at error
// level.
//
// # Fail-open: MaxStale
//
// With Config.MaxStale, a cached read that cannot reach a server, once the
// client has done what it does for any read (re-resolved the master,
// followed the slot, switched database, within the caller's deadline), is
// answered from the newest entry it held for that read if the entry was
// known current at most MaxStale ago: the command gets the value, and
// the error is a *StaleError saying from which server, how old, and why
// the read failed. An entry's age counts from the last moment its
// server's tracking was confirmed (the end of the connection it was filled
// under, or the last heartbeat answered): an entry invalidated before the
// failure is never served. A missing key's entry answers a StaleError
// that is also redis.Nil (errors.Is). Only "cannot reach" failures fall
// back (refused, lost, timed out, no master, CLUSTERDOWN, no healthy
// database): a server's answer, the caller's cancellation or a closed
// client never do.
//
//	v, err := c.Get(clientcache.WithTTL(ctx, time.Minute), "price:42").Result()
//	var stale *clientcache.StaleError
//	switch {
//	case errors.As(err, &stale):
//		// v is what the server held stale.Age ago: show it, marked.
//	case err != nil:
//		// fail
//	}
package clientcache
