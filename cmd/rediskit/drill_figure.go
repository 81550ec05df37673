package main

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/timeline"
)

// servedBy is where the hook of the node client that runs an operation
// writes that node's address: the drill's timeline draws each operation
// by the node that served it. A command re-sent elsewhere (a read re-run
// on another replica) is recorded where it went last, which is where its
// reply came from.
type servedBy struct{ addr atomic.Pointer[string] }

type servedByKey struct{}

// withServedBy returns ctx carrying a fresh servedBy for one operation.
func withServedBy(ctx context.Context) (context.Context, *servedBy) {
	s := &servedBy{}
	return context.WithValue(ctx, servedByKey{}, s), s
}

// node is the address recorded ("": no node client ran the operation).
func (s *servedBy) node() string {
	if p := s.addr.Load(); p != nil {
		return *p
	}
	return ""
}

// servedHook, on one node's go-redis client, records that node on the
// servedBy of each command and pipeline it runs.
type servedHook struct{ addr string }

func (h servedHook) note(ctx context.Context) {
	if s, ok := ctx.Value(servedByKey{}).(*servedBy); ok {
		s.addr.Store(&h.addr)
	}
}

func (h servedHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h servedHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(ctx)
		return next(ctx, cmd)
	}
}

func (h servedHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.note(ctx)
		return next(ctx, cmds)
	}
}

// tagServingNodes adds a servedHook to the client of every node c sends
// the caller's work to: the Sentinel and cluster clients' node clients,
// present and future (OnNewNode), or a plain client itself.
func tagServingNodes(c redis.UniversalClient) {
	switch c := c.(type) {
	case interface{ OnNewNode(func(*redis.Client)) }:
		c.OnNewNode(func(rc *redis.Client) { rc.AddHook(servedHook{addr: rc.Options().Addr}) })
	case *redis.Client:
		c.AddHook(servedHook{addr: c.Options().Addr})
	}
}

// holdOpens and holdCloses name the events of the drill's timeline that
// open and close the client's write hold during a failover: the Sentinel
// client's (held from the leader's announcement of the replica it
// promotes until the switch) and the cluster client's (held while a
// shard's master is failing, until its slots have a new master or it
// recovers).
func holdOpens(event string) bool { return event == "failover started" || event == "master failing" }

func holdCloses(event string) bool {
	return event == "failover hold ended" || event == "master changed" || event == "master recovered"
}

// holdWindows pairs the events that open and close the client's write
// hold; a hold still open at the end runs to the end of the load.
func holdWindows(events []timeline.Event, end time.Duration) []timeline.Window {
	var out []timeline.Window
	open := time.Duration(-1)
	for _, ev := range events {
		switch {
		case holdOpens(ev.Name) && open < 0:
			open = ev.At
		case holdCloses(ev.Name) && open >= 0:
			out = append(out, timeline.Window{From: open, To: ev.At, Label: "writes held"})
			open = -1
		}
	}
	if open >= 0 {
		out = append(out, timeline.Window{From: open, To: max(end, open), Label: "writes held"})
	}
	return out
}

// figure is the drill's record as a timeline: every write and read by
// the node that served it and its outcome (a write's lost or duplicated
// from the check on the master), the events the report lists, and the
// client's write holds shaded. Call it after verify, with the client's
// events sorted (printTimeline).
func (d *drill) figure() *timeline.Drill {
	run := timeline.ThisRun(fmt.Sprintf("rediskit drill on %s", d.t))
	run.Date = d.began
	length := time.Duration(d.rep.DurationS * float64(time.Second))
	fig := &timeline.Drill{Run: run, Length: length}
	add := func(kind string, ops []opRecord) {
		for _, op := range ops {
			o := timeline.Op{At: op.end.Sub(d.began), Kind: kind, Node: op.node}
			if op.err != nil {
				o.Err = errKind(op.err)
			}
			if kind == timeline.KindWrite && d.present != nil {
				n := d.present[op.id]
				o.Lost = op.err == nil && n == 0
				o.Duplicated = n > 1
			}
			fig.Ops = append(fig.Ops, o)
		}
	}
	d.opsMu.Lock()
	add(timeline.KindWrite, d.writes)
	add(timeline.KindRead, d.reads)
	d.opsMu.Unlock()
	d.evMu.Lock()
	for _, ev := range d.rep.Events {
		// The client's events' details begin with their name, which the
		// figure's key prints already.
		fig.Events = append(fig.Events, timeline.Event{At: time.Duration(ev.AtS * float64(time.Second)).Round(time.Microsecond),
			Name: ev.Event, Detail: strings.TrimPrefix(ev.Detail, ev.Event+" ")})
	}
	d.evMu.Unlock()
	fig.Windows = holdWindows(fig.Events, length)
	return fig
}

// drawFigures writes the timeline to the --svg and --png files; it
// returns the failures (a file that could not be written).
func (d *drill) drawFigures() []string {
	if d.f.svg == "" && d.f.png == "" {
		return nil
	}
	fig := d.figure()
	var failures []string
	for _, path := range []string{d.f.svg, d.f.png} {
		if path == "" {
			continue
		}
		if err := timeline.WriteFile(path, fig); err != nil {
			d.text("figure: %v\n", err)
			failures = append(failures, "figure: "+err.Error())
			continue
		}
		d.rep.Figures = append(d.rep.Figures, path)
		d.text("timeline drawn in %s\n", path)
	}
	return failures
}

// figureFlags checks the --svg and --png files' names before anything
// runs: a drill's result is not lost to a typo at its end.
func figureFlags(svg, png string) error {
	for _, f := range []struct {
		flag, path string
		want       timeline.Format
	}{{"--svg", svg, timeline.SVG}, {"--png", png, timeline.PNG}} {
		if f.path == "" {
			continue
		}
		if got, err := timeline.FormatOf(f.path); err != nil || got != f.want {
			return usagef("%s %s: the file name must end in .%s", f.flag, f.path, strings.TrimPrefix(f.flag, "--"))
		}
	}
	return nil
}
