package replica

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Reason says why an election changed. The values are short and stable,
// for metrics and logs.
type Reason string

// The reasons of an Event. When several apply, the first in this list is
// given (Detail lists every node that joined or left, with its own reason).
const (
	// ReasonFirstRound: the first probe round gave the election its data.
	ReasonFirstRound Reason = "first-round"
	// ReasonTopology: the client reported another master or other replicas.
	ReasonTopology Reason = "topology"
	// ReasonUnreachable: an elected replica stopped answering probes.
	ReasonUnreachable Reason = "unreachable"
	// ReasonLinkDown: an elected replica's replication link went down.
	ReasonLinkDown Reason = "link-down"
	// ReasonStale: an elected replica fell behind MaxStaleness.
	ReasonStale Reason = "stale"
	// ReasonSlow: an elected replica became slower than ExclusionFactor ×
	// the master.
	ReasonSlow Reason = "slow"
	// ReasonRecovered: an excluded replica became eligible again and was
	// elected.
	ReasonRecovered Reason = "recovered"
	// ReasonRTT: the round-trip times moved: a replica entered or left the
	// latency window, or the master became nearer (or farther) than the
	// elected replicas for Nearest.
	ReasonRTT Reason = "rtt"
)

var reasonOrder = []Reason{ReasonFirstRound, ReasonTopology, ReasonUnreachable, ReasonLinkDown, ReasonStale, ReasonSlow, ReasonRecovered, ReasonRTT}

func exclusionReason(e Exclusion) Reason {
	switch e {
	case ExcludedUnreachable:
		return ReasonUnreachable
	case ExcludedLinkDown:
		return ReasonLinkDown
	case ExcludedStale:
		return ReasonStale
	case ExcludedSlow:
		return ReasonSlow
	}
	return ReasonRTT
}

// Event reports a change of the election: the replicas reads from replicas
// use, or whether reads under Nearest go to the master.
type Event struct {
	Time       time.Time
	MasterName string
	// Round is the number of probe rounds the Selector had received
	// (Selector.Rounds) when it made the election.
	Round  uint64
	Reason Reason
	// Elected are the replicas Replica and ReplicaPreferred read from now
	// (by address; empty: ReplicaPreferred reads from the master), and
	// Previous the ones before.
	Elected  []string
	Previous []string
	// NearestMaster: reads under Nearest go to the master now (it is
	// nearer than every elected replica, or none is elected);
	// PreviousNearestMaster is the value before.
	NearestMaster         bool
	PreviousNearestMaster bool
	// Detail says in words what changed for each node.
	Detail string
}

func (e Event) String() string {
	return fmt.Sprintf("%s replica election (%s): elected %v (was %v), nearest master %v: %s",
		e.Time.Format("15:04:05.000"), e.Reason, e.Elected, e.Previous, e.NearestMaster, e.Detail)
}

// describeChange builds the reason and the detail of a change from the
// previous election (prevTable) to res. firstRound: the previous election
// had no RTT data; topology: the client reported another topology since.
func describeChange(prevElected []string, prevTable []NodeStatus, res electionResult, firstRound, topology bool) (Reason, string) {
	var parts []string
	found := map[Reason]bool{}
	if firstRound {
		found[ReasonFirstRound] = true
	}
	if topology {
		found[ReasonTopology] = true
	}
	prevRow := func(addr string) (NodeStatus, bool) {
		for _, st := range prevTable {
			if st.Addr == addr && st.Role == RoleReplica {
				return st, true
			}
		}
		return NodeStatus{}, false
	}
	for _, st := range res.table {
		if st.Role != RoleReplica {
			continue
		}
		was := slices.Contains(prevElected, st.Addr)
		switch {
		case was && !st.Elected:
			r := exclusionReason(st.Excluded)
			if st.Excluded == ExcludedUnprobed {
				r = ReasonTopology
			}
			found[r] = true
			parts = append(parts, fmt.Sprintf("%s left (%s: %s)", st.Addr, r, st.Why))
		case !was && st.Elected:
			r := ReasonRTT
			if prev, ok := prevRow(st.Addr); ok && prev.Excluded != NotExcluded && prev.Excluded != ExcludedUnprobed {
				r = ReasonRecovered
			}
			found[r] = true
			parts = append(parts, fmt.Sprintf("%s joined (%s)", st.Addr, st.Why))
		}
	}
	for _, addr := range prevElected {
		if _, ok := prevRow(addr); ok && !slices.ContainsFunc(res.table, func(st NodeStatus) bool { return st.Addr == addr && st.Role == RoleReplica }) {
			found[ReasonTopology] = true
			parts = append(parts, fmt.Sprintf("%s left (no longer a healthy replica of the master)", addr))
		}
	}
	if len(res.table) > 0 && res.table[0].Role == RoleMaster {
		m := res.table[0]
		prevNearest := len(prevTable) > 0 && prevTable[0].Role == RoleMaster && prevTable[0].Nearest
		if m.Nearest != prevNearest {
			found[ReasonRTT] = true
			if m.Nearest {
				parts = append(parts, fmt.Sprintf("Nearest reads go to the master %s (%s)", m.Addr, m.Why))
			} else {
				parts = append(parts, fmt.Sprintf("Nearest reads leave the master %s", m.Addr))
			}
		}
	}
	reason := ReasonRTT
	for _, r := range reasonOrder {
		if found[r] {
			reason = r
			break
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "elected set changed")
	}
	return reason, strings.Join(parts, "; ")
}
