// Package multidb is one go-redis client over several Redis deployments
// that fails over between them without replaying writes.
//
// The deployments (two regions, a primary and a standby, Active-Active
// databases) each have a weight. All traffic goes to one of them, the
// active database: the highest-weight one that is healthy. When it fails,
// the client moves traffic to the next one by itself, in the process,
// without DNS or orchestration changes; an operator can also move it on
// purpose, for a planned restart or a module upgrade.
//
//	c, err := multidb.NewClient(multidb.Config{Databases: []multidb.Database{
//		{Name: "primary", Weight: 10, Options: &redis.Options{Addr: "10.0.0.1:6379"}},
//		{Name: "standby", Weight: 5, Options: &redis.Options{Addr: "10.1.0.1:6379"}},
//	}})
//	...
//	err = c.Set(ctx, "k", "v", 0).Err() // every go-redis command method works
//
// Client satisfies redis.UniversalClient: Pipeline, TxPipeline, Watch,
// Subscribe and the rest behave as in go-redis, sent to the active
// database. A database is given as go-redis options (multidb builds and
// closes the client) or as any redis.UniversalClient: a *redis.Client, our
// *sentinel.Client or *cluster.Client, a *redis.ClusterClient.
//
// A database that is a Redis Cluster is best given as our cluster.Client
// (package cluster): it follows the cluster's own failovers, shard by
// shard, holding a shard's writes meanwhile, and refuses to re-send a
// write whose outcome is unknown, so multidb's rules below hold across
// both layers: a write is run on the next database only if neither the
// cluster client nor the server could have run it. A failover inside the
// cluster is not a switch of database. multidb switches when the cluster
// as a whole fails the trip rules or the health checks; the default
// PingProbe asks one master (the cluster client sends keyless commands to
// the first master of its map), so to check every shard give a Probe that
// does (errors.Join of cc.ForEachMaster's PINGs, say). Hooks (AddHook,
// InternalHook, OnNewNode, the subscriptions' dial hook) reach the
// cluster's node clients, present and future.
//
// Replies on the connections of a database multidb builds from
// Database.Options are bounded by Config.ReplyLimits, with generous
// defaults (a 512 MiB string, 16,777,216 elements a header, 128 levels,
// 1 GiB a reply): a reply over a limit, such as a GET answered with
// "*2147483647", fails that command with a *ReplyLimitError naming the
// server and the limit (a subscription's connection ends with a
// *SubscriptionError wrapping it, and is made again on the next call),
// instead of reaching go-redis's
// reader, and closes the connection. A go-redis client given as
// Database.Client is bounded by the same limits on the connections it
// dials after NewClient (a dial hook multidb adds: connections it already
// had stay unbounded); a rediskit client by its own settings:
// sentinel.Config.ReplyLimits, cluster.Config.ReplyLimits.
//
// multidb moves traffic; it does not move data. The databases must hold
// the same data (Active-Active replication, or a standby kept in sync),
// and a write the old database acknowledged but had not replicated is
// missing on the new one.
//
// # Choosing the active database
//
// Every database has a circuit breaker. CLOSED: it may be active. OPEN: it
// failed, and gets no traffic for its grace period (GracePeriod, default
// 60 s), so that a node that just came back is not overwhelmed or flapped
// onto. Then HALF_OPEN: the next health check, run at once, decides:
// CLOSED if it passes, OPEN for another grace period if not. The active
// database is the highest-weight one whose breaker is CLOSED (ties go to
// the database listed first). Breakers start CLOSED: NewClient returns at
// once with the highest-weight database active, and the first health
// checks run in the background.
//
// The breaker is a small state machine of our own, not
// github.com/sony/gobreaker/v2, because gobreaker's model is the reverse of
// this one: it changes state only inside Execute/Allow, from the outcomes
// of the requests made through it. Here a breaker must open on a health
// check's verdict and close on a health check's or an operator's, with no
// request involved, and gobreaker has no way to do either except feeding it
// made-up requests. Its HALF_OPEN admits MaxRequests real requests and
// closes when they succeed, where here no traffic goes to a database until
// a health check has closed its breaker. And it takes a mutex before and
// after every request (the two-step variant also allocates a closure per
// request) and calls OnStateChange with that mutex held; here every call
// records its outcome with atomic counters, and only a failed call takes a
// lock (to trip the breaker, to start a burst check, or to wait for the
// switch another call's trip makes).
//
// It reads like gobreaker's all the same: five events move it (traffic
// tripped it; a health check failed; one passed; the grace period is over,
// seen by the health loop before each check; an operator closed it with
// SetActive or UpdateWeight after a passed check), and one pure function
// of the state, the event and the time decides the next state and what
// the client does about it:
//
//	CLOSED    --traffic trips, a check fails-->  OPEN (its grace period starts)
//	OPEN      --grace period over-->             HALF_OPEN
//	HALF_OPEN --a check passes-->                CLOSED (service resumes on it if none was active)
//	HALF_OPEN --a check fails-->                 OPEN (another grace period)
//	OPEN, HALF_OPEN --SetActive, UpdateWeight--> CLOSED
//
// Nothing else moves it: traffic and checks within the grace period leave
// an OPEN breaker (and its opening time) as it is, and traffic never
// reaches a HALF_OPEN one.
//
// # Failures seen in traffic
//
// Every call's outcome is counted for the database that ran it, by failure
// event, not by failed call. One event (a proxy or the server resetting
// its connections, a network hiccup, a server stalled by a fork or a slow
// command) fails every call in flight at once: that is one sign the
// database may be down, not one per call. The rule:
//
//   - the first failure seen begins an event, and counts;
//   - a failure of a call that started before the current event began
//     (its first failure was seen) belongs to it and is not counted again:
//     the call was in flight when the event hit (Stats: CoalescedFailures);
//   - a failure of a call that started at or after that moment begins the
//     next event, and counts;
//   - a success ends a run of failures, whenever its call started.
//
// Three things trip the breaker: two rules on those counts,
//
//   - the fast path: ConsecutiveFailures (default 3) failure events in a
//     row;
//   - the rate path: within the last FailureWindow (default 2 s), at least
//     MinFailures (default 10) failure events that are at least
//     FailureRateThreshold (default 10 %) of the calls (the window counts
//     an event as one failed call, and the failures it coalesced not at
//     all). (redis-py's minimum is 1,000, for busy services; the window
//     slides in tenths.)
//
// and the second sign of a burst (an event that failed more than one
// call), from a health check it starts at once or the calls after it: see
// below.
//
// So one reset counts once, however many calls it fails; those calls get
// their error as it is. A database that is really down also fails the
// calls started after each event, and each such round is another event. A
// success ends the run even when its call was in flight as the event
// began: a reply is the database answering, and a proxy that resets its
// connections one by one fails, meanwhile, calls on those it has not
// reached yet, while the others keep succeeding. The rule has no window or
// constant of its own: which calls belong to an event follows from when
// they started, whatever they take (a microsecond, or a blocking command's
// seconds) and however late a loaded machine delivers their errors. A
// breaker that closes starts its counts afresh; failures of calls in
// flight across its closing belong to what opened it.
//
// Only connection errors (refused, reset, EOF) and timeouts are failures.
// A reply is not, even an error reply: WRONGTYPE or a missing key says the
// database works. A call whose own context ended (the caller's
// cancellation or deadline) says nothing about the database and is not
// counted; with ContextTimeoutEnabled the socket deadline is the caller's,
// so a stalled database is found by calls with no deadline or a longer
// one than the client's ReadTimeout, or by the health checks. Nor are
// client-side refusals (a closed client, a full pool) counted.
//
// # A burst asks for a second sign at once
//
// Counting a burst (an event that failed more than one call) once is right
// for a blip, but a real outage fails every call in flight too, and
// waiting for ConsecutiveFailures rounds of it is slow when a round is a
// timeout. So the failure that makes an event a burst (its second) starts
// a health check of that database at once, out of schedule (the burst
// check: the configured probes, policy and ProbeTimeout, on a goroutine of
// the client's; the failing call returns its error at once). The first
// thing after the burst that can tell settles it, the check or a call
// started after the burst began, whichever comes first:
//
//   - the database answers (a passed check, a call's reply): a blip;
//     nothing trips;
//   - a timeout or a failure to connect (or a probe's own failure: a
//     READONLY reply to a write probe, a lagging replica, a panic), with
//     nothing answered since the burst began: two signs of one outage; the
//     breaker trips and traffic moves, as for a failed health check;
//   - a lost connection (reset, EOF) settles nothing: it may be the burst
//     itself reaching a connection the check or the call had just taken
//     (as a proxy resetting its connections one by one does). A dead
//     database refuses the next connections at once, which does settle it.
//
// Calls count as well as the check because they are the same kind of
// evidence (new requests, made after the burst), and because a call that
// times out trips the breaker on its own goroutine: it, and every call
// caught by the same outage, moves on at once, where waiting for the
// check's goroutine would let a worker whose call timed out a moment
// earlier send one more call to the stalled database and wait one more
// timeout for it. The check settles a burst that no call follows.
//
// One burst check runs per database at a time; the bursts seen while one
// runs get one more run after it, which began after them all (a burst is
// never settled by a check that began before it). It is bounded by the
// check's own bounds, and Close and RemoveDatabase stop it and wait for
// it, as for the scheduled checks: within one probe's timeout (go-redis
// does not watch a context while it reads). A lone failure asks for none:
// its event was counted in full, and failures one call at a time are what
// ConsecutiveFailures counts; a check per lone failure would also run one
// for every stale pooled connection a server or a load balancer closed
// while idle.
//
// A dead database is found within milliseconds under load: a killed server
// resets the pooled connections (one event: the calls in flight) and
// refuses new ones at once, which settles the burst, or, failing that, is
// an event per round of calls, the third of which trips. A stalled one is
// found after one read timeout and one more of the burst check's or of a
// call's: about ReadTimeout + T (1 s with a 500 ms ReadTimeout), where T is
// the earlier of ProbeTimeout and the database client's ReadTimeout
// (go-redis puts the earlier of a context's deadline and its own timeout
// on the socket). So a stall that outlasts ReadTimeout + T (a fork, a slow
// command) trips, as a scheduled check that ran during it would have; one
// shorter than that does not (counting failed calls instead would trip on
// the first round whenever three calls are in flight, that is on any stall
// longer than one timeout). With sequential traffic (one call at a time)
// there are no bursts, and a stall takes ConsecutiveFailures timeouts. The
// calls that failed before the trip get their error as it is. See
// BENCHMARKS.md for the time from a kill or a stall to the first call
// served by the next database.
//
// # Health checks
//
// Every database, active or not, is checked every HealthCheckInterval
// (default 5 s), and at once after a burst of failures (see above): up to
// Probes probes (3), ProbeDelay apart (0.5 s), each bounded by
// ProbeTimeout (1 s). The HealthPolicy decides and stops as soon as it
// can: HealthyAll (the default) needs every probe to pass and fails at the
// first failure, HealthyMajority more than half, HealthyAny one. A failed
// check opens a CLOSED breaker (moving traffic away if it was the active
// database); a passed one closes a HALF_OPEN breaker. A probe that panics
// has failed (ErrProbePanicked), on whichever goroutine it ran. The probe is
// PING by default; WriteProbe adds a small SET (package guard's check), to
// tell a writable primary from a replica or a primary out of memory;
// ReplicationProbe fails a replica whose link to its master is down or
// stale; any func(ctx, client) error will do (Config.Probe, or per
// database).
//
// # When no database is healthy
//
// Calls fail at once with an *UnavailableError, unsent: it matches
// ErrTemporarilyUnavailable while the client keeps looking, every
// FailoverDelay (default 12 s), for FailoverAttempts looks (default 10, as
// in redis-py), and ErrNoHealthyDatabase after that. The error names each
// database's breaker state and last failure. Health checks continue all the
// while: as soon as a breaker closes, service resumes, without restarting
// the client.
//
// # Failback
//
// Every FailbackInterval (default 5 s) the client looks for a database
// ranked above the active one whose breaker is CLOSED and which has passed
// every health check for at least FailbackDwell (default 30 s), and moves
// traffic back to the highest such one. The dwell keeps a flapping database
// from pulling traffic back and forth: a database that fails any check
// starts its dwell again, so one that is never up for FailbackDwell gets no
// traffic back at all, and one that flaps gets it back at most once per
// dwell. (A failover away from a failing database is never delayed.) A
// negative FailbackInterval turns failback off.
//
// # Manual control, and a module upgrade
//
// SetActive(ctx, name) checks the database's health first (the same probes
// and policy, so it takes about (Probes-1) × ProbeDelay) and refuses an
// unhealthy one with an *UnhealthyError; a healthy one gets every new call
// at once, its breaker closed if it was open. The choice is pinned:
// failback does not undo it. A failover away from it ends the pin, and so
// does UpdateWeight(ctx, name, w), which changes a weight and lets the
// weights decide again: when the highest-weight database is not the active
// one, traffic moves to it at once if it is healthy (checked now if its
// breaker is not CLOSED, for example after a restart within its grace
// period). AddDatabase and RemoveDatabase change the set at run time.
//
// A planned upgrade of two databases, with no failed call: upgrade and
// restart the standby (it has no traffic); raise its weight above the
// primary's (or SetActive it): traffic moves; upgrade and restart the
// primary, idle now; restore the weights: traffic moves back. Calls in
// flight during a planned switch finish on the database they were sent to.
//
// # Work caught by a switch: no write replay
//
// When a call fails with a connection error or a timeout, or is refused
// unsent (its database's client was closed under it by RemoveDatabase, or
// the server refused it before execution: READONLY, LOADING, ...), and
// meanwhile the active database changed (this failure tripped the breaker,
// or another call's did, or an operator switched or removed a database):
//
//   - Read-only work (a command, a pipeline or a script package classify
//     calls read-only) runs once more on the new active database.
//   - Writing work runs on the new database only if it provably did not
//     execute on the old one: no connection was made, or it was never
//     sent. The rules are the Sentinel client's (package sentinel).
//   - Any other write (sent, and the connection lost or timed out before
//     the reply) fails with a *DatabaseChangedError naming both databases:
//     it may have executed on the old one, so running it on the new one
//     could run it twice. Whether to re-run it is the caller's decision.
//   - If the active database did not change, the error is returned as a
//     *DatabaseError (below).
//
// Transactions (MULTI/EXEC) are writes. Watch runs on the active database
// and is never re-run. Database clients run without go-redis retries
// (MaxRetries -1, DialerRetries 1): multidb alone decides what is re-run,
// and NewClient refuses a *redis.Client that would retry (or ignore context
// deadlines); turn retries off on other clients yourself.
//
// # The errors a caller sees
//
// Every error a call returns, and each command's Err in a pipeline or a
// transaction, is one of two things. Either the database's own answer,
// returned as go-redis returns it: redis.Nil, WRONGTYPE, a script's
// error, redis.TxFailedErr (a WATCH conflict), a transaction's EXECABORT
// caused by a queued command's own syntax error. Or one of this package's
// errors: a *DatabaseError (the database, read or write,
// MayHaveExecuted; it wraps the cause: a timeout, a connection lost, the
// caller's context's end, a refusal, or the typed error of a database
// that is itself a rediskit client, which errors.As finds through it), a
// *DatabaseChangedError, an *UnavailableError (nothing was sent), a
// *CursorError, or ErrClosed after Close. Never a bare i/o timeout,
// context error or EOF.
//
// MayHaveExecuted is false only when the work provably did not run. In a
// pipeline each command says so of itself, and the error Exec returns is
// the first failed command's; a transaction is all or nothing (every
// command and the EXEC say the same). A Watch function's own error is
// returned as it is; a failure it passed on from a command is typed as
// the rest.
//
// # Pub/Sub
//
// Subscribe, PSubscribe and SSubscribe return go-redis PubSubs that follow
// the active database. A subscription is made through the active
// database's own client (its Subscribe, PSubscribe or SSubscribe), so it
// reaches the database the way that client does: a *redis.Client's server,
// a cluster client's node for the channel, our Sentinel client's current
// master. A client that follows failovers inside its database keeps doing
// so for the subscription: after a Sentinel failover, our Sentinel client
// subscribes again on the new master by itself, and multidb does not
// switch. When multidb switches to another database, it ends the
// subscription on the old one; go-redis's PubSub reconnects, as after any
// connection loss, and subscribes to its channels, patterns and shard
// channels again, on the new database. The error the caller's PubSub sees
// at the switch (from ReceiveMessage, or on its Channel's reconnect)
// matches ErrSubscriptionMoved, the same error as
// sentinel.ErrSubscriptionMoved, so a reader can tell a switch (subscribe
// again at once, then re-read what the messages would have said) from a
// lost connection. Every error a subscription's connection reports is a
// *SubscriptionError naming the database, saying whether the connection
// could not be made (no healthy database), was lost or moved, and
// unwrapping to the cause; a timeout keeps the connection. Messages
// published during a switch
// or a failover (on either database) can be lost: Pub/Sub delivers at most
// once. Close ends every subscription, and the PubSubs then fail with
// ErrClosed.
//
// Between the caller's PubSub and the database client's sits a relay in
// the process (an in-memory connection; the caller's PubSub sees what a
// direct one would: confirmations, messages, pongs, error replies). To end
// a subscription at once even while the database stops answering (go-redis
// does not watch a context while it reads), multidb adds a dial hook to
// every database client (to the node clients of a cluster client or a
// ring, which dial for it) that closes the connections it made for a
// subscription when multidb ends that subscription; other connections of
// the client are left alone. Each NewClient or AddDatabase given a client
// adds one such hook (go-redis cannot remove hooks): reuse one
// Database.Client across many multidb clients, not one per database
// change. Hooks added with AddHook see the subscriptions' connections on
// a standalone, Sentinel or rediskit cluster database client, not the
// relay; go-redis's cluster client and ring dial them through node
// clients, which AddHook's hooks do not reach.
//
// # SCAN cursors, Conn, and the methods that cannot be routed
//
// A SCAN, SSCAN, HSCAN or ZSCAN cursor is valid only on the database that
// issued it. The client tags every cursor it returns with its database
// (in bits no server cursor uses, and clear of those a Sentinel client
// inside uses for its nodes) and continues a tagged cursor only there:
// after a switch, the call fails unsent with a *CursorError (errors.Is
// ErrCursorLost), and the iteration starts again from cursor 0, on the
// new database, instead of silently skipping and repeating elements.
//
// Conn and EphemeralConn are pinned to the database active at the time.
// Wait and WaitAOF are refused with an *UnsupportedError (errors.Is
// ErrUnsupported): WAIT counts the writes of its own connection, and each
// call runs on a connection of the client's choosing. So is
// RegisterPushNotificationHandler. Every other method of *redis.Client
// works as in go-redis, on the active database.
//
// # Auto-pipelining
//
// With Config.AutoPipeline, concurrent callers' single commands share
// round trips to the active database (as in package sentinel: batched
// while the previous batch is on the wire, a lone caller sent at once);
// each keeps its own failure rules: after a switch a read is re-run once
// on the new database, a write only if it provably did not run, others
// fail with a *DatabaseChangedError. A database on a *redis.Client is
// batched by this client; one on a rediskit client (sentinel.Client) is
// asked to batch them itself, per node. AutoPipeline and AsyncAutoPipeline
// return go-redis's auto-pipeliners over the client, whose batches are
// taken apart the same way and then sent in their order, one pipeline per
// node (without the callers' contexts: go-redis drops them). The commands
// one goroutine submits to AsyncAutoPipeline without waiting run in submit
// order on each node; one re-run after a switch runs after the others.
//
// # Observing
//
// Config.Observer receives every Event (the active database changed, with
// the old one, the new one and the reason: automatic, manual or failback; a
// breaker changed state; no database is healthy; the attempts are used up;
// a read retried, a write re-run or refused; weights and databases
// changed), in order, from a goroutine of the client's; it may call the
// client but not Close it. A slow Observer holds nothing up: its events
// wait in a bounded queue, and past it are dropped (counted in
// Stats.EventsDropped, logged); Close delivers what is queued, within a
// bound. The Observers of sentinel, replica and hashring keep the same
// contract. Stats returns each database's breaker state,
// last health check and probe latency, traffic failure counts and trips,
// burst checks and their verdicts, and the client's counters. Config.Logger gets "database unreachable" and
// "database reachable again" records, and every switch. Nothing shows a
// password.
//
// AddHook hooks see the caller's calls, on the database that runs them,
// not the client's health and burst checks; Config.InternalHook sees only
// those. For the standard go-redis instrumentation, which wraps each
// node's client, use OnNewNode:
//
//	c.OnNewNode(func(rc *redis.Client) { _ = redisotel.InstrumentTracing(rc) })
//
// It reaches the nodes inside a Sentinel, Cluster or Ring database client
// too, including those they make later.
//
// # go-redis behaviour worth knowing
//
// After PoolSize failed dials in a row, a go-redis pool stops dialing and
// returns the last dial error, trying again once a second in the
// background. A database that comes back can therefore fail its health
// checks for up to a second more, which delays its recovery (not a
// failover).
package multidb
