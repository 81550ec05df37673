package replica

import (
	"sort"
	"time"
)

// offsetSample is a replication offset of the master and when the prober
// saw it there: first and last (the same unless the master was idle
// across rounds).
type offsetSample struct {
	first, last time.Time
	offset      int64
}

// offsetHistory is what the prober remembers of a master's replication
// offset: one sample per offset seen, oldest first, with strictly
// increasing offsets. An idle master costs no memory: a round that sees
// the same offset again only moves that sample's last time.
type offsetHistory struct {
	samples []offsetSample
}

// History bounds: whichever is reached first.
const (
	historySpan = 10 * time.Minute
	historyMax  = 4096
)

func (h *offsetHistory) add(at time.Time, offset int64) {
	n := len(h.samples)
	switch {
	case n > 0 && offset < h.samples[n-1].offset:
		// The offset went back: a restart or another replication history.
		// Older samples describe another stream.
		h.samples = append(h.samples[:0], offsetSample{at, at, offset})
		return
	case n > 0 && offset == h.samples[n-1].offset:
		if at.After(h.samples[n-1].last) {
			h.samples[n-1].last = at
		}
		return
	}
	h.samples = append(h.samples, offsetSample{at, at, offset})
	drop := 0
	for drop < len(h.samples)-2 && (len(h.samples)-drop > historyMax || at.Sub(h.samples[drop].last) > historySpan) {
		drop++
	}
	if drop > 0 {
		h.samples = append(h.samples[:0], h.samples[drop:]...)
	}
}

// latest is the newest master offset known, and whether there is one.
func (h *offsetHistory) latest() (int64, bool) {
	if len(h.samples) == 0 {
		return 0, false
	}
	return h.samples[len(h.samples)-1].offset, true
}

// lagEstimate is how far a replica is behind its master.
type lagEstimate struct {
	known bool
	// bytes is the newest master offset known minus the replica's offset
	// (at least 0).
	bytes int64
	// seconds is the estimated age of the oldest write the replica lacks
	// (0 when it lacks nothing the prober has seen the master hold).
	seconds time.Duration
	// atLeast: the replica is behind every sample the history holds, so
	// seconds is a lower bound.
	atLeast bool
}

// estimate judges a replica that had applied the stream up to offset at
// time at. The replica lacks the byte after offset. The master wrote it
// after t0, the last time it was seen at an offset m0 ≤ offset, and by t1,
// the first time it was seen at the next offset m1. Writes are assumed
// evenly spread over that span, so the byte is dated
// t0 + (offset+1-m0)/(m1-m0) × (t1-t0), and the lag is at minus that date:
// never less than at-t1 and never more than at-t0, so within one probe
// interval of the truth while the master is probed every round.
func (h *offsetHistory) estimate(offset int64, at time.Time) lagEstimate {
	n := len(h.samples)
	if n == 0 {
		return lagEstimate{}
	}
	est := lagEstimate{known: true}
	newest := h.samples[n-1].offset
	if offset >= newest {
		return est
	}
	est.bytes = newest - offset
	k := sort.Search(n, func(i int) bool { return h.samples[i].offset > offset })
	if k == 0 {
		est.atLeast = true
		est.seconds = max(0, at.Sub(h.samples[0].first))
		return est
	}
	s0, s1 := h.samples[k-1], h.samples[k]
	frac := float64(offset+1-s0.offset) / float64(s1.offset-s0.offset)
	written := s0.last.Add(time.Duration(frac * float64(s1.first.Sub(s0.last))))
	est.seconds = max(0, at.Sub(written))
	return est
}
