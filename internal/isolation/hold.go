package isolation

import "time"

// Hold is a hold of a master's writes: the master is cut off, or
// suspected cut off, from its replicas and from those who would replace
// it, while it still answers the client.
type Hold struct {
	// Since is when the hold began; Reason says what was seen.
	Since  time.Time
	Reason string
	// Suspect: those who would replace the master have not (yet) said
	// they cannot reach it; see Decide.
	Suspect bool
}

// Signs is what one round saw, as each client judges it from its own
// topology's witnesses (the sentinels; the cluster's other masters).
type Signs struct {
	// Suspicion: a first sign that the replicas do not receive the
	// master's stream (their stall, or a failed replication probe with a
	// witness that cannot reach the master).
	Suspicion bool
	// Confirmed: enough witnesses to replace the master cannot reach it,
	// and its replicas do not receive its stream.
	Confirmed bool
	// Vouched: enough witnesses reached the master since the current
	// hold began that it cannot be replaced without them.
	Vouched bool
	// Expired: the current suspicion has lasted as long as it may
	// without being confirmed or cleared.
	Expired bool
	// Receiving: the replicas are seen receiving the stream again; the
	// episode is over.
	Receiving bool
	// Reason says what was seen, for a hold's Reason.
	Reason string
}

// Decide returns the hold that follows cur (nil: none) given one round's
// signs at now. cleared says the witnesses already vouched for the master
// during this episode: no new hold on suspicion until the replicas are
// seen receiving again, which ends the episode; the second result is its
// new value.
//
// Writes are held on the first suspicion; such a hold ends as soon as the
// witnesses vouch for the master (no failover, no loss: only a replica
// problem, which durable writes are for), when the signs go, or when it
// expires. A confirmed hold stands as long as the round confirms it,
// keeping when it began.
func Decide(cur *Hold, cleared bool, now time.Time, s Signs) (*Hold, bool) {
	if s.Receiving {
		cleared = false
	}
	if !s.Suspicion && !s.Confirmed {
		return nil, cleared
	}
	switch {
	case s.Confirmed:
		since := now
		if cur != nil {
			since = cur.Since
		}
		return &Hold{Since: since, Reason: s.Reason}, cleared
	case cleared:
		return nil, true
	case cur == nil:
		return &Hold{Since: now, Reason: s.Reason, Suspect: true}, false
	case s.Vouched, s.Expired:
		return nil, true
	}
	return &Hold{Since: cur.Since, Reason: s.Reason, Suspect: true}, false
}
