package hashring

import (
	"errors"
	"math/big"
	"strings"
	"unicode"
	"unicode/utf8"
)

// This file ports, for tests only, the rules by which redis-hashring 0.6
// (redis_hashring/__init__.py) reads the ring, so that our members and
// our ownership can be checked against them:
//
//   - _decode: a member is bytes decoded as UTF-8 (invalid UTF-8 raises);
//   - _fetch_ring: start, replica = member.split(":", 1); int(start);
//     the ring is sorted by start (a stable sort of ZRANGEBYSCORE's order);
//   - update: host, pid, _ = replica.split(":") (exactly three fields, or
//     ValueError); the node is host + ":" + pid; a replica is the node's
//     own when its "host:pid:id" is one of the node's; its range ends at
//     the next replica's start (% RING_SIZE): start < end → (start, end);
//     end < start → (start, RING_SIZE) and (0, end); end == start →
//     (0, RING_SIZE).

// pyMember is a member as Python reads it.
type pyMember struct {
	start               *big.Int
	host, pid, id, name string // name: "host:pid:id", Python's replica
}

var errPy = errors.New("python would raise")

// pyParse applies _decode, _fetch_ring's split and int(), and update's
// split.
func pyParse(member string) (pyMember, error) {
	if !utf8.ValidString(member) {
		return pyMember{}, errPy // UnicodeDecodeError
	}
	start, replica, ok := strings.Cut(member, ":")
	if !ok {
		return pyMember{}, errPy // not enough values to unpack
	}
	v, ok := pyInt(start)
	if !ok {
		return pyMember{}, errPy // ValueError from int()
	}
	f := strings.Split(replica, ":")
	if len(f) != 3 {
		return pyMember{}, errPy // ValueError from unpacking
	}
	return pyMember{start: v, host: f[0], pid: f[1], id: f[2], name: replica}, nil
}

// pyInt is Python 3's int(str): surrounding whitespace, an optional sign,
// then decimal digits (any Unicode Nd digit), single underscores allowed
// between digits.
func pyInt(s string) (*big.Int, bool) {
	s = strings.TrimFunc(s, unicode.IsSpace)
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg = s[0] == '-'
		s = s[1:]
	}
	if s == "" {
		return nil, false
	}
	v := new(big.Int)
	ten := big.NewInt(10)
	prevDigit := false
	for _, r := range s {
		if r == '_' {
			if !prevDigit {
				return nil, false
			}
			prevDigit = false
			continue
		}
		d, ok := digitValue(r)
		if !ok {
			return nil, false
		}
		v.Mul(v, ten).Add(v, big.NewInt(int64(d)))
		prevDigit = true
	}
	if !prevDigit { // trailing underscore
		return nil, false
	}
	if neg {
		v.Neg(v)
	}
	return v, true
}

// digitValue is the value of a Unicode decimal digit (category Nd: each
// block of ten digits is contiguous, starting at a code point ending in 0
// in every block the Unicode standard defines).
func digitValue(r rune) (int, bool) {
	if !unicode.Is(unicode.Nd, r) {
		return 0, false
	}
	zero := r
	for zero > 0 && unicode.Is(unicode.Nd, zero-1) && r-(zero-1) < 10 {
		zero--
	}
	return int(r - zero), true
}

// pyRanges is update()'s range computation for the node whose replica
// names are own, over members as ZRANGEBYSCORE returned them.
func pyRanges(members []string, own map[string]bool) (ranges []Range, nodeCount int, err error) {
	type rep struct {
		start int64
		name  string
	}
	ring := make([]rep, 0, len(members))
	for _, m := range members {
		p, err := pyParse(m)
		if err != nil {
			return nil, 0, err
		}
		ring = append(ring, rep{p.start.Int64(), p.name})
	}
	// sorted(ring, key=itemgetter(0)) is stable: insertion sort keeps it.
	for i := 1; i < len(ring); i++ {
		for j := i; j > 0 && ring[j].start < ring[j-1].start; j-- {
			ring[j], ring[j-1] = ring[j-1], ring[j]
		}
	}
	nodes := map[string]bool{}
	for n, r := range ring {
		f := strings.Split(r.name, ":")
		nodes[f[0]+":"+f[1]] = true
		if !own[r.name] {
			continue
		}
		end := ring[(n+1)%len(ring)].start % RingSize
		switch {
		case r.start < end:
			ranges = append(ranges, Range{uint64(r.start), uint64(end)})
		case end < r.start:
			ranges = append(ranges, Range{uint64(r.start), RingSize}, Range{0, uint64(end)})
		default:
			ranges = append(ranges, Range{0, RingSize})
		}
	}
	return ranges, len(nodes), nil
}

var bigRingSize = big.NewInt(RingSize)

// cutStart is _fetch_ring's member.split(":", 1).
func cutStart(member string) (start, replica string, ok bool) {
	return strings.Cut(member, ":")
}
