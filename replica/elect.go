package replica

import (
	"fmt"
	"slices"
	"time"
)

// Role is a node's role in the topology the Selector was given.
type Role string

// The roles in a NodeStatus.
const (
	RoleMaster  Role = "master"
	RoleReplica Role = "replica"
)

// Exclusion says why a replica may not be elected. The values are short and
// stable, for metrics and logs. An excluded replica serves no read, except
// a slow one, which serves ReadFrom Replica when no replica is eligible.
type Exclusion string

// The exclusions, in the order they are checked: a replica gets the first
// that applies.
const (
	// NotExcluded: the replica is eligible (elected when within the latency
	// window of the fastest eligible replica).
	NotExcluded Exclusion = ""
	// ExcludedUnprobed: no RTT sample yet (a replica that just joined, or
	// the first probe round has not completed).
	ExcludedUnprobed Exclusion = "unprobed"
	// ExcludedUnreachable: the last probe failed or timed out.
	ExcludedUnreachable Exclusion = "unreachable"
	// ExcludedLinkDown: the replica's INFO says its link to the master is
	// down, or it is not a replica.
	ExcludedLinkDown Exclusion = "link-down"
	// ExcludedStale: the estimated lag exceeds MaxStaleness, or cannot be
	// estimated while MaxStaleness is set.
	ExcludedStale Exclusion = "stale"
	// ExcludedSlow: the average RTT exceeds ExclusionFactor × the master's.
	// The only exclusion under which a replica may still serve reads: those
	// of ReadFrom Replica, when no replica is eligible.
	ExcludedSlow Exclusion = "slow"
)

// NodeStatus is one row of the RTT table (Selector.Table).
type NodeStatus struct {
	Addr string
	Role Role
	// RTT is the moving average of the PING round trip (0 until the first
	// sample, and again after a failed probe).
	RTT time.Duration
	// LastRTT is the last successful sample; Samples counts samples since
	// the average was last seeded.
	LastRTT time.Duration
	Samples int
	// LastProbe is when the node was last probed (zero if never).
	LastProbe time.Time
	// Healthy: the last probe succeeded. Err is why it did not.
	Healthy bool
	Err     error

	// Replicas only. LinkUp is the replica's master_link_status (LinkKnown
	// when its INFO was read); LastIO is its master_last_io_seconds_ago.
	LinkKnown bool
	LinkUp    bool
	LastIO    time.Duration
	// LagKnown: the replica is attached to the master and its offset was
	// read. LagBytes is the master's offset minus the replica's; Lag is
	// the estimated age of the oldest write it lacks; LagAtLeast marks Lag
	// as a lower bound (older than the prober's offset history).
	LagKnown   bool
	LagBytes   int64
	Lag        time.Duration
	LagAtLeast bool

	// Elected: reads under Replica and ReplicaPreferred go to this replica
	// (shared with the other elected ones). Nearest: reads under Nearest
	// go to this node (the master, when it is nearer than every eligible
	// replica). Excluded says why a replica may not be elected, and Why
	// explains the row in words.
	Elected  bool
	Nearest  bool
	Excluded Exclusion
	Why      string
}

// nodeInput is what the election knows of one node.
type nodeInput struct {
	addr    string
	samples int
	rtt     time.Duration
	last    time.Duration
	lastAt  time.Time
	healthy bool
	err     error

	linkKnown bool
	linkUp    bool
	lastIO    time.Duration
	lag       lagEstimate
}

// electionResult is an election: the replicas Replica and ReplicaPreferred
// use, whether Nearest uses the master, the replicas Replica falls back to
// when none is elected (slow ones only), and the table.
type electionResult struct {
	elected       []string // by address
	nearestMaster bool
	fallback      []string
	table         []NodeStatus
	probed        bool // some node has an RTT average
}

// elect runs the election rules on what is known. cfg has its defaults
// applied (a negative LatencyWindow means a single winner). master.addr is "" when
// the master is unknown. incumbents are the replicas elected before: an
// eligible incumbent stays elected while within 1.5 × the window of the
// fastest (a newcomer must be within the window), so a replica whose
// average hovers at the window's edge does not join and leave every round
// (each leave closes the client's connections to it).
func elect(cfg Config, master nodeInput, replicas []nodeInput, incumbents []string) electionResult {
	var res electionResult
	window := max(cfg.LatencyWindow, 0) // negative: no window, a single winner
	masterOK := master.addr != "" && master.healthy && master.samples > 0
	res.probed = masterOK

	// Why each replica may not be elected, and the fastest eligible
	// replica's RTT, which the window is measured from (-1: none).
	excl := make([]Exclusion, len(replicas))
	why := make([]string, len(replicas))
	best := time.Duration(-1)
	for i, r := range replicas {
		if r.samples > 0 {
			res.probed = true
		}
		excl[i], why[i] = exclusion(cfg, master, masterOK, r)
		if excl[i] == NotExcluded && (best < 0 || r.rtt < best) {
			best = r.rtt
		}
	}
	// The eligible replicas within the window of the fastest are elected
	// (incumbents within 1.5 × it); Nearest reads from the master when
	// none is, or when the master is nearer than them by more than the
	// window; Replica falls back to slow replicas when none is.
	elected := make([]bool, len(replicas))
	res.elected = electWithin(replicas, excl, elected, best, window, incumbents)
	res.nearestMaster = len(res.elected) == 0 || (masterOK && master.rtt+window < best)
	if len(res.elected) == 0 {
		res.fallback = fallback(replicas, excl, window)
	}

	// The table: the master's row, when it is known, then one row per
	// replica, each saying why it stands where it does.
	if master.addr != "" {
		res.table = append(res.table, masterStatus(master, res, window))
	}
	for i, r := range replicas {
		st := replicaStatus(r, excl[i], why[i])
		if slices.Contains(res.fallback, r.addr) {
			st.Why += "; no replica is eligible, so ReadFrom Replica (never the master) reads here"
		}
		st.Elected = elected[i]
		st.Nearest = elected[i] && !res.nearestMaster
		if excl[i] == NotExcluded {
			st.Why = eligibleWhy(r.rtt, elected[i], best, window)
		}
		res.table = append(res.table, st)
	}
	return res
}

// exclusion is the first exclusion that applies to replica r (in the
// order of the Exclusion constants), with its explanation; NotExcluded and
// "" when r is eligible. masterOK: the master answers and has an RTT
// average, so that slowness can be judged.
func exclusion(cfg Config, master nodeInput, masterOK bool, r nodeInput) (Exclusion, string) {
	switch {
	case !r.healthy && r.err != nil:
		return ExcludedUnreachable, fmt.Sprintf("probe failed: %v", r.err)
	case r.samples == 0:
		return ExcludedUnprobed, "not probed yet"
	case r.linkKnown && !r.linkUp:
		return ExcludedLinkDown, "replication link to the master is down"
	case cfg.MaxStaleness > 0 && !r.lag.known:
		return ExcludedStale, "lag unknown: not attached to the master"
	case cfg.MaxStaleness > 0 && r.lag.seconds > cfg.MaxStaleness:
		return ExcludedStale, fmt.Sprintf("lag %s%v (%d bytes) > max staleness %v", atLeast(r.lag.atLeast), round(r.lag.seconds), r.lag.bytes, cfg.MaxStaleness)
	case masterOK && slow(r.rtt, master.rtt, cfg.ExclusionFactor, cfg.ExclusionMargin):
		why := fmt.Sprintf("rtt %v > %g × master %v", round(r.rtt), cfg.ExclusionFactor, round(master.rtt))
		if cfg.ExclusionMargin > 0 {
			why += fmt.Sprintf(" + margin %v", cfg.ExclusionMargin)
		}
		return ExcludedSlow, why
	}
	return NotExcluded, ""
}

// electWithin marks in elected the eligible replicas within window of
// best, the fastest eligible RTT, or within 1.5 × window for incumbents
// (so that a replica at the window's edge does not join and leave every
// round), and returns their addresses, sorted.
func electWithin(replicas []nodeInput, excl []Exclusion, elected []bool, best, window time.Duration, incumbents []string) []string {
	var out []string
	for i, r := range replicas {
		limit := window
		if slices.Contains(incumbents, r.addr) {
			limit = window * 3 / 2
		}
		if excl[i] == NotExcluded && r.rtt-best <= limit {
			elected[i] = true
			out = append(out, r.addr)
		}
	}
	slices.Sort(out)
	return out
}

// masterStatus is the master's row: whether its probes fail, and whether
// Nearest (and, with no replica elected, ReplicaPreferred) reads there.
func masterStatus(master nodeInput, res electionResult, window time.Duration) NodeStatus {
	st := status(master, RoleMaster)
	st.Nearest = res.nearestMaster
	switch {
	case !master.healthy && master.err != nil:
		st.Why = fmt.Sprintf("probe failed: %v", master.err)
	case master.samples == 0:
		st.Why = "not probed yet"
	}
	switch {
	case len(res.elected) == 0 && st.Why == "":
		st.Why = "no eligible replica: ReplicaPreferred and Nearest read here"
	case len(res.elected) == 0:
		st.Why += "; no eligible replica: ReplicaPreferred and Nearest read here"
	case res.nearestMaster:
		st.Why = fmt.Sprintf("nearer than every eligible replica by more than %v: Nearest reads here", window)
	}
	return st
}

// replicaStatus is a replica's row as its probes and INFO left it, with
// its exclusion; the election's outcome is for the caller to add.
func replicaStatus(r nodeInput, excl Exclusion, why string) NodeStatus {
	st := status(r, RoleReplica)
	st.LinkKnown, st.LinkUp, st.LastIO = r.linkKnown, r.linkUp, r.lastIO
	st.LagKnown, st.LagBytes, st.Lag, st.LagAtLeast = r.lag.known, r.lag.bytes, r.lag.seconds, r.lag.atLeast
	st.Excluded, st.Why = excl, why
	return st
}

// eligibleWhy explains where an eligible replica with RTT rtt stands
// against best, the fastest eligible RTT, and the window.
func eligibleWhy(rtt time.Duration, elected bool, best, window time.Duration) string {
	switch {
	case !elected:
		return fmt.Sprintf("rtt %v: more than %v above the fastest eligible replica (%v)", round(rtt), window, round(best))
	case rtt == best:
		return fmt.Sprintf("fastest eligible replica (%v)", round(rtt))
	case rtt-best > window:
		return fmt.Sprintf("elected before and within 1.5 × %v of the fastest eligible replica (%v)", window, round(best))
	default:
		return fmt.Sprintf("within %v of the fastest eligible replica (%v)", window, round(best))
	}
}

// slow: the replica's RTT exceeds factor × the master's, and, when a
// margin is set (Config.ExclusionMargin, a noise floor for loopback), the
// master's by more than the margin. The caller applies it only when the
// master's RTT is known.
func slow(replica, master time.Duration, factor float64, margin time.Duration) bool {
	return float64(replica) > factor*float64(master) && replica-master > margin
}

// fallback is where ReadFrom Replica reads when no replica is elected: the
// replicas excluded only for being slow, within the window of the fastest
// of them. Slowness is a comparison with the master, made so that reads
// that may go to the master do; a Replica read may not, and a replica that
// answers, is attached and is fresh serves it better than an error. A
// replica that is unreachable, not probed yet, link-down or stale is never
// handed out: it may not answer, or answer with data the caller bounded.
func fallback(replicas []nodeInput, excl []Exclusion, window time.Duration) []string {
	best := time.Duration(-1)
	for i, r := range replicas {
		if excl[i] == ExcludedSlow && (best < 0 || r.rtt < best) {
			best = r.rtt
		}
	}
	var out []string
	for i, r := range replicas {
		if excl[i] == ExcludedSlow && r.rtt-best <= window {
			out = append(out, r.addr)
		}
	}
	slices.Sort(out)
	return out
}

func status(n nodeInput, role Role) NodeStatus {
	return NodeStatus{
		Addr: n.addr, Role: role,
		RTT: n.rtt, LastRTT: n.last, Samples: n.samples, LastProbe: n.lastAt,
		Healthy: n.healthy, Err: n.err, LastIO: -1,
	}
}

func atLeast(b bool) string {
	if b {
		return "≥ "
	}
	return ""
}

// round shortens a duration for reading: 6.412345ms → 6.41ms.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
