package replica

import (
	"fmt"
	"slices"
	"strings"
)

// Unused is a replica a read under ReadFrom Replica did not use, and why:
// the rows of sentinel's and cluster's NoReplicaError.
type Unused struct {
	Addr string
	// Reason is the election's exclusion in a word (ExcludedStale, ...),
	// or "" when it gave none: a selector without an RTT table, or a
	// replica leaving the topology.
	Reason Exclusion
	// Why says it in a sentence.
	Why string
}

// UnusedWhy are the sentences ExplainUnused gives the replicas the
// table's exclusion does not explain.
type UnusedWhy struct {
	Gone     string // in the table, no longer in the client's topology
	Changing string // in the table, not excluded: the election changed under the read
	Untabled string // in the client's topology, not in the table
}

// ExplainUnused lists why a read under ReadFrom Replica used none of the
// replicas: each replica row of table (the election's exclusion, or
// why.Gone when current does not have it, why.Changing when it was not
// excluded), then each of current the table lacks (why.Untabled).
func ExplainUnused(table []NodeStatus, current []string, why UnusedWhy) []Unused {
	var out []Unused
	seen := map[string]bool{}
	for _, st := range table {
		if st.Role != RoleReplica {
			continue
		}
		seen[st.Addr] = true
		r := Unused{Addr: st.Addr, Reason: st.Excluded, Why: st.Why}
		switch {
		case !slices.Contains(current, st.Addr):
			r.Reason, r.Why = "", why.Gone
		case st.Excluded == NotExcluded:
			r.Why = why.Changing
		}
		out = append(out, r)
	}
	for _, addr := range current {
		if !seen[addr] {
			out = append(out, Unused{Addr: addr, Why: why.Untabled})
		}
	}
	return out
}

// WriteUnused writes rs as an error message's tail: ": addr reason (why);
// addr ...", or ": " and none when rs is empty.
func WriteUnused(b *strings.Builder, rs []Unused, none string) {
	if len(rs) == 0 {
		b.WriteString(": " + none)
	}
	for i, r := range rs {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(r.Addr)
		if r.Reason != "" {
			fmt.Fprintf(b, " %s", r.Reason)
		}
		if r.Why != "" {
			fmt.Fprintf(b, " (%s)", r.Why)
		}
	}
}

// AwaitingProbe reports whether a replica of table has not been probed
// yet (the first round after the first Pick, or a replica that just
// joined, for which the prober runs a round at once): a read under
// ReadFrom Replica that got no replica then waits for a round.
func AwaitingProbe(table []NodeStatus) bool {
	for _, st := range table {
		if st.Role == RoleReplica && st.Excluded == ExcludedUnprobed {
			return true
		}
	}
	return false
}
