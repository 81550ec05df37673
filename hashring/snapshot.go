package hashring

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// Range is a half-open range of points, [Start, End). End is at most
// RingSize (2^32), so a range that reaches the top of the ring ends at
// RingSize and its wrapped part is a second range starting at 0.
type Range struct {
	Start, End uint64
}

// Contains reports whether the point is in the range.
func (r Range) Contains(p uint32) bool { return r.Start <= uint64(p) && uint64(p) < r.End }

// Len is the number of points in the range.
func (r Range) Len() uint64 { return r.End - r.Start }

// Replica is one member of the ring with the time of its last heartbeat
// (its ZSET score).
type Replica struct {
	Member
	// Heartbeat is the time of the replica's last heartbeat, by the clock
	// of the node that sent it: its score, to the nearest nanosecond.
	// A time cannot hold every score, so scores beyond ±2^62 s (about
	// ±1.5·10^11 years; +inf and -inf included) are given as
	// time.Unix(±2^62, 0). Such a replica is live or expired by its score
	// all the same: +inf and 1e300 are live, -inf is not.
	Heartbeat time.Time
}

// NodeInfo describes one node (one hostname:pid) of a Snapshot.
type NodeInfo struct {
	// ID is "<hostname>:<pid>".
	ID       string
	Hostname string
	PID      string
	// Replicas is the number of the node's live replicas.
	Replicas int
	// Points is the number of points the node owns.
	Points uint64
	// OldestHeartbeat is the oldest heartbeat among the node's live
	// replicas.
	OldestHeartbeat time.Time
}

// Share is the fraction of the ring the node owns, 0 to 1.
func (n NodeInfo) Share() float64 { return float64(n.Points) / RingSize }

// Snapshot is an immutable view of a ring's live replicas as read from
// Redis at one moment. Its methods are safe for concurrent use and do not
// allocate (except those returning slices).
//
// A point belongs to the replica with the greatest start ≤ the point, or,
// when no start is ≤ the point, to the replica with the greatest start
// (the ring wraps). When two replicas have the same start (a 2^-32 chance
// per pair), the one whose member string sorts last owns the range and the
// others own nothing.
type Snapshot struct {
	key    string
	hash   Hash
	readAt time.Time

	// Live replicas sorted by (start, member): starts[i] and owner[i]
	// describe replicas[i]. owner indexes nodes and ids.
	starts   []uint32
	owner    []int32
	replicas []Replica
	nodes    []NodeInfo
	ids      []string

	// expired holds the replicas read but past their expiry (Print only;
	// a node's regular read asks Redis for live replicas only).
	expired []Replica
}

// buildSnapshot makes a snapshot from ZSET entries. An entry is live when
// its score is ≥ minScore, compared as floats: redis-hashring's rule
// (ZRANGEBYSCORE key <now−60> +inf, which Redis decides on the double
// scores), so a score of 1e300 or +inf is live and -inf never is. The
// others are expired: kept apart, not on the ring. Malformed members are
// skipped and passed to bad.
//
// The decision is made on the score, never on Replica.Heartbeat: a time
// cannot hold every score (see scoreTime), a float comparison can.
func buildSnapshot(key string, h Hash, readAt time.Time, minScore float64, entries []entry, bad func(member string, err error)) *Snapshot {
	s := &Snapshot{key: key, hash: h, readAt: readAt}
	live := make([]Replica, 0, len(entries))
	for _, e := range entries {
		m, err := ParseMember(e.member)
		if err != nil {
			if bad != nil {
				bad(e.member, err)
			}
			continue
		}
		r := Replica{Member: m, Heartbeat: scoreTime(e.score)}
		if !scoreLive(e.score, minScore) {
			s.expired = append(s.expired, r)
			continue
		}
		live = append(live, r)
	}
	slices.SortFunc(live, compareReplicas)
	slices.SortFunc(s.expired, compareReplicas)

	s.replicas = live
	s.starts = make([]uint32, len(live))
	s.owner = make([]int32, len(live))
	index := make(map[string]int32)
	for i, r := range live {
		s.starts[i] = r.Start
		id := r.NodeID()
		n, ok := index[id]
		if !ok {
			// Nodes are listed in order of their first replica on the
			// ring, as redis-hashring's debug listing does.
			n = int32(len(s.nodes)) //nolint:gosec // nodes ≤ members of one ZSET read, far below 2^31
			index[id] = n
			s.nodes = append(s.nodes, NodeInfo{ID: id, Hostname: r.Hostname, PID: r.PID, OldestHeartbeat: r.Heartbeat})
			s.ids = append(s.ids, id)
		}
		s.owner[i] = n
		node := &s.nodes[n]
		node.Replicas++
		if r.Heartbeat.Before(node.OldestHeartbeat) {
			node.OldestHeartbeat = r.Heartbeat
		}
	}
	var buf [2]Range
	for i := range live {
		for _, rg := range s.replicaRanges(i, buf[:0]) {
			s.nodes[s.owner[i]].Points += rg.Len()
		}
	}
	return s
}

func compareReplicas(a, b Replica) int {
	if c := cmp.Compare(a.Start, b.Start); c != 0 {
		return c
	}
	return cmp.Compare(a.String(), b.String())
}

// scoreLive is the liveness rule: the score is ≥ the least live score,
// as Redis's ZRANGEBYSCORE and Python compare floats. A NaN score (Redis
// refuses to store one, so it cannot come from Redis) is never live: it
// is no heartbeat, and a member that counted as live forever on it would
// keep its ranges from the other nodes if its node died.
func scoreLive(score, minScore float64) bool { return score >= minScore }

// scoreBound is the largest magnitude of a score scoreTime converts as it
// is: 2^62 s, far beyond any clock and well inside time.Time's range. (A
// time.Time holds about ±2^63 s counted from year 1, so time.Unix
// overflows for scores near 2^63, and int64(score) is undefined beyond
// it: a score of 2^63 or +inf used to come out as a time before year 1,
// that is, expired.)
const scoreBound = 1 << 62

// scoreTime converts a ZSET score (UNIX seconds, as a heartbeat writes
// it) to a time, to the nearest nanosecond. It is monotonic (a greater
// score never gives an earlier time) and never overflows: +inf and every
// score ≥ 2^62 give time.Unix(2^62, 0); -inf, every score ≤ -2^62 and
// NaN give time.Unix(-2^62, 0) (a NaN is no heartbeat time, and Redis
// cannot store one). Liveness is decided on the score itself
// (scoreLive), never on this time.
func scoreTime(score float64) time.Time {
	switch {
	case score >= scoreBound:
		return time.Unix(scoreBound, 0)
	case !(score > -scoreBound): // -inf, NaN
		return time.Unix(-scoreBound, 0)
	}
	sec, frac := math.Modf(score) // exact; frac has sec's sign
	return time.Unix(int64(sec), int64(math.Round(frac*1e9)))
}

// timeScore converts a time to a ZSET score (UNIX seconds, as Python's
// time.time()).
func timeScore(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// replicaRanges appends the ranges of replica i in redis-hashring's order:
// [start, next start), or for the replica with the greatest start
// [start, 2^32) then [0, first start). A lone replica owns [0, 2^32).
func (s *Snapshot) replicaRanges(i int, dst []Range) []Range {
	n := len(s.starts)
	if n == 1 {
		return append(dst, Range{0, RingSize})
	}
	start := uint64(s.starts[i])
	if i < n-1 {
		if end := uint64(s.starts[i+1]); end > start {
			dst = append(dst, Range{start, end})
		}
		return dst // a tie with the next replica: it owns the range
	}
	dst = append(dst, Range{start, RingSize})
	if first := uint64(s.starts[0]); first > 0 {
		dst = append(dst, Range{0, first})
	}
	return dst
}

// index returns the index of the replica that owns point p; the ring must
// not be empty.
func (s *Snapshot) index(p uint32) int {
	lo, hi := 0, len(s.starts)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.starts[m] <= p {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return len(s.starts) - 1
	}
	return lo - 1
}

// Key is the ring's Redis key.
func (s *Snapshot) Key() string { return s.key }

// Hash is the hash the snapshot maps keys with.
func (s *Snapshot) Hash() Hash { return s.hash }

// ReadAt is when the ring was read (the reader's clock).
func (s *Snapshot) ReadAt() time.Time { return s.readAt }

// Point is the key's point on the ring, with the snapshot's hash.
func (s *Snapshot) Point(key string) uint32 { return s.hash.Point(key) }

// Owner returns the ID ("<hostname>:<pid>") of the node that owns the key,
// or false when the ring is empty.
func (s *Snapshot) Owner(key string) (string, bool) {
	return s.OwnerOfPoint(s.hash.Point(key))
}

// OwnerOfPoint returns the ID of the node that owns the point, or false
// when the ring is empty.
func (s *Snapshot) OwnerOfPoint(p uint32) (string, bool) {
	if len(s.starts) == 0 {
		return "", false
	}
	return s.ids[s.owner[s.index(p)]], true
}

// NodeCount is the number of nodes with live replicas.
func (s *Snapshot) NodeCount() int { return len(s.nodes) }

// Nodes lists the nodes in the order of their first replica on the ring.
func (s *Snapshot) Nodes() []NodeInfo { return slices.Clone(s.nodes) }

// Replicas lists the live replicas in ring order.
func (s *Snapshot) Replicas() []Replica { return slices.Clone(s.replicas) }

// RangesOf returns the ranges the node owns, one per replica (two for the
// replica that wraps around the top of the ring), in ring order, as
// redis-hashring's get_ranges does.
func (s *Snapshot) RangesOf(nodeID string) []Range {
	var out []Range
	for i, o := range s.owner {
		if s.ids[o] == nodeID {
			out = s.replicaRanges(i, out)
		}
	}
	return out
}

// entry is one ZSET member with its score, as read from Redis.
type entry struct {
	member string
	score  float64
}
