//go:build unix

package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/sentinel"
	"github.com/rediskit/rediskit/timeline"
)

func TestHoldWindows(t *testing.T) {
	ev := func(ms int, name string) timeline.Event {
		return timeline.Event{At: time.Duration(ms) * time.Millisecond, Name: name}
	}
	win := func(from, to int) timeline.Window {
		return timeline.Window{From: time.Duration(from) * time.Millisecond, To: time.Duration(to) * time.Millisecond, Label: "writes held"}
	}
	for _, tc := range []struct {
		name   string
		events []timeline.Event
		want   []timeline.Window
	}{
		{"none", nil, nil},
		{"sentinel: held from the announcement to the hold's end",
			[]timeline.Event{ev(2000, "failover requested"), ev(2100, "failover started"), ev(2300, "master changed"), ev(2300, "failover hold ended")},
			[]timeline.Window{win(2100, 2300)}},
		{"cluster: a failing master until its slots move",
			[]timeline.Event{ev(1000, "master failing"), ev(1800, "master changed")}, []timeline.Window{win(1000, 1800)}},
		{"cluster: a failing master that recovers", []timeline.Event{ev(1000, "master failing"), ev(1200, "master recovered")},
			[]timeline.Window{win(1000, 1200)}},
		{"a switch without a hold opens none", []timeline.Event{ev(2111, "master changed")}, nil},
		{"two failovers", []timeline.Event{ev(100, "failover started"), ev(300, "failover hold ended"), ev(900, "failover started"), ev(950, "master changed")},
			[]timeline.Window{win(100, 300), win(900, 950)}},
		{"still held at the end runs to the end", []timeline.Event{ev(5000, "failover started")}, []timeline.Window{win(5000, 6000)}},
	} {
		got := holdWindows(tc.events, 6*time.Second)
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestFigureFlags(t *testing.T) {
	for _, tc := range []struct {
		svg, png, want string // want: "" or part of the usage error
	}{
		{"", "", ""},
		{"a.svg", "", ""},
		{"", "dir/a.PNG", ""},
		{"a.svg", "b.png", ""},
		{"a.png", "", "--svg a.png: the file name must end in .svg"},
		{"", "a.svg", "--png a.svg: the file name must end in .png"},
		{"timeline", "", "--svg timeline: the file name must end in .svg"},
	} {
		err := figureFlags(tc.svg, tc.png)
		var ue usageError
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("figureFlags(%q, %q): %v", tc.svg, tc.png, err)
		case tc.want != "" && (!errors.As(err, &ue) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("figureFlags(%q, %q): %v, want a usage error with %q", tc.svg, tc.png, err, tc.want)
		}
	}
}

// The drill's record as a figure: every op by its node and outcome, a
// write's loss and duplication from the list on the master, the events
// and the hold between them.
func TestDrillFigure(t *testing.T) {
	began := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return began.Add(time.Duration(ms) * time.Millisecond) }
	cfg, err := redisurl.Parse("redis+sentinel://:" + dataSecret + "@127.0.0.1:26379/mymaster")
	if err != nil {
		t.Fatal(err)
	}
	d := &drill{t: &target{cfg: cfg}, began: began, present: map[string]int{"0-0": 1, "0-2": 2, "0-3": 1}}
	d.rep.DurationS = 3
	d.writes = []opRecord{
		{id: "0-0", end: at(100), node: "m1"},
		{id: "0-1", end: at(1200), node: "m1"}, // acknowledged, not on the master: lost
		{id: "0-2", end: at(1500), node: "m2"}, // twice on the master
		{id: "0-3", end: at(1600), node: "m1", err: &sentinel.MasterChangedError{}},
		{id: "0-4", end: at(1700), err: errors.New("boom")}, // failed, not applied
	}
	d.reads = []opRecord{{end: at(150), node: "r1"}}
	d.rep.Events = []drillEvent{{AtS: 1.1, Event: "failover started", Detail: "x"}, {AtS: 1.4, Event: "master changed", Detail: "master changed master=m2 old=m1"}}
	fig := d.figure()
	want := []timeline.Op{
		{At: 100 * time.Millisecond, Kind: timeline.KindWrite, Node: "m1"},
		{At: 1200 * time.Millisecond, Kind: timeline.KindWrite, Node: "m1", Lost: true},
		{At: 1500 * time.Millisecond, Kind: timeline.KindWrite, Node: "m2", Duplicated: true},
		{At: 1600 * time.Millisecond, Kind: timeline.KindWrite, Node: "m1", Err: "master changed"},
		{At: 1700 * time.Millisecond, Kind: timeline.KindWrite, Err: "other"},
		{At: 150 * time.Millisecond, Kind: timeline.KindRead, Node: "r1"},
	}
	if fmt.Sprint(fig.Ops) != fmt.Sprint(want) {
		t.Errorf("ops\n%v, want\n%v", fig.Ops, want)
	}
	assertNoSecrets(t, fig.Run.Title)
	if fig.Length != 3*time.Second || !fig.Run.Date.Equal(began) || !strings.HasPrefix(fig.Run.Title, "rediskit drill on ") {
		t.Errorf("length %v, run %+v", fig.Length, fig.Run)
	}
	wantEvents := []timeline.Event{{At: 1100 * time.Millisecond, Name: "failover started", Detail: "x"}, {At: 1400 * time.Millisecond, Name: "master changed", Detail: "master=m2 old=m1"}}
	if fmt.Sprint(fig.Events) != fmt.Sprint(wantEvents) {
		t.Errorf("events %v, want %v", fig.Events, wantEvents)
	}
	if w := fig.Windows; len(w) != 1 || w[0].From != 1100*time.Millisecond || w[0].To != 1400*time.Millisecond {
		t.Errorf("windows %v", w)
	}
	// An unread list (the check failed) marks nothing lost.
	d.present = nil
	for _, op := range d.figure().Ops {
		if op.Lost || op.Duplicated {
			t.Errorf("op %+v marked without the list", op)
		}
	}
}
