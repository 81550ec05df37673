// Package respguard bounds what a Redis or Sentinel server can make the
// process allocate through go-redis, on the connections rediskit opens for
// itself (to sentinels; ROLE, INFO, CLUSTER and PING probes of data
// nodes).
//
// go-redis's RESP reader trusts the lengths and counts a server declares:
// it allocates the whole slice or map an aggregate header declares before
// reading an element, and the whole string a bulk header declares. A
// hostile or broken server answering "*2147483647" or
// "*9223372036854775807" kills the process (out of memory, or makeslice:
// len out of range) in a goroutine the application cannot protect;
// "$2147483647" makes it allocate 2 GiB; a line without "\n" grows the
// reader's buffer without bound; deep nesting grows its recursion without
// bound.
//
// Wrap (or WrapDialer, for go-redis's Options.Dialer) puts a net.Conn in
// front of go-redis whose Read follows the RESP stream the server sends,
// across reads, and checks each line against Limits when it is complete,
// before go-redis can see it. Bytes pass through unchanged; a line not yet
// complete at the end of a read is held back, all but its (checked) type
// byte, until it is (at most MaxLine bytes). A reply that exceeds a limit,
// or that go-redis could not read, is refused: Read returns the bytes
// before its offending line (and that line's type byte), then a
// *LimitError inside a *net.OpError, and the connection is closed. go-redis
// then drops the connection and fails the command with that error, which
// rediskit's failure rules class as a lost connection (failure.Network):
// the server is treated as a bad server, and the command as possibly run.
// It is not a timeout. Replies before the refused one are not affected.
//
// go-redis acts on a line only once its \n has arrived, so a type byte
// alone commits it to nothing; holding it back too would make go-redis's
// check of idle pooled connections (which peeks at that byte, with no
// deadline) wait for as long as a server keeps a line incomplete.
//
// # Limits and defaults
//
//   - MaxLine, 64 KiB: one line (simple string, error, number, boolean,
//     null, or the header of a string or aggregate), its type byte
//     counted and its \r\n not.
//   - MaxBulk, 16 MiB: one bulk string, verbatim string or blob error.
//   - MaxAggregate, 65,536: the elements one array, set, push, map or
//     attribute header declares; a map's and an attribute's pairs count
//     twice.
//   - MaxReplyElements, 1,048,576: the elements declared by all the
//     aggregates of one top-level reply.
//   - MaxDepth, 32: how deeply aggregates nest in one reply.
//   - MaxReplyBytes, 32 MiB: the bytes of one top-level reply, strings
//     counted as declared.
//
// A push message (">", pub/sub events on sentinel connections) is a
// top-level reply of its own; an attribute before a reply counts with it.
//
// What go-redis can still allocate for one accepted reply is at most about
// its bytes (the strings, copied once) plus 64 bytes an element: with the
// defaults, about 32 MiB + 64 MiB. A pipeline's replies are bounded one by
// one.
//
// # What is refused as malformed
//
// Besides replies over a limit: an unknown type byte (as when the address
// is not a Redis server), a line ending in \n without \r, a length or count
// that is not a decimal number, a negative one other than -1, a string not
// followed by \r\n, and what go-redis v9.23 cannot read or reads two ways:
// streamed strings and aggregates ("$?", "*?", and their ";" and "."
// chunks), attributes ("|") anywhere but before a top-level reply, and the
// null attribute "|-1". Redis sends none of these.
//
// Whatever a command does with a reply, go-redis meets the headers the
// guard checked: where a RESP element starts and ends follows from its own
// header alone.
//
// # Cost
//
// A byte scan of the lines; string bodies are skipped by their length. No
// allocation in the steady state: the buffer for a held line (4 KiB, more
// only for a longer line, and then released) is allocated once. The wrapped
// connection's syscall.Conn is kept, so that go-redis's check of idle
// pooled connections still finds those the server closed.
//
// The conn allows one Read at a time (go-redis reads from one goroutine);
// Write, the deadlines and Close may be called at any time. Close closes
// the wrapped connection once and is safe to call again.
package respguard
