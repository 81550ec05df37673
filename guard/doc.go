// Package guard decides what a service does while Redis is slow, down or
// read-only: which routes keep working and which refuse, every wait bounded.
//
// Routes that can do without Redis fail open (a cache that falls back to
// its loader); routes whose checks need Redis fail closed (a rate limit,
// an admission gate). A successful PING says none of this.
//
// The pieces:
//
//   - ClientConfig and Open: a go-redis client that fails fast (no retries,
//     one dial attempt, 100 ms timeouts, a pool that does not queue, no
//     extra round trips on connect) and the Guard around it;
//     ClientConfigFromURL reads them from a redis://, rediss:// or unix:// URL.
//     New wraps a client you already have, such as a Sentinel client.
//   - Guard: the key prefix, applied to every key (Guard.Key), and
//     Guard.Call, which runs a Redis operation under a total time limit.
//   - Cache (fail open): read-through with a bounded fallback to a loader.
//   - Limiter (fail closed): N attempts per id per window.
//   - Gate (fail closed): one admitted attempt per id per TTL (SET NX).
//   - Checker and Monitor: PING plus an optional write probe, telling a
//     writable primary from a read-only replica, a primary out of memory,
//     an auth failure, a timeout and an unreachable server.
//   - Transient: the contract of an error that means "try again" (a
//     failover or switch of package sentinel or multidb): how long to wait
//     and whether the failed work may have taken effect.
//   - Package httpguard (guard/httpguard) maps the errors to HTTP: 503,
//     429 (with Retry-After) and 409; 503 with Retry-After for a Transient
//     error, whose body says whether repeating the request is safe
//     (StatusCode, WriteError, Handler). It is a package of its own so
//     that guard does not import net/http.
//
// # Errors
//
// Every refusal matches one of three sentinels with errors.Is, and carries
// its details in a type for errors.As (the status is the one httpguard
// answers):
//
//	ErrUnavailable      503  *RedisError (from Call), *UnavailableError (from a component)
//	ErrTooManyRequests  429  *LimitError (RetryAfter)
//	ErrBusy             409  *BusyError
//
// A Transient error anywhere in the chain (a *RedisError's cause, say)
// adds Retry-After to httpguard's 503 and, in the body of
// httpguard.WriteError, whether the work may have taken effect:
// sentinel's *MasterChangedError, *WriteHeldError
// (ErrFailoverInProgress), *NotDurableError, *NoReplicaError, *NodeError
// and *DiscoveryError, multidb's *UnavailableError
// (ErrTemporarilyUnavailable, ErrNoHealthyDatabase) and
// *DatabaseChangedError implement it, with waits from the client's
// settings where the error carries them and their defaults otherwise
// (see their RetryAdvice methods). Guard's own errors do not: their 503
// has no Retry-After, since Redis being down says nothing of when it
// comes back.
//
// A caller's own cancellation is returned as ctx.Err(), never as a Redis
// failure; a hit call limit is a Redis failure (FailureTimeout) and does
// not match context.DeadlineExceeded. Errors name the operation and the
// server and say what to do; they never contain a password, and neither
// do ClientConfig.String or the logs.
//
// # Time limits
//
// Guard.Call gives each call CallLimit (default 150 ms) in total; the
// client's own timeouts (100 ms each from ClientConfig) bound each socket
// operation inside it. Nothing is retried: when a reply is lost, the
// command may have run on the server, so a rate limiter's attempt may be
// counted and an admission key may be set. New therefore refuses a client
// that would retry on its own (a *redis.Client with MaxRetries above 0,
// as go-redis's default is, or DialerRetries above 1, as its default of 0
// means 5) or ignore context deadlines (ContextTimeoutEnabled false):
// rediskit's one client policy, which multidb checks the same way.
// Clients built from ClientConfig, from redisurl.Config.Options
// (guard.New(redis.NewClient(opt)) is accepted), and our Sentinel and
// multidb clients meet it.
// Choose the limits from the request's deadline: the slowest cache lookup
// spends CallLimit reading, SlotWait + LoadTimeout (default 0 + 500 ms)
// loading and CallLimit writing back.
//
// # Defaults
//
//	ClientConfig  PoolSize 10, DialTimeout/ReadTimeout/WriteTimeout 100 ms,
//	              CallLimit 150 ms, no retries, 1 dial attempt, no pool wait
//	Cache         TTL 1 min + jitter in [0, TTL/10), 8 load slots, SlotWait 0
//	              (refuse at once when all are busy), LoadTimeout 500 ms
//	Gate          TTL 30 s
//	Checker       probe key <prefix>:health:write, TTL 60 s
//	Monitor       a check every 5 s
//
// go-redis's own defaults, for comparison: 3 retries of a failed command
// (MaxRetries; -1 disables them, 0 means the default), 5 dial attempts 100
// ms apart (DialerRetries; 0 or less means 5), 5 s dial, read and write
// timeouts, a pool of 10 connections per GOMAXPROCS where a command waits
// up to ReadTimeout + 1 s (PoolTimeout) for a free connection, and context
// deadlines ignored on the socket unless ContextTimeoutEnabled.
//
// go-redis also logs failed dials to stderr through its global logger;
// this package never changes it. Call redis.SetLogger in main to redirect
// it.
//
// # Keys
//
// Every key is <KeyPrefix>:<component name>:<id>: a Cache named "price"
// with prefix "shop" stores sku-1 under "shop:price:sku-1", a Limiter
// named "login" counts under "shop:login:<account>". The prefix is
// required, so two applications sharing a Redis cannot collide by
// accident.
//
// On a Redis Cluster (a rediskit cluster.Client, or go-redis's
// ClusterClient, given to New) every component works as on one server:
// each of their operations touches one key (the limiter's script has one
// KEYS, the gate's SET NX one key, the cache's GET and SET one), so none
// needs a hash tag, and the ids of one component spread over the shards.
// The limiter's script is cached on each node as it is first needed: when
// SCRIPT LOAD (which has no key) reached another node than the key's, the
// limiter runs the script by EVAL there. The Checker's write probe writes
// one key, so it checks the master of that key's shard only. Keys of your
// own used together in one command, script or transaction must share a
// slot: give them one hash tag ("shop:{order-1}:items",
// "shop:{order-1}:total").
//
// # Probes
//
// Redis belongs neither in liveness (a restart does not bring Redis back)
// nor, for a service whose routes degrade, in readiness (an unready
// service loses the routes that still work). See Monitor for the reasons
// and what to do instead: export the Monitor's cached state as a metric.
package guard
