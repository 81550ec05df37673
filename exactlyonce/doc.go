// Package exactlyonce configures rediskit's exactly-once writes: a write
// whose outcome is unknown (the connection lost after it was sent, the
// master replaced, a timeout) is sent again and still runs once, and the
// caller gets its reply instead of an error saying it may have run.
//
// # How
//
// The client gives each write a token and sends it as one Lua script
// (EVALSHA) that, atomically on the master: looks for the write's token;
// if it is there, returns the reply stored with it; otherwise runs the
// command (redis.pcall) and, unless it failed, stores its reply as the
// token and returns it. Tokens are fields of token keys, small hashes of
// 16 tokens each, named KeyPrefix + "{" + tag + "}" + the client's run +
// "." + a count: a key holds tokens of one client's writes in one hash
// slot, tag being a short string of that slot (of the command's first
// key), so on a Redis Cluster the token lives in the key's slot and the
// script passes the cluster's same-slot rule. Storing a token sets its
// key's TTL (Config.TTL) afresh, so a token is kept at least TTL after its
// write ran, and at most until TTL after the last write of its key. With
// effects replication (Redis 7, Valkey 8) the replicas and the AOF get the
// command's effects and the token together, in one MULTI. (Hashes rather
// than a key a token: a key a token cost the server 40 % more time a
// write, 5.5 µs against 3.9, and up to 7 times the memory; see
// BENCHMARKS.md.)
//
// When the outcome is unknown, the client sends the same script with the
// same id again, to whichever master serves the slot then, as often as
// its write hold (sentinel.Config.FailoverHold, cluster.Config
// .WriteHoldTimeout) and the caller's context allow.
//
// # Why each case runs once
//
//   - Lost reply, same master: the first run stored the token; the
//     re-send finds it and returns the stored reply.
//   - Stall, then delivery (the server paused, the bytes held in the
//     network): the original and the re-send may reach the server in any
//     order. Whichever runs first stores the token, the other returns it:
//     a script runs atomically, so no interleaving sees "no token" twice.
//   - Failover, the write replicated: the replica promoted holds the
//     token (it came in the same MULTI as the effects), so the re-send
//     returns the stored reply.
//   - Failover, the write not replicated: it is lost with the old
//     master's history; the token is lost with it, so the re-send runs
//     the write on the new master, once, in the history that survives.
//   - Split brain (the client wrote to a master the others have
//     replaced): when the old master is demoted its data is discarded, the
//     write with it; the re-send runs it on the new master. If the old
//     master's write had replicated before the switch, the new master has
//     the token. The bytes of an attempt that reach the demoted master
//     late meet a replica (READONLY: not run).
//   - Durable mode (WAIT): the confirmation covers the token with the
//     effects; a write confirmed on N replicas survives a failover with
//     its token.
//   - Token expiry: the token must outlive every attempt. The client
//     sends attempts only within its write hold of the first, and refuses
//     a TTL shorter than twice the hold (Config.Check); an attempt held
//     in a stalled server's buffers runs when that server resumes, and a
//     server stalled for as long as the TTL (a minute by default) has
//     been replaced by a failover long before (its history discarded).
//
// # Replies
//
// The stored reply is the Lua value redis.pcall returned, packed with
// cmsgpack: integers, bulk strings, nil, arrays (nested), and status
// replies ({ok=...}) come back as they came the first time. Error replies
// are not stored: a Redis command that fails has no effect, so running it
// again cannot run it twice (it may succeed then, if what made it fail
// changed). Replies come through Lua's conversion in both cases, so an
// integer reply beyond 2^53 loses precision (Lua 5.1 numbers are
// doubles), and a RESP3 type (a double, a map) arrives in its RESP2 form,
// which go-redis's typed commands read as well.
//
// # Which writes
//
// Writes the server allows in scripts, with keys: single-key commands and
// multi-key commands whose keys share a slot on a cluster (classify's
// ScriptWrite). Not: blocking commands (BLPOP, BLMOVE, XREADGROUP BLOCK),
// commands Redis flags noscript, keyless writes (PUBLISH, FLUSHALL),
// transactions (MULTI ... EXEC), and commands with more than MaxArgs
// arguments; those run as before (the may-have-executed errors), or are
// refused with an *UnsupportedError when a call asked With(ctx, true).
// Each write of a pipeline is made exactly-once on its own, auto-pipelined
// writes too.
//
// # Cost
//
// One script call instead of the command (the server runs the command
// through Lua), a token per write kept TTL (its bytes: BENCHMARKS.md),
// and the keys sent twice. The client loads the script on each master it
// writes to (SCRIPT LOAD, once) and checks there that its user may run it
// and, on its token keys, the HGET, HSET and PEXPIRE it runs (the ACL
// asked from the script: a write must not run and then fail to store its
// token); a refusal is a *RefusedError, for every
// exactly-once write meant for that server, before anything is sent, and
// an ERROR record on the client's Logger.
//
// Hooks on the clients work is routed to see the script call (EVALSHA)
// as the command's arguments.
package exactlyonce
