package hashring

import (
	crand "crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ErrMalformedMember is wrapped by ParseMember's errors: the ZSET member
// does not have the redis-hashring member format.
var ErrMalformedMember = errors.New("hashring: malformed ring member")

// Member is one replica as stored in the ring's ZSET:
//
//	<start>:<hostname>:<pid>:<id>
//
// See the package documentation for the exact byte format.
type Member struct {
	// Start is the first point the replica owns.
	Start uint32
	// Hostname and PID identify the node (the process) that owns the
	// replica; together they are its node ID, "<hostname>:<pid>".
	Hostname string
	PID      string
	// ID distinguishes the node's replicas: 8 lowercase hex characters
	// for members written by this package or by redis-hashring.
	ID string
}

// String returns the ZSET member, "<start>:<hostname>:<pid>:<id>".
func (m Member) String() string {
	return strconv.FormatUint(uint64(m.Start), 10) + ":" + m.Hostname + ":" + m.PID + ":" + m.ID
}

// NodeID returns "<hostname>:<pid>", the identity redis-hashring groups
// replicas by.
func (m Member) NodeID() string { return m.Hostname + ":" + m.PID }

// ParseMember parses a ZSET member of a ring. It accepts exactly the
// members that redis-hashring 0.6 can use, in the canonical spelling both
// libraries write:
//
//   - valid UTF-8 (Python decodes members as UTF-8 and fails otherwise);
//   - exactly three ':' separators, so four fields: Python splits off the
//     start at the first ':' and then needs exactly three ':'-separated
//     fields (hostname, pid, id) in the rest;
//   - a start of ASCII decimal digits (leading zeros allowed, as Python's
//     int() allows them) with a value below 2^32.
//
// Hostname, PID and ID may be any text without ':' (Python does not check
// them further; they may even be empty). A start that only Python's int()
// accepts (a sign, underscores, spaces, non-ASCII digits, or a value
// outside the ring) is rejected here: no library writes one, and Python
// would place such a replica outside the ring's points. Rejected members
// are ignored by nodes and views (and logged once).
func ParseMember(s string) (Member, error) {
	if !utf8.ValidString(s) {
		return Member{}, fmt.Errorf("%w %q: not valid UTF-8", ErrMalformedMember, s)
	}
	start, rest, ok := strings.Cut(s, ":")
	if !ok {
		return Member{}, fmt.Errorf("%w %q: no ':' separator", ErrMalformedMember, s)
	}
	if start == "" {
		return Member{}, fmt.Errorf("%w %q: empty start", ErrMalformedMember, s)
	}
	var v uint64
	for i := 0; i < len(start); i++ {
		c := start[i]
		if c < '0' || c > '9' {
			return Member{}, fmt.Errorf("%w %q: start must be ASCII decimal digits", ErrMalformedMember, s)
		}
		if v < RingSize { // past it the value no longer matters
			v = v*10 + uint64(c-'0')
		}
	}
	if v >= RingSize {
		return Member{}, fmt.Errorf("%w %q: start %d is outside the ring [0, 2^32)", ErrMalformedMember, s, v)
	}
	host, rest, _ := strings.Cut(rest, ":")
	pid, id, ok := strings.Cut(rest, ":")
	if !ok || strings.Contains(id, ":") {
		return Member{}, fmt.Errorf("%w %q: want <start>:<hostname>:<pid>:<id>, exactly three ':'", ErrMalformedMember, s)
	}
	return Member{Start: uint32(v), Hostname: host, PID: pid, ID: id}, nil
}

// checkHostname reports whether a hostname can go into a member: no ':'
// (it would shift the fields for every reader, and make every Python node
// on the ring fail to parse the ring) and valid UTF-8.
func checkHostname(h string) error {
	switch {
	case h == "":
		return hostnameError("is empty: set it")
	case strings.Contains(h, ":"):
		return hostnameError(fmt.Sprintf("%q contains ':', the member field separator: set a name without ':'", h))
	case !utf8.ValidString(h):
		return hostnameError(fmt.Sprintf("%q is not valid UTF-8", h))
	}
	return nil
}

// hostnameError is the *ConfigError of a Hostname that cannot go into a
// member; it matches ErrInvalidHostname.
func hostnameError(problem string) *ConfigError {
	return &ConfigError{Package: "hashring", Struct: "Config", Field: "Hostname", Problem: problem, Kind: ErrInvalidHostname}
}

// newMembers picks n replicas for a node: each a random start in
// [0, 2^32) and an ID of 4 random bytes in lowercase hex, as redis-hashring
// does. Starts and IDs are distinct within the node.
func newMembers(n int, hostname, pid string) []Member {
	ms := make([]Member, 0, n)
	starts := make(map[uint32]bool, n)
	ids := make(map[string]bool, n)
	var b [4]byte
	for len(ms) < n {
		start := rand.Uint32()
		_, _ = crand.Read(b[:]) // never fails: crypto/rand.Read panics instead
		id := hex.EncodeToString(b[:])
		if starts[start] || ids[id] {
			continue
		}
		starts[start], ids[id] = true, true
		ms = append(ms, Member{Start: start, Hostname: hostname, PID: pid, ID: id})
	}
	return ms
}
