package isolation

import (
	"time"

	"github.com/rediskit/rediskit/internal/redisinfo"
)

// Watch is what a poll remembers of one replica's stream between two
// samples.
type Watch struct {
	// linked: at the last sample the replica had a connected link to the
	// master (not one being reconfigured after a failover, nor a former
	// master awaiting its demotion).
	linked bool
	offset int64
	// behind is since when the master has been ahead of offset, which has
	// not moved since (zero: not behind).
	behind time.Time
}

// Stream takes one ROLE sample of a replica (role, at now) with the
// master's offset sampled with it, and returns what to remember and
// whether the replica is watched and stalled: it was receiving the stream
// from master at the last sample and answered again (watched), and lost
// its link since or, behind the master, received nothing for longer than
// bound, how long the stream may take to reach it (the master's round
// trip to the replica, bounded by the client's to each, and a slack). A
// replica the master is not ahead of has nothing to receive, and is never
// stalled: an idle master loses nothing.
func Stream(w Watch, now time.Time, masterOffset int64, role redisinfo.Role, master string, bound time.Duration) (next Watch, watched, stalled bool) {
	linked := role.Role == "slave" && role.LinkState == "connected" && role.MasterAddr == master
	switch {
	case !linked:
		return Watch{}, w.linked, w.linked // the link was lost
	case !w.linked || role.Offset != w.offset:
		next = Watch{linked: true, offset: role.Offset}
		if masterOffset > role.Offset {
			next.behind = now
		}
		return next, w.linked, false
	}
	next = w
	if next.behind.IsZero() && masterOffset > role.Offset {
		next.behind = now
	}
	return next, true, !next.behind.IsZero() && now.Sub(next.behind) > bound
}

// Stall is what a round's samples say about the replication stream to a
// master's replicas: how many were receiving it at the last sample and
// answered again (Watched), and how many of those lost their link since
// or stopped receiving it while behind (Stalled). See Stream.
type Stall struct{ Watched, Stalled int }

// All reports whether every watched replica stalled.
func (s Stall) All() bool { return s.Watched > 0 && s.Stalled == s.Watched }

// Receiving reports whether a watched replica did not stall: the stream
// reaches the shard.
func (s Stall) Receiving() bool { return s.Watched > 0 && s.Stalled < s.Watched }

// Add counts one replica's Stream verdict.
func (s *Stall) Add(watched, stalled bool) {
	if watched {
		s.Watched++
	}
	if stalled {
		s.Stalled++
	}
}
