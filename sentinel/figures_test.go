package sentinel

import (
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/timeline"
)

// figuresDir is where TestFailoverUnderLoad writes its figures (make
// figures passes the repository's docs/); empty: it writes none, and still
// records and checks the timelines they would draw.
var figuresDir = flag.String("figures", "", "write TestFailoverUnderLoad's timelines as SVG and PNG files into this directory")

// readKeyPrefix starts the key of every GET the load's readers send: each
// read has a key of its own ("probe:<reader>-<n>", never set, so a read
// costs what a GET of one fixed missing key does), which servedBy finds in
// what a client writes and tags with the node it went to.
const readKeyPrefix = "probe:"

// opRecord is one operation of a load run as the goroutine that sent it
// saw it end.
type opRecord struct {
	id   string // the op id (a write) or the key (a read)
	kind string // timeline.KindWrite or timeline.KindRead
	at   time.Time
	// err is errKind of the error, "" for an acknowledged write or an
	// answered read (redis.Nil included); replied: the error is a server's
	// reply, so the node the command went to answered it.
	err     string
	replied bool
}

// loadDrill is a load run's timeline: ops, the lab's failover commands
// and agreements, the client's own hold and switch events, and its write
// hold per failover shaded. present counts each op id in the final
// master's list; events are the client's Observer's.
func loadDrill(run timeline.Run, start, end time.Time, ops []opRecord, present map[string]int, served *servedBy, windows []failoverWindow, events []Event) *timeline.Drill {
	d := &timeline.Drill{Run: run, Length: end.Sub(start)}
	for _, o := range ops {
		op := timeline.Op{At: o.at.Sub(start), Kind: o.kind, Err: o.err}
		if o.err == "" || o.replied {
			op.Node = served.get(o.id)
		}
		if o.kind == timeline.KindWrite {
			op.Lost = o.err == "" && present[o.id] == 0
			op.Duplicated = present[o.id] > 1
		}
		d.Ops = append(d.Ops, op)
	}
	slices.SortStableFunc(d.Ops, func(a, b timeline.Op) int { return int(a.At - b.At) })
	for _, w := range windows {
		d.Events = append(d.Events,
			timeline.Event{At: w.requested.Sub(start), Name: "failover requested", Detail: w.oldMaster + " → " + w.newMaster},
			timeline.Event{At: w.agreed.Sub(start), Name: "sentinels agreed", Detail: w.newMaster})
	}
	for _, ev := range events {
		at := ev.Time.Sub(start)
		if at < 0 || at > d.Length {
			continue // discovery before the load began, the close after
		}
		switch ev.Kind {
		case EventFailoverStarted:
			d.Events = append(d.Events, timeline.Event{At: at, Name: ev.Kind.String(), Detail: "writes held, promoting " + ev.Candidate})
		case EventMasterChanged:
			d.Events = append(d.Events, timeline.Event{At: at, Name: ev.Kind.String(), Detail: ev.OldMaster + " → " + ev.Master})
		}
	}
	slices.SortStableFunc(d.Events, func(a, b timeline.Event) int { return int(a.At - b.At) })
	// The write hold of each failover: from the client's first
	// EventFailoverStarted after the command to its first
	// EventMasterChanged, both before the failover settled (the times
	// runFailoverLoad logs), when the switch came after the hold.
	for _, w := range windows {
		var held, switched time.Time
		for _, ev := range events {
			if ev.Time.Before(w.requested) || !ev.Time.Before(w.settled) {
				continue
			}
			if ev.Kind == EventFailoverStarted && held.IsZero() {
				held = ev.Time
			}
			if ev.Kind == EventMasterChanged && switched.IsZero() {
				switched = ev.Time
			}
		}
		if !held.IsZero() && !switched.IsZero() && !switched.Before(held) {
			d.Windows = append(d.Windows, timeline.Window{From: held.Sub(start), To: switched.Sub(start), Label: "writes held"})
		}
	}
	return d
}

// checkDrill compares a run's timeline with its report: the figures must
// count what the tables count, and every acknowledged write and answered
// read must name the node that served it.
func checkDrill(t *testing.T, rep *loadReport, d *timeline.Drill, present map[string]int, holds int) {
	t.Helper()
	var writes, reads, acked, lost, dups, noNode, outside int
	writeErrs, readErrs := map[string]int{}, map[string]int{}
	for _, op := range d.Ops {
		if op.At < 0 || op.At > d.Length {
			outside++
		}
		switch op.Kind {
		case timeline.KindWrite:
			writes++
			if op.Err != timeline.OutcomeOK {
				writeErrs[op.Err]++
				continue
			}
			acked++
		case timeline.KindRead:
			reads++
			if op.Err != timeline.OutcomeOK {
				readErrs[op.Err]++
				continue
			}
		}
		if op.Node == "" {
			noNode++
		}
		if op.Lost {
			lost++
		}
	}
	for _, op := range d.Ops {
		if op.Duplicated {
			dups++
		}
	}
	// Every id the final list holds more than once was sent by exactly
	// one op (ids are unique), which the timeline marks.
	dupIDs := 0
	for _, n := range present {
		if n > 1 {
			dupIDs++
		}
	}
	var problems []string
	check := func(what string, got, want any) {
		if fmt.Sprint(got) != fmt.Sprint(want) {
			problems = append(problems, fmt.Sprintf("%s %v, the report %v", what, got, want))
		}
	}
	check("writes", writes, rep.writes)
	check("reads", reads, rep.reads)
	check("acknowledged", acked, rep.acked)
	check("lost", lost, rep.lost)
	check("ops marked duplicated", dups, dupIDs)
	check("write errors", errSummary(writeErrs), errSummary(rep.writeErrs))
	check("read errors", errSummary(readErrs), errSummary(rep.readErrs))
	check("served ops without a node", noNode, 0)
	check("ops outside the run", outside, 0)
	check("holds shaded", len(d.Windows), holds)
	requested := 0
	for _, ev := range d.Events {
		if ev.Name == "failover requested" {
			requested++
		}
	}
	check("failover markers", requested, len(rep.windows))
	if len(problems) > 0 {
		t.Errorf("%s: the timeline disagrees with the report: %s", rep.name, strings.Join(problems, "; "))
	}
}

// zoomDrill is the part of d from from to to, re-based to start at from:
// its ops and events inside, and its windows clipped to it.
func zoomDrill(d *timeline.Drill, title string, from, to time.Duration) *timeline.Drill {
	z := &timeline.Drill{Run: d.Run, Length: to - from, Bucket: d.Bucket}
	z.Run.Title = title
	for _, op := range d.Ops {
		if op.At >= from && op.At < to {
			op.At -= from
			z.Ops = append(z.Ops, op)
		}
	}
	for _, ev := range d.Events {
		if ev.At >= from && ev.At < to {
			ev.At -= from
			z.Events = append(z.Events, ev)
		}
	}
	for _, w := range d.Windows {
		if w.To > from && w.From < to {
			z.Windows = append(z.Windows, timeline.Window{From: max(w.From, from) - from, To: min(w.To, to) - from, Label: w.Label})
		}
	}
	return z
}

// TestZoomDrill: a zoom keeps what falls inside, re-based, and clips the
// windows that cross its edges.
func TestZoomDrill(t *testing.T) {
	s := time.Second
	d := &timeline.Drill{Length: 10 * s, Bucket: 100 * time.Millisecond,
		Ops: []timeline.Op{{At: s, Kind: timeline.KindWrite}, {At: 2 * s, Kind: timeline.KindWrite, Node: "a"},
			{At: 4 * s, Kind: timeline.KindRead, Err: "timeout"}, {At: 5 * s, Kind: timeline.KindWrite}},
		Events:  []timeline.Event{{At: 2 * s, Name: "in"}, {At: 5 * s, Name: "at the end"}, {At: 9 * s, Name: "out"}},
		Windows: []timeline.Window{{From: s, To: 3 * s, Label: "crossing"}, {From: 3 * s, To: 4 * s, Label: "inside"}, {From: 6 * s, To: 7 * s, Label: "out"}},
	}
	tests := []struct {
		name     string
		from, to time.Duration
		want     timeline.Drill
	}{
		{"middle", 2 * s, 5 * s, timeline.Drill{Length: 3 * s, Bucket: 100 * time.Millisecond,
			Ops:     []timeline.Op{{At: 0, Kind: timeline.KindWrite, Node: "a"}, {At: 2 * s, Kind: timeline.KindRead, Err: "timeout"}},
			Events:  []timeline.Event{{At: 0, Name: "in"}},
			Windows: []timeline.Window{{From: 0, To: s, Label: "crossing"}, {From: s, To: 2 * s, Label: "inside"}}}},
		{"empty", 20 * s, 21 * s, timeline.Drill{Length: s, Bucket: 100 * time.Millisecond}},
	}
	for _, tt := range tests {
		got := zoomDrill(d, "zoomed", tt.from, tt.to)
		tt.want.Run.Title = "zoomed"
		if fmt.Sprintf("%+v", *got) != fmt.Sprintf("%+v", tt.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", tt.name, *got, tt.want)
		}
	}
}

// writeLoadFigures writes TestFailoverUnderLoad's figures: rediskit's
// run and go-redis's side by side, the whole run (failover-under-load) and
// from 1 s before to 3 s after each run's first failover command
// (failover-under-load-zoom).
func writeLoadFigures(t *testing.T, ours, theirs *loadReport) {
	t.Helper()
	writeFigures(t, "failover-under-load", timeline.SideBySide(ours.drill, theirs.drill))
	var zoomed []timeline.Figure
	for _, r := range []*loadReport{ours, theirs} {
		at, ok := firstEvent(r.drill, "failover requested")
		if !ok {
			t.Fatalf("%s: no failover in the timeline", r.name)
		}
		zoomed = append(zoomed, zoomDrill(r.drill, r.name+", the first failover", at-time.Second, at+3*time.Second))
	}
	writeFigures(t, "failover-under-load-zoom", timeline.SideBySide(zoomed...))
}

// firstEvent is when d's first event called name happened.
func firstEvent(d *timeline.Drill, name string) (time.Duration, bool) {
	for _, ev := range d.Events {
		if ev.Name == name {
			return ev.At, true
		}
	}
	return 0, false
}

// writeFigures writes fig as name.svg and name.png into *figuresDir.
func writeFigures(t *testing.T, name string, fig timeline.Figure) {
	t.Helper()
	for _, ext := range []string{".svg", ".png"} {
		path := filepath.Join(*figuresDir, name+ext)
		if err := timeline.WriteFile(path, fig); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %s", path)
	}
}
