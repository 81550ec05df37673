package cluster

import "github.com/rediskit/rediskit/internal/respguard"

// ReplyLimits bound what a server may make the process allocate through
// one reply to the caller's commands (Config.ReplyLimits): a reply over a
// limit fails its command with a *ReplyLimitError and its connection is
// closed. A zero field takes its default below. Its fields:
//
//	MaxLine          int64 // bytes of a line: a status, an error, a number, a header (DefaultReplyMaxLine)
//	MaxBulk          int64 // bytes of one string (DefaultReplyMaxBulk)
//	MaxAggregate     int64 // elements one array, set, push or map header declares, pairs counted twice (DefaultReplyMaxAggregate)
//	MaxReplyElements int64 // elements declared by all the aggregates of one reply (DefaultReplyMaxReplyElements)
//	MaxDepth         int64 // nesting of aggregates in one reply (DefaultReplyMaxDepth)
//	MaxReplyBytes    int64 // bytes of one reply, strings counted as declared (DefaultReplyMaxReplyBytes)
//
// It is the type of rediskit's internal reply guard (internal/respguard,
// whose documentation says what is checked, and how); the client's own
// connections (its reads of the slot map and probes) keep that
// package's tighter limits.
type ReplyLimits = respguard.Limits

// ReplyLimitError is a reply refused because it exceeds a ReplyLimits
// bound or is not RESP go-redis can read: Addr is the server, What the
// bound ("string length", "aggregate elements", ..., or "malformed"),
// Limit the bound and Got what the reply declared. The command it answered
// was sent, so it may have run; its connection is closed, and the next
// command gets another. Find it with errors.As in the error of the
// command: it is inside the client's own error (a *NodeError for a call
// routed to a node) and a *net.OpError.
type ReplyLimitError = respguard.LimitError

// The defaults of ReplyLimits: generous, since the caller's replies may
// rightly be large (a 512 MB string, the millions of elements of an
// HGETALL or LRANGE), and still refusing what would kill the process (an
// aggregate header of 2^31 elements or more, a line without an end,
// nesting hundreds of levels deep).
const (
	DefaultReplyMaxLine          = respguard.DefaultDataMaxLine          // 1 MiB
	DefaultReplyMaxBulk          = respguard.DefaultDataMaxBulk          // 512 MiB: Redis's largest string
	DefaultReplyMaxAggregate     = respguard.DefaultDataMaxAggregate     // 16,777,216 elements
	DefaultReplyMaxReplyElements = respguard.DefaultDataMaxReplyElements // 33,554,432 elements
	DefaultReplyMaxDepth         = respguard.DefaultDataMaxDepth         // 128 levels
	DefaultReplyMaxReplyBytes    = respguard.DefaultDataMaxReplyBytes    // 1 GiB
)
