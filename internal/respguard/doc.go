// Package respguard bounds what a Redis or Sentinel server can make the
// process allocate through go-redis, on every connection rediskit opens:
// its own (to sentinels; ROLE, INFO, CLUSTER and PING probes of data
// nodes), with Guard and the default Limits, and the data path, the
// connections that carry the caller's commands (node clients, replica
// reads, pub/sub, multidb's databases built from options), with GuardData
// and the limits of the client's config (sentinel.Config.ReplyLimits,
// cluster.Config.ReplyLimits, multidb.Config.ReplyLimits), whose zero
// fields take the data path's defaults (ForData).
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
// # The data path
//
// The caller's replies may rightly be large: a string of 512 MB (Redis's
// proto-max-bulk-len), the millions of elements of an HGETALL, SMEMBERS or
// LRANGE. ForData's defaults:
//
//   - MaxLine, 1 MiB (a script may return a long status or error);
//   - MaxBulk, 512 MiB;
//   - MaxAggregate, 16,777,216;
//   - MaxReplyElements, 33,554,432;
//   - MaxDepth, 128 (a script's nested tables);
//   - MaxReplyBytes, 1 GiB.
//
// They still refuse what no Redis sends and what kills the process: the
// headers "*2147483647" and "*9000000000000000000", a string over 512
// MiB, a line without an end, nesting hundreds of levels deep. A refused
// reply fails the command it answered (which was sent, so may have run)
// with the *LimitError, which each client package exports as
// ReplyLimitError (an alias: the type is internal) and finds with
// errors.As inside its own error; its connection is closed, and the next
// command takes another. The data path is bounded whatever Dialer the
// caller set, or a NodeOptions hook left: GuardData wraps it.
//
// Aggregates are bounded per header, not only by the bytes that arrive:
// go-redis allocates the whole slice or map a header declares before
// reading an element, so a header is the danger whatever follows it. A
// header is checked against what can actually arrive too: each element
// takes at least 3 bytes ("_\r\n"), so a header declaring more elements
// than the rest of MaxReplyBytes can hold is refused at once
// (WhatReplyBytes), as its reply would be once they came. With the data
// path's defaults, what one header can make go-redis allocate before any
// element arrives is at most 16 bytes x 16,777,216 = 256 MiB (a slice of
// strings or interfaces).
//
// What go-redis can still allocate for one accepted reply is at most about
// its bytes (the strings, copied once) plus 64 bytes an element: with the
// defaults, about 32 MiB + 64 MiB; with the data path's, 1 GiB + 2 GiB, for
// a reply whose bytes arrived. A pipeline's replies are bounded one by
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
// A byte scan of the lines; string bodies are skipped by their length, not
// scanned (a 512 MiB string costs its header line). No allocation in the
// steady state: the buffer for a held line (4 KiB, more
// only for a longer line, and then released) is allocated once. The wrapped
// connection's syscall.Conn is kept, so that go-redis's check of idle
// pooled connections still finds those the server closed.
//
// The conn allows one Read at a time (go-redis reads from one goroutine);
// Write, the deadlines and Close may be called at any time. Close closes
// the wrapped connection once and is safe to call again.
package respguard
