package respguard

// The defaults of Limits. Each is far above what Redis and Sentinel send on
// rediskit's own connections (ROLE, INFO, CLUSTER NODES and SLOTS, SENTINEL
// replies, pub/sub events) and far below what would hurt the process.
const (
	// DefaultMaxLine bounds a line: a simple string, an error, a number,
	// a boolean, a null, or the header of a string or an aggregate.
	// Redis's own error and status lines are under 1 KiB.
	DefaultMaxLine = 64 << 10

	// DefaultMaxBulk bounds one bulk string, verbatim string or blob
	// error. INFO is a few KiB; CLUSTER NODES of a 1,000-node cluster
	// with fragmented slots is about 1 MiB.
	DefaultMaxBulk = 16 << 20

	// DefaultMaxAggregate bounds the elements one array, set, push, map
	// or attribute header declares (a map's or an attribute's pairs
	// count twice). go-redis allocates the whole slice or map from the
	// header, before reading a single element: 16 bytes an element for
	// a slice. CLUSTER SLOTS of a cluster whose 16,384 slots are all
	// assigned separately has 16,384 entries.
	DefaultMaxAggregate = 1 << 16

	// DefaultMaxReplyElements bounds the elements of all the aggregates
	// of one top-level reply together.
	DefaultMaxReplyElements = 1 << 20

	// DefaultMaxDepth bounds how deeply aggregates nest in one reply
	// (a flat array is depth 1). go-redis reads nested aggregates by
	// recursion, one stack frame chain per level; Redis's deepest
	// replies (CLUSTER SHARDS, COMMAND DOCS) nest about 6 levels.
	DefaultMaxDepth = 32

	// DefaultMaxReplyBytes bounds the bytes of one top-level reply: its
	// lines, and its strings as their headers declare them.
	DefaultMaxReplyBytes = 32 << 20
)

// The defaults of the limits on the data path: the connections that carry
// the caller's own commands (ForData). Redis's replies there may rightly
// be large, a 512 MB string (proto-max-bulk-len's default) or the millions
// of elements of an HGETALL, SMEMBERS or LRANGE, so these are far above the
// control path's, and still refuse what no Redis sends and what would
// kill the process: an aggregate header of 2^31 elements or more, a line
// without an end, nesting hundreds of levels deep.
const (
	// DefaultDataMaxLine bounds a line. Redis's error and status lines
	// are under 1 KiB; a script can return a status or error reply of
	// its own, and a big number is a line.
	DefaultDataMaxLine = 1 << 20

	// DefaultDataMaxBulk is Redis's largest string (proto-max-bulk-len's
	// default, 512 MB).
	DefaultDataMaxBulk = 512 << 20

	// DefaultDataMaxAggregate bounds the elements one aggregate header
	// declares (a map's pairs count twice): 16,777,216, an LRANGE of 16
	// million elements or an HGETALL of 8 million fields. go-redis
	// allocates from the header, before an element arrives, 16 bytes an
	// element for a slice: up to 256 MiB for the largest header allowed.
	DefaultDataMaxAggregate = 1 << 24

	// DefaultDataMaxReplyElements bounds the elements of all the
	// aggregates of one reply: 2 x DefaultDataMaxAggregate, for nested
	// replies (XRANGE, a script's tables) of millions of entries.
	DefaultDataMaxReplyElements = 1 << 25

	// DefaultDataMaxDepth bounds nesting. Redis's own replies nest about
	// 6 levels; a script's nested tables can go deeper.
	DefaultDataMaxDepth = 128

	// DefaultDataMaxReplyBytes bounds the bytes of one reply: a
	// DefaultDataMaxBulk string with room to spare, or 1 GiB of smaller
	// ones.
	DefaultDataMaxReplyBytes = 1 << 30
)

// Limits bound what one server may make the process allocate through a
// connection. A zero (or negative) field means its default (the control
// path's, above; ForData fills in the data path's instead); values above
// 2^60 count as 2^60. A reply that
// would exceed any of them is refused before go-redis sees the header that
// declares it, and the connection is closed.
//
// What go-redis can still allocate for one accepted reply is at most about
// MaxReplyBytes (the strings, copied once) plus 64 bytes for each of
// MaxReplyElements (an interface value, its boxed scalar or string header,
// map entries: 16 to 44 bytes measured with go-redis v9.23), so with the
// defaults about 32 MiB + 64 MiB. Commands sent in one pipeline have one
// reply each, and each is bounded on its own.
type Limits struct {
	MaxLine          int64 // bytes of a line, its type byte counted, its \r\n not (DefaultMaxLine)
	MaxBulk          int64 // bytes of one bulk string, verbatim string or blob error (DefaultMaxBulk)
	MaxAggregate     int64 // elements one aggregate declares, pairs counted twice (DefaultMaxAggregate)
	MaxReplyElements int64 // elements declared by all the aggregates of one reply (DefaultMaxReplyElements)
	MaxDepth         int64 // nesting of aggregates in one reply (DefaultMaxDepth)
	MaxReplyBytes    int64 // bytes of one reply, strings counted as declared (DefaultMaxReplyBytes)
}

// maxLimit caps every limit, so that sums of a few of them (a string's
// length and its \r\n, a total and a header's count) cannot overflow: a
// limit this high already means "unbounded".
const maxLimit = 1 << 60

// ForData returns l with every field that is not positive set to its data
// path default (DefaultDataMaxLine, ...): the limits of the connections
// that carry the caller's commands.
func (l Limits) ForData() Limits {
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&l.MaxLine, DefaultDataMaxLine)
	def(&l.MaxBulk, DefaultDataMaxBulk)
	def(&l.MaxAggregate, DefaultDataMaxAggregate)
	def(&l.MaxReplyElements, DefaultDataMaxReplyElements)
	def(&l.MaxDepth, DefaultDataMaxDepth)
	def(&l.MaxReplyBytes, DefaultDataMaxReplyBytes)
	return l.withDefaults()
}

// withDefaults returns l with every field that is not positive set to its
// default, and every field above maxLimit set to it.
func (l Limits) withDefaults() Limits {
	def := func(v *int64, d int64) {
		switch {
		case *v <= 0:
			*v = d
		case *v > maxLimit:
			*v = maxLimit
		}
	}
	def(&l.MaxLine, DefaultMaxLine)
	def(&l.MaxBulk, DefaultMaxBulk)
	def(&l.MaxAggregate, DefaultMaxAggregate)
	def(&l.MaxReplyElements, DefaultMaxReplyElements)
	def(&l.MaxDepth, DefaultMaxDepth)
	def(&l.MaxReplyBytes, DefaultMaxReplyBytes)
	return l
}
