// Package eventq is how rediskit delivers events to a caller's Observer:
// the sentinel, cluster, replica, multidb and hashring packages all use
// it, so the Observers of all five keep the one contract below.
//
// # The Observer contract
//
//   - Order. Events are delivered in the order they were emitted, one
//     call at a time, from one goroutine the queue owns (started when an
//     event arrives, ended when none is waiting). The Observer needs no
//     lock of its own for the events of one queue.
//   - Never in the way. Emitting an event never waits for the Observer:
//     the goroutine that emitted it (a client's topology goroutine, a
//     prober, a caller's call) carries on at once, and the Observer is
//     called with no lock of the emitter held, so it may call the
//     emitter's methods (except Close, and, for a hashring Node, Start
//     and Stop, which wait for the deliveries).
//   - Bounded. At most DefaultCapacity events wait for a slow Observer.
//     An event that finds the queue full is dropped: it is counted
//     (Dropped, which each package reports: sentinel and multidb
//     Stats.EventsDropped, cluster Stats.EventsDropped,
//     replica.Selector.EventsDropped,
//     hashring.Node.EventsDropped) and logged at WARN through the
//     caller's logger, the first drop at once and then at most once per
//     DropLogInterval with the count since the last record, so a flood of
//     events does not become a flood of log records.
//   - Panics. A panicking Observer is recovered (it runs in a goroutine
//     the application cannot protect) and logged at ERROR, rate-limited
//     like the drops; the next events are delivered.
//   - Close. Close stops accepting events and waits for the events already
//     queued to be delivered, for at most DefaultDrainTimeout. If the
//     Observer has not finished by then (it is stuck), Close gives up: the
//     events still waiting are dropped (counted and logged), and a call
//     under way is left to finish on its own goroutine, which ends when it
//     returns. Either way no Observer call starts after Close returns.
//     (A replica Selector's Close passes over the changes still queued,
//     as its documentation says; a hashring Node closes its queue at
//     each Stop.)
package eventq
