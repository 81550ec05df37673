package main

import (
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/timeline"
)

// maxFigureRounds bounds the rounds a probe keeps for its --svg and --png
// figures: an hour at the default 2 s interval. A longer --watch keeps the
// last ones: the figure is of the recent past, and memory stays bounded.
const maxFigureRounds = 1800

// probeRecord is what probe --svg / --png draws: per election (one, or a
// cluster's one per shard) every round's RTT table since the probe
// started, and the election's changes.
type probeRecord struct {
	start  time.Time
	probes []*timeline.Probe
}

// newProbeRecord records elections titled titles, or returns nil when no
// figure was asked for.
func newProbeRecord(f *probeFlags, titles ...string) *probeRecord {
	if f.svg == "" && f.png == "" {
		return nil
	}
	r := &probeRecord{start: time.Now()}
	for _, title := range titles {
		run := timeline.ThisRun(title)
		run.Date = r.start
		r.probes = append(r.probes, &timeline.Probe{Run: run})
	}
	return r
}

// round adds election i's table at at.
func (r *probeRecord) round(i int, at time.Time, table []replica.NodeStatus) {
	if r == nil {
		return
	}
	p := r.probes[i]
	rd := timeline.Round{At: at.Sub(r.start)}
	for _, n := range table {
		// Marked: where reads go, the elected replica(s) and a master
		// Nearest reads use.
		rd.Nodes = append(rd.Nodes, timeline.NodeRTT{Addr: n.Addr, Role: string(n.Role), RTT: n.RTT, Healthy: n.Healthy,
			Elected: n.Elected || n.Nearest})
	}
	if len(p.Rounds) == maxFigureRounds {
		p.Rounds = append(p.Rounds[:0], p.Rounds[1:]...)
	}
	p.Rounds = append(p.Rounds, rd)
}

// change adds one of election i's changes.
func (r *probeRecord) change(i int, ev replica.Event) {
	if r == nil {
		return
	}
	p := r.probes[i]
	if len(p.Events) == maxFigureRounds {
		p.Events = append(p.Events[:0], p.Events[1:]...)
	}
	p.Events = append(p.Events, timeline.Event{At: ev.Time.Sub(r.start), Name: string(ev.Reason),
		Detail: fmt.Sprintf("elected %s (was %s)", addrList(ev.Elected), addrList(ev.Previous))})
}

// write draws the record in the --svg and --png files (a cluster's
// shards side by side) and says so on out unless the output is JSON.
func (r *probeRecord) write(out io.Writer, f *probeFlags) error {
	if r == nil {
		return nil
	}
	if !slices.ContainsFunc(r.probes, func(p *timeline.Probe) bool { return len(p.Rounds) > 0 }) {
		return nil // no round completed: nothing to draw (the probe's error says why)
	}
	var fig timeline.Figure = r.probes[0]
	if len(r.probes) > 1 {
		figs := make([]timeline.Figure, len(r.probes))
		for i, p := range r.probes {
			figs[i] = p
		}
		fig = timeline.SideBySide(figs...)
	}
	for _, path := range []string{f.svg, f.png} {
		if path == "" {
			continue
		}
		if err := timeline.WriteFile(path, fig); err != nil {
			return fmt.Errorf("figure: %w", err)
		}
		if !f.json {
			fmt.Fprintf(out, "RTT per node drawn in %s\n", path)
		}
	}
	return nil
}
