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
	found := map[Reason]bool{}
	if firstRound {
		found[ReasonFirstRound] = true
	}
	if topology {
		found[ReasonTopology] = true
	}
	// What changed, node by node: replicas that joined or left the
	// elected set, elected replicas that are gone from the table, and the
	// master gaining or losing Nearest's reads.
	parts := replicaChanges(nil, found, prevElected, prevTable, res.table)
	parts = vanishedReplicas(parts, found, prevElected, prevTable, res.table)
	parts = nearestMasterChange(parts, found, prevTable, res.table)
	if len(parts) == 0 {
		parts = append(parts, "elected set changed")
	}
	return firstReason(found), strings.Join(parts, "; ")
}

// prevReplicaRow is addr's replica row in the previous election's table.
func prevReplicaRow(prevTable []NodeStatus, addr string) (NodeStatus, bool) {
	for _, st := range prevTable {
		if st.Addr == addr && st.Role == RoleReplica {
			return st, true
		}
	}
	return NodeStatus{}, false
}

// replicaChanges appends to parts the replicas of table that joined or
// left the elected set, and records their reasons in found. One that left
// for not being probed yet is new to the topology; one that joined after
// an exclusion (other than that) recovered; any other joined on its RTT.
func replicaChanges(parts []string, found map[Reason]bool, prevElected []string, prevTable, table []NodeStatus) []string {
	for _, st := range table {
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
			if prev, ok := prevReplicaRow(prevTable, st.Addr); ok && prev.Excluded != NotExcluded && prev.Excluded != ExcludedUnprobed {
				r = ReasonRecovered
			}
			found[r] = true
			parts = append(parts, fmt.Sprintf("%s joined (%s)", st.Addr, st.Why))
		}
	}
	return parts
}

// vanishedReplicas appends to parts the replicas elected before that are
// no longer in table (the client no longer reports them as healthy
// replicas of the master): a change of topology.
func vanishedReplicas(parts []string, found map[Reason]bool, prevElected []string, prevTable, table []NodeStatus) []string {
	for _, addr := range prevElected {
		if _, ok := prevReplicaRow(prevTable, addr); ok && !slices.ContainsFunc(table, func(st NodeStatus) bool { return st.Addr == addr && st.Role == RoleReplica }) {
			found[ReasonTopology] = true
			parts = append(parts, fmt.Sprintf("%s left (no longer a healthy replica of the master)", addr))
		}
	}
	return parts
}

// nearestMasterChange appends to parts whether reads under Nearest went to
// or left the master (a change of RTTs), when the master is in table.
func nearestMasterChange(parts []string, found map[Reason]bool, prevTable, table []NodeStatus) []string {
	if len(table) == 0 || table[0].Role != RoleMaster {
		return parts
	}
	m := table[0]
	prevNearest := len(prevTable) > 0 && prevTable[0].Role == RoleMaster && prevTable[0].Nearest
	if m.Nearest == prevNearest {
		return parts
	}
	found[ReasonRTT] = true
	if m.Nearest {
		return append(parts, fmt.Sprintf("Nearest reads go to the master %s (%s)", m.Addr, m.Why))
	}
	return append(parts, fmt.Sprintf("Nearest reads leave the master %s", m.Addr))
}

// firstReason is the first of reasonOrder found, ReasonRTT if none was.
func firstReason(found map[Reason]bool) Reason {
	for _, r := range reasonOrder {
		if found[r] {
			return r
		}
	}
	return ReasonRTT
}
