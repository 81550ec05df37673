package respguard

import (
	"net"
	"strconv"
	"strings"
)

// The bounds a LimitError names in What; WhatMalformed is a reply that is
// not RESP go-redis can read.
const (
	WhatLine          = "line length"
	WhatBulk          = "string length"
	WhatAggregate     = "aggregate elements"
	WhatReplyElements = "reply elements"
	WhatDepth         = "nesting depth"
	WhatReplyBytes    = "reply bytes"
	WhatMalformed     = "malformed"
)

// LimitError is a reply refused because it exceeds a bound of Limits or is
// malformed. The connection it came on is closed: its server is treated as
// a bad server.
//
// Read returns it inside a *net.OpError (Op "read"), as a net.Conn reports
// every read failure, so that go-redis and rediskit's failure rules treat
// it as a lost connection: go-redis drops the connection from its pool and
// fails the command with it (when the refused reply answered the
// connection's HELLO, with the LimitError alone), and failure.Network
// reports true. It is a net.Error that is not a timeout: nothing about it
// gets better by waiting on the same connection.
type LimitError struct {
	// Addr is the server: the address dialled, or the connection's
	// remote address.
	Addr string
	// What is the bound exceeded (WhatLine, WhatBulk, ...), or
	// WhatMalformed.
	What string
	// Limit is the bound; Got is what the reply declared or reached (for
	// WhatLine and the totals, at least that much). Both are 0 for a
	// malformed reply.
	Limit, Got int64
	// Detail says what was wrong with a malformed reply, or names the
	// kind of string or aggregate that was too large ("array", "map",
	// "bulk string", ...).
	Detail string
}

func (e *LimitError) Error() string {
	addr := e.Addr
	if addr == "" {
		addr = "(unknown address)"
	}
	var b strings.Builder
	b.WriteString("respguard: server ")
	b.WriteString(addr)
	b.WriteString(" sent ")
	n := func(v int64) string { return strconv.FormatInt(v, 10) }
	switch e.What {
	case WhatMalformed:
		b.WriteString("a malformed reply (" + e.Detail + "): refused")
	case WhatLine:
		b.WriteString("a line of at least " + n(e.Got) + " bytes")
	case WhatBulk:
		b.WriteString("a reply declaring a " + n(e.Got) + "-byte " + e.Detail)
	case WhatAggregate:
		b.WriteString("a reply declaring " + n(e.Got) + " elements in one " + e.Detail)
		if e.Detail == "map" || e.Detail == "attribute" {
			b.WriteString(" (pairs count twice)")
		}
	case WhatReplyElements:
		b.WriteString("a reply of at least " + n(e.Got) + " elements in all")
	case WhatDepth:
		b.WriteString("a reply nested " + n(e.Got) + " levels deep")
	case WhatReplyBytes:
		b.WriteString("a reply of at least " + n(e.Got) + " bytes")
	default:
		b.WriteString("a reply exceeding " + e.What)
	}
	if e.What != WhatMalformed {
		b.WriteString("; the limit is " + n(e.Limit) + ": refused as oversized")
	}
	b.WriteString(", treating it as a bad server: the connection is closed; check what listens at ")
	b.WriteString(addr)
	return b.String()
}

// Unwrap returns net.ErrClosed: the guard closed the connection. go-redis
// strips the *net.OpError from an error of the connection's handshake
// (HELLO) and returns what it wraps; this keeps the refusal a lost
// connection there too (failure.Network tests net.ErrClosed).
func (e *LimitError) Unwrap() error { return net.ErrClosed }

// Timeout is false: the reply arrived, and was refused.
func (e *LimitError) Timeout() bool { return false }

// Temporary is false: the same server on the same connection would only
// send more of it. (net.Error still requires it.)
func (e *LimitError) Temporary() bool { return false }
