// Package routing is the front a routed client shows its callers: a
// go-redis client that never dials, whose only hook hands every command,
// pipeline and transaction to the routed client, which runs it on a client
// of its choice with Run. It gives the routed client every go-redis command
// method (redis.UniversalClient) without restating any of them.
//
// Every routed client (package sentinel, whose client also serves a
// standalone primary; cluster; multidb) is one topology behind the same
// front: it embeds a Front (the never-dialling client plus the
// *redis.Client methods a routed client answers itself), gives it a
// FrontSpec (its process and pipeline functions, its current node, its
// pools), and keeps only what its topology decides: where work goes, from
// an immutable snapshot behind an atomic pointer. What may be sent again
// after a failure is decided once, for all of them, by failure.Next; the
// auto-pipelining Batcher, durable confirmation (ConfirmCmds), SCAN cursor
// tags and subscription connections (Conns) live here, once.
package routing
