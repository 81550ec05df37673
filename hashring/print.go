package hashring

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// printRing reads every member of the ring (expired ones too) and writes
// the debug listing.
func printRing(ctx context.Context, st *store, w io.Writer) error {
	var bad []string
	s, err := st.readAll(ctx, func(m string, _ error) { bad = append(bad, m) })
	if err != nil {
		return &Error{Op: "print", Step: "read", Key: st.key, Server: serverOf(st.client), Err: err}
	}
	return writeListing(w, s, bad, s.readAt)
}

// writeListing writes the two tables of a snapshot read with its expired
// replicas.
func writeListing(w io.Writer, s *Snapshot, bad []string, now time.Time) error {
	bw := bufio.NewWriter(w)
	line := func(format string, args ...any) {
		fmt.Fprintln(bw, strings.TrimRight(fmt.Sprintf(format, args...), " "))
	}
	delay := func(t time.Time) int64 { return int64(now.Sub(t) / time.Second) }
	pct := func(points uint64) string { return fmt.Sprintf("%6.2f%%", 100*float64(points)/RingSize) }

	type row struct {
		rep     Replica
		points  uint64
		expired bool
	}
	rows := make([]row, 0, len(s.replicas)+len(s.expired))
	var buf [2]Range
	for i, rep := range s.replicas {
		var pts uint64
		for _, rg := range s.replicaRanges(i, buf[:0]) {
			pts += rg.Len()
		}
		rows = append(rows, row{rep: rep, points: pts})
	}
	for _, rep := range s.expired {
		rows = append(rows, row{rep: rep, expired: true})
	}
	slices.SortStableFunc(rows, func(a, b row) int { return compareReplicas(a.rep, b.rep) })

	line("Hash ring %q replicas:", s.key)
	if len(rows) == 0 {
		line("(no replicas)")
	} else {
		line("%-10s %-7s %-7s %s", "Start", "Range", "Delay", "Node")
	}
	type node struct {
		hostname, pid string
		points        uint64
		replicas      int
		delay         int64
		expired       bool
	}
	var nodes []*node
	byID := map[string]*node{}
	for _, r := range rows {
		mark, rng := "", pct(r.points)
		if r.expired {
			mark, rng = "(EXPIRED)", fmt.Sprintf("%7s", "-")
		}
		d := delay(r.rep.Heartbeat)
		line("%10d %s %6ds %s:%s:%s %s", r.rep.Start, rng, d, r.rep.Hostname, r.rep.PID, r.rep.ID, mark)
		nd := byID[r.rep.NodeID()]
		if nd == nil {
			nd = &node{hostname: r.rep.Hostname, pid: r.rep.PID, delay: d}
			byID[r.rep.NodeID()] = nd
			nodes = append(nodes, nd)
		}
		nd.points += r.points
		nd.replicas++
		nd.delay = max(nd.delay, d)
		nd.expired = nd.expired || r.expired
	}

	line("")
	line("Hash ring %q nodes:", s.key)
	if len(nodes) == 0 {
		line("(no nodes)")
	} else {
		line("%-8s %-8s %-7s %-20s %-5s", "Range", "Replicas", "Delay", "Hostname", "PID")
	}
	for _, nd := range nodes {
		mark := ""
		if nd.expired {
			mark = "(EXPIRED)"
		}
		line("%s  %8d %6ds %-20s %-5s %s", pct(nd.points), nd.replicas, nd.delay, nd.hostname, nd.pid, mark)
	}
	if len(bad) > 0 {
		slices.SortFunc(bad, cmp.Compare[string])
		line("")
		line("Hash ring %q malformed members (ignored):", s.key)
		for _, m := range bad {
			line("%q", m)
		}
	}
	return bw.Flush()
}
