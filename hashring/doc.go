// Package hashring splits keys between a fleet of workers with a
// consistent hash ring stored in Redis, wire-compatible with redis-hashring.
//
// Workers split keys (accounts, shards, queues) between them and take over
// each other's keys when one stops or dies. The ring is the one of the
// Python library redis-hashring 0.6: Go and Python nodes can share it.
//
// Each node puts a few replicas (random points) on a ring of 2^32 points;
// a key belongs to the replica at the greatest start ≤ the key's point,
// wrapping around to the greatest start. A Node joins with Start, answers
// Contains(key) from a lock-free snapshot, and leaves with Stop:
//
//	node, err := hashring.NewNode(client, "example-ring", hashring.Config{})
//	if err := node.Start(ctx); err != nil { ... }
//	defer node.Stop(context.Background())
//	for _, item := range items {
//		if node.Contains(item) { process(item) }
//	}
//
// A Ring is a read-only view (no membership) for routers and tools:
// Owner(key) names the node that owns a key.
//
// # Wire format
//
// One Redis key holds the ring; the same name is the pub/sub channel on
// which nodes announce changes.
//
// The key is a sorted set (ZSET). Each member is one replica, the bytes
//
//	<start>:<hostname>:<pid>:<id>
//
// where <start> is the replica's first point in decimal ASCII without sign
// or leading zeros (0 … 4294967295, chosen uniformly at random), <hostname>
// is the node's hostname (UTF-8, no ':'; os.Hostname by default, Python's
// socket.gethostname()), <pid> the process id in decimal, and <id> 8
// lowercase hex characters (4 random bytes) that tell a node's replicas
// apart. For example:
//
//	706234936:mbp.local:80721:249d729d
//
// A member's score is the time of the replica's last heartbeat in UNIX
// seconds, as a float (Python's time.time(); go-redis sends it in decimal
// with as many digits as needed, such as 1718000000.123456). The node ID is
// "<hostname>:<pid>": the ring counts nodes by it.
//
// Readers parse a member as redis-hashring does (see ParseMember): split at
// the first ':' into the start and the rest, then split the rest at every
// ':' into exactly three fields. A hostname containing ':' would give four
// fields: Python nodes fail on such a member, and the fields would shift
// for everyone, so NewNode rejects it with ErrInvalidHostname (there is no
// escaping both libraries would read the same way). Members that do not
// parse are ignored and logged once; Python nodes fail on some of them.
//
// A replica is alive while its score is ≥ now − Expiry (60 s), by the
// reader's clock; readers ask for the live ones only (ZRANGEBYSCORE key
// <now−60> +inf). The protocol:
//
//   - heartbeat, every HeartbeatInterval (10 s): ZADD of all the node's
//     members with the current time, in one MULTI/EXEC. This package
//     sends ZADD GT (Redis ≥ 6.2), so a late heartbeat (one written on a
//     connection that timed out and applied later) never moves a score
//     back; Python sends plain ZADD. Either way a node only writes its own
//     members.
//   - after a heartbeat that added members (a node joining), and after a
//     heartbeat that follows a lapse of the node's ownership deadline: a
//     notice, PUBLISH key "*".
//   - cleanup, at most every CleanupInterval (120 s) per node:
//     ZREMRANGEBYSCORE key -inf <now−60>, then a notice if it removed any.
//   - leaving: ZREM of the node's members, then a notice (one MULTI/EXEC).
//   - on a notice, every node reads the ring again; the payload is
//     ignored. Every node also reads the ring after each heartbeat, so a
//     lost notice is made up for within HeartbeatInterval.
//
// Key points are XXH32 with seed 0 of the key's bytes (Hash XXHash, the
// default), or CRC-32 IEEE (Hash CRC32) for older rings: Point("hello")
// is 4211111929, CRC32.Point("hello") is 907060870. Python hashes
// key.encode(), the key's UTF-8 bytes.
//
// Ownership: replica r with start s owns [s, s') where s' is the next
// greater start, and the replica with the greatest start owns
// [s, 2^32) ∪ [0, smallest start). Ranges reports a node's ranges the way
// Python's get_ranges does: one per replica, two for the wrapping one. Two
// replicas with the same start (a 2^-32 chance per pair) are ordered by
// member string and the last owns the range; Python would give the first
// the whole ring then. Starts are distinct within a node.
//
// # Node lifecycle
//
// Start subscribes to the channel (waiting at most SubscribeTimeout, 10 s,
// for the confirmation: ErrSubscribeTimeout), sends a heartbeat, notifies,
// cleans up and reads the ring. It returns once the node has its ranges,
// so Contains is right immediately. When a step fails it removes the
// replicas it may have added and returns an *Error; the node can Start
// again. Start on a started node returns ErrAlreadyStarted; a Start or
// Stop while another Start or Stop of the same node runs returns ErrBusy
// at once, never waiting (so a signal handler's Stop cannot deadlock).
//
// After Start, one goroutine per node keeps it on the ring: it sends the
// heartbeat every HeartbeatInterval and reads the ring after it, and reads
// the ring on every notice. After any error it waits a random time, at
// most RetryWait (1 s) after the first failure and twice as long after
// each further one up to MaxRetryWait (10 s), subscribes again and retries;
// each failed attempt is logged at WARN with the error. After a failed
// read it sends no heartbeat until a read works again: heartbeats alone
// would keep it alive for the others while it cannot see the ring, and
// then nobody would own its keys.
//
// Stop gives the keys up at once, ends the goroutine (waiting for a Redis
// call in flight), removes the node's replicas and notifies the others.
// The others take the keys over when they read the notice. If the removal
// fails the replicas expire on their own after Expiry, and the others take
// over at their next read after that (within Expiry + HeartbeatInterval,
// 70 s). A node that dies without Stop is taken over the same way.
//
// # Ownership deadline and clock skew
//
// A node that cannot send a heartbeat and then read the ring for
// OwnershipDeadline (50 s) gives up its keys: Contains is false, Owner has
// no answer, Ranges is empty and NodeCount is 0. The deadline is counted
// from the moment the last successful heartbeat took its timestamp, on the
// node's monotonic clock, and compared with the clock at every call, so it
// holds even while the node's goroutine is blocked in a Redis call. The
// node logs one ERROR when it observes the deadline passed and one INFO
// when a renewal restores ownership; Changes signals both. When Redis is
// back it rejoins and notifies the others after its next heartbeat.
//
// The other nodes judge a replica dead by comparing its score (the
// heartbeat time by the owner's wall clock) with their own wall clocks.
// So the node gives its keys up before another node takes them if
//
//	OwnershipDeadline + skew < Expiry, i.e. skew < 10 s by default,
//
// where skew is how far another host's wall clock runs ahead of the node's
// host's clock; a backward step of the node's own wall clock counts too
// (with ZADD GT its scores then stay put until its clock catches up). With
// a larger skew two nodes can own the same keys at the same time. Keep hosts synchronised (NTP), and change the timings only
// together on every node of a ring (Python's are fixed: 10 s heartbeat,
// 60 s expiry).
//
// Two more windows exist by design, as in redis-hashring: when a node
// joins, the node that owned its ranges keeps claiming them until it
// reads the notice (milliseconds, or up to HeartbeatInterval if the notice
// is lost), so work that must never run twice needs a lock too; and when a
// node leaves or dies its ranges have no owner until the others read the
// ring. (A rarer gap: a heartbeat that timed out at the client but reaches
// Redis after Stop's ZREM puts the stopped node's replicas back with that
// heartbeat's score; their ranges then have no owner until they expire.)
//
// # Redis clients
//
// Nodes and views use the go-redis client given to them and never close
// it. A node opens one pub/sub connection on it (client.Subscribe) while
// started, plus the client's pooled connections for its commands. go-redis
// applies a context's deadline to socket reads only with
// ContextTimeoutEnabled, so every call's wait is bounded by the client's
// DialTimeout, ReadTimeout and WriteTimeout (go-redis v9.23 defaults: 5 s, 5 s,
// 5 s): do not disable them, or Stop and Start can wait as long as Redis
// does not answer. The package does not retry commands itself beyond the
// loop described above; give it a client with MaxRetries: -1 and
// DialerRetries: 1 (go-redis treats DialerRetries 0 as five dial attempts)
// so that every failure reaches the loop and its log. A pub/sub connection
// that fails is also redialled once by go-redis itself before this package
// closes it and subscribes anew.
//
// # Logging
//
// Records go to Config.Logger (default: discarded): WARN for each failed
// attempt (with step, attempt, wait and error) and for each malformed
// member (once per member), ERROR when the ownership deadline is observed
// passed, INFO when ownership is restored. Library code never prints.
// Config.Observer receives the same facts as Events, in order, from a
// goroutine of the node's own, so a slow Observer holds up neither the
// node nor its ownership deadline: its events wait in a bounded queue and
// past it are dropped (Node.EventsDropped, a WARN). Start and Stop return
// once it has the events they caused, within a bound. The Observers of
// sentinel, replica and multidb keep the same contract.
//
// # Differences from redis-hashring
//
// Beyond the Python API (contains, get_ranges, get_node_count,
// debug_print) this package has Owner, the Ring view, Changes, ValidUntil,
// the ownership deadline, bounded and retried Start, and typed errors.
// Nodes in one process must differ in Config.Hostname or Config.PID to be
// counted apart (the ring identifies nodes by hostname:pid).
package hashring
