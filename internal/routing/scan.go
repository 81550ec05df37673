package routing

import (
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// A SCAN-family cursor (SCAN, SSCAN, HSCAN, ZSCAN) is valid only on the
// node that issued it: another node's table is laid out differently, so
// continuing there skips and repeats elements. A routed client therefore
// tags every cursor it hands out with where it came from, in bits the
// server's cursors never use (a cursor counts the buckets of one table, and
// no table has 2^40 of them), and continues a tagged cursor only there.
// Two levels can nest: a client routing to nodes (Sentinel, Cluster) tags
// NodeTagBits at NodeTagShift; one routing to databases (multidb), which
// may hold such a client, tags DatabaseTagBits at DatabaseTagShift.
const (
	NodeTagShift, NodeTagBits         = 48, 16
	DatabaseTagShift, DatabaseTagBits = 40, 8
)

// TagCursor returns cursor with tag in the bits [shift, shift+bits), or
// false when those bits are already in use (by the server, or an inner
// client's tag), or tag does not fit. A zero cursor (the end) is never
// tagged.
func TagCursor(cursor uint64, shift, bits uint, tag uint64) (uint64, bool) {
	mask := uint64(1)<<bits - 1
	if cursor == 0 || tag == 0 || tag > mask || cursor>>shift&mask != 0 {
		return cursor, false
	}
	return cursor | tag<<shift, true
}

// UntagCursor splits a cursor into its tag in the bits [shift,
// shift+bits) (0: untagged) and the cursor without it.
func UntagCursor(cursor uint64, shift, bits uint) (tag, rest uint64) {
	mask := uint64(1)<<bits - 1
	tag = cursor >> shift & mask
	return tag, cursor &^ (mask << shift)
}

// Scan is a SCAN-family command's cursor, in its arguments and its reply.
type Scan struct {
	cmd redis.Cmder
	arg int // the cursor's index in cmd.Args()
}

// FindScan reports whether cmd is SCAN, SSCAN, HSCAN or ZSCAN (a typed
// *redis.ScanCmd, or a *redis.Cmd from Do) and locates its cursor. It does
// not allocate.
func FindScan(cmd redis.Cmder) (Scan, bool) {
	args := cmd.Args()
	if len(args) < 2 {
		return Scan{}, false
	}
	name, ok := args[0].(string)
	if !ok || len(name) < 4 || len(name) > 5 {
		return Scan{}, false
	}
	arg := 0
	switch {
	case equalFold(name, "scan"):
		arg = 1
	case equalFold(name, "sscan"), equalFold(name, "hscan"), equalFold(name, "zscan"):
		arg = 2
	default:
		return Scan{}, false
	}
	if len(args) <= arg {
		return Scan{}, false
	}
	switch cmd.(type) {
	case *redis.ScanCmd, *redis.Cmd:
		return Scan{cmd: cmd, arg: arg}, true
	}
	return Scan{}, false
}

// equalFold is strings.EqualFold for ASCII lower-case lower.
func equalFold(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// Cmd is the command.
func (s Scan) Cmd() redis.Cmder { return s.cmd }

// Cursor is the cursor the command sends, false when it is not a number.
func (s Scan) Cursor() (uint64, bool) {
	switch v := s.cmd.Args()[s.arg].(type) {
	case uint64:
		return v, true
	case int:
		return uint64(v), v >= 0 //nolint:gosec // a negative v is reported as not a cursor
	case int64:
		return uint64(v), v >= 0 //nolint:gosec // a negative v is reported as not a cursor
	case string:
		n, err := strconv.ParseUint(v, 10, 64)
		return n, err == nil
	case []byte:
		n, err := strconv.ParseUint(string(v), 10, 64)
		return n, err == nil
	}
	return 0, false
}

// SetCursor sets the cursor the command sends.
func (s Scan) SetCursor(c uint64) { s.cmd.Args()[s.arg] = c }

// ReplyCursor is the cursor of the command's reply, once it succeeded;
// false when there is none.
func (s Scan) ReplyCursor() (uint64, bool) {
	switch cmd := s.cmd.(type) {
	case *redis.ScanCmd:
		_, c := cmd.Val()
		return c, true
	case *redis.Cmd:
		v, ok := cmd.Val().([]any)
		if !ok || len(v) != 2 {
			return 0, false
		}
		switch c := v[0].(type) {
		case string:
			n, err := strconv.ParseUint(c, 10, 64)
			return n, err == nil
		case int64:
			return uint64(c), c >= 0 //nolint:gosec // a negative c is reported as not a cursor
		}
	}
	return 0, false
}

// SetReplyCursor sets the cursor of the command's reply (as go-redis would
// have parsed it).
func (s Scan) SetReplyCursor(c uint64) {
	switch cmd := s.cmd.(type) {
	case *redis.ScanCmd:
		page, _ := cmd.Val()
		cmd.SetVal(page, c)
	case *redis.Cmd:
		if v, ok := cmd.Val().([]any); ok && len(v) == 2 {
			cmd.SetVal([]any{strconv.FormatUint(c, 10), v[1]})
		}
	}
}

// MaxUntaggedCursors bounds the cursors an UntaggedCursors remembers: a
// caller that starts iterations and abandons them must not grow it without
// bound.
const MaxUntaggedCursors = 4096

// UntaggedCursors remembers where the cursors came from that a client
// could not tag (a server whose cursors use the tag's bits), for at most
// MaxUntaggedCursors of them: the oldest is forgotten first, and the
// client then treats a forgotten cursor as it treats an untagged one. The
// zero value is ready; it is safe for concurrent use.
type UntaggedCursors struct {
	mu     sync.Mutex
	origin map[uint64]uint64 // cursor -> tag of the node or database
	order  []uint64          // oldest first
}

// Remember records that cursor came from origin.
func (u *UntaggedCursors) Remember(cursor, origin uint64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.origin == nil {
		u.origin = map[uint64]uint64{}
	}
	if _, ok := u.origin[cursor]; !ok {
		if len(u.order) == MaxUntaggedCursors {
			delete(u.origin, u.order[0])
			u.order = u.order[1:]
		}
		u.order = append(u.order, cursor)
	}
	u.origin[cursor] = origin
}

// Lookup returns where cursor came from, if it is remembered.
func (u *UntaggedCursors) Lookup(cursor uint64) (origin uint64, ok bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	origin, ok = u.origin[cursor]
	return origin, ok
}
