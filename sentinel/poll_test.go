package sentinel

import (
	"errors"
	"testing"
	"time"
)

func TestIsolationDecision(t *testing.T) {
	now := time.Unix(1000, 0)
	const m = "10.0.0.1:6379"
	up := func(s string) masterView {
		return masterView{sentinel: s, addr: m, flags: "master", quorum: 2, lastOK: 100 * time.Millisecond}
	}
	pending := func(s string, d time.Duration) masterView {
		v := up(s)
		v.lastPingSent, v.lastOK = d, time.Second+d
		return v
	}
	flagged := func(s, flags string) masterView { v := up(s); v.flags = flags; return v }
	ok := replicationProbe{ran: true, want: 2, acked: 2}
	failed := replicationProbe{ran: true, want: 2, acked: 0}
	stalled := replicationStall{Watched: 2, Stalled: 2}
	suspect := &isolationHold{Since: now.Add(-300 * time.Millisecond), Suspect: true}
	tests := []struct {
		name        string
		cur         *isolationHold
		cleared     bool
		in          isolationInput
		held        bool
		suspect     bool
		wantCleared bool
	}{
		{name: "every sentinel reaches the master",
			in: isolationInput{views: []masterView{up("a"), up("b"), up("c")}}},
		{name: "a PING pending within the expected round trip is no sign",
			in: isolationInput{views: []masterView{pending("a", 40*time.Millisecond), up("b"), up("c")}, probe: failed}},
		{name: "the expected round trip includes the master's",
			in: isolationInput{views: []masterView{pending("a", 300*time.Millisecond), up("b"), up("c")}, masterRTT: 400 * time.Millisecond, probe: failed}},
		{name: "one sentinel lost the master, the replicas confirm: no hold",
			in: isolationInput{views: []masterView{pending("a", 200*time.Millisecond), up("b"), up("c")}, probe: ok}},
		{name: "one sentinel lost the master, the replicas do not confirm: held on suspicion",
			in:   isolationInput{views: []masterView{pending("a", 200*time.Millisecond), up("b"), up("c")}, probe: failed, now: now},
			held: true, suspect: true},
		{name: "the replicas stopped receiving, every sentinel reaches the master: held on suspicion",
			in:   isolationInput{views: []masterView{up("a"), up("b"), up("c")}, stall: stalled, now: now},
			held: true, suspect: true},
		{name: "one replica of two stalled: no hold",
			in: isolationInput{views: []masterView{up("a"), up("b"), up("c")}, stall: replicationStall{Watched: 2, Stalled: 1}}},
		{name: "a quorum cannot reach it and the replicas do not receive: held, confirmed",
			in: isolationInput{views: []masterView{pending("a", 200*time.Millisecond), flagged("b", "master,s_down"), up("c")},
				stall: stalled, now: now},
			held: true},
		{name: "a quorum, the probe not allowed: held, confirmed",
			in: isolationInput{views: []masterView{flagged("a", "master,disconnected"), flagged("b", "master,s_down"), up("c")},
				probe: replicationProbe{ran: true, want: 2, noPerm: true}, now: now},
			held: true},
		{name: "a quorum, but the replicas confirm: no hold (the +selected-slave hold covers the promotion)",
			in: isolationInput{views: []masterView{flagged("a", "master,s_down"), flagged("b", "master,s_down"), up("c")}, probe: ok}},
		{name: "the client cannot reach the master either: no hold (failures take over)",
			in: isolationInput{views: []masterView{flagged("a", "master,s_down"), up("b"), up("c")},
				probe: replicationProbe{ran: true, want: 2, err: errors.New("i/o timeout")}}},
		{name: "suspicion vouched for by a quorum (PINGs answered since): lifted, cleared",
			cur:         suspect,
			in:          isolationInput{views: []masterView{up("a"), up("b"), up("c")}, stall: stalled, now: now},
			wantCleared: true},
		{name: "suspicion, the sentinels not heard since: kept",
			cur: suspect,
			in: isolationInput{views: []masterView{pending("a", 30*time.Millisecond), pending("b", 20*time.Millisecond), up("c")},
				stall: stalled, now: now},
			held: true, suspect: true},
		{name: "cleared: no new suspicion while the stall lasts",
			cleared:     true,
			in:          isolationInput{views: []masterView{up("a"), up("b"), up("c")}, stall: stalled, now: now},
			wantCleared: true},
		{name: "cleared, but now a quorum cannot reach the master: held",
			cleared: true,
			in: isolationInput{views: []masterView{flagged("a", "master,s_down"), flagged("b", "master,s_down"), up("c")},
				stall: stalled, now: now},
			held: true, wantCleared: true},
		{name: "the signs went: lifted",
			cur: suspect,
			in:  isolationInput{views: []masterView{up("a"), up("b"), up("c")}, now: now}},
		{name: "cleared, the replicas' links down (not watched): still cleared, a slow PING holds nothing",
			cleared: true,
			in: isolationInput{views: []masterView{pending("a", 200*time.Millisecond), up("b"), up("c")}, probe: failed,
				stall: replicationStall{}, now: now},
			wantCleared: true},
		{name: "cleared, the replicas receiving again: the episode is over",
			cleared: true,
			in:      isolationInput{views: []masterView{up("a"), up("b"), up("c")}, stall: replicationStall{Watched: 2}, now: now}},
		{name: "suspicion no sentinel answers, past suspectHoldMax: lifted",
			cur: &isolationHold{Since: now.Add(-suspectHoldMax), Suspect: true},
			in: isolationInput{views: []masterView{{sentinel: "a", err: errors.New("down")}, {sentinel: "b", err: errors.New("down")}},
				stall: stalled, now: now},
			wantCleared: true},
		{name: "sentinels naming another master say nothing about this one",
			in: isolationInput{views: []masterView{{sentinel: "a", addr: "10.0.0.2:6379", flags: "master,s_down", quorum: 2}}, probe: failed}},
	}
	for _, tt := range tests {
		tt.in.master = m
		if tt.in.now.IsZero() {
			tt.in.now = now
		}
		got, cleared := isolationDecision(tt.cur, tt.cleared, tt.in)
		if (got != nil) != tt.held || (got != nil && got.Suspect != tt.suspect) || cleared != tt.wantCleared {
			t.Errorf("%s: hold %+v cleared %v; want held %v suspect %v cleared %v", tt.name, got, cleared, tt.held, tt.suspect, tt.wantCleared)
			continue
		}
		if got != nil && got.Reason == "" {
			t.Errorf("%s: a hold without a reason", tt.name)
		}
		if got != nil && tt.cur != nil && !got.Since.Equal(tt.cur.Since) {
			t.Errorf("%s: a continued hold starts at %v, want %v", tt.name, got.Since, tt.cur.Since)
		}
	}
}

// Whatever the poll saw, a hold needs a sign that the replicas do not
// receive the master's stream, keeps the start of the hold it continues,
// and is confirmed only with a quorum of sentinels that cannot reach the
// master.
func FuzzIsolationDecision(f *testing.F) {
	f.Add(uint8(0b101), int64(200), int64(1200), uint8(2), uint8(2), uint8(2), uint8(0), false, true, int64(300))
	f.Add(uint8(0), int64(0), int64(100), uint8(0), uint8(2), uint8(2), uint8(2), true, false, int64(0))
	f.Fuzz(func(t *testing.T, flags uint8, pendingMs, okMs int64, quorum, want, acked, stalled uint8, cleared, hasCur bool, sinceMs int64) {
		now := time.Unix(1000, 0)
		const m = "m:1"
		var views []masterView
		for i := range 3 {
			v := masterView{sentinel: string(rune('a' + i)), addr: m, flags: "master", quorum: int(quorum % 4),
				lastPingSent: time.Duration(pendingMs%5000) * time.Millisecond, lastOK: time.Duration(okMs%5000) * time.Millisecond}
			if flags&(1<<i) != 0 {
				v.flags = "master,s_down"
			}
			if flags&(1<<(i+3)) != 0 {
				v.err = errors.New("down")
			}
			views = append(views, v)
		}
		in := isolationInput{views: views, master: m, now: now,
			probe: replicationProbe{ran: want > 0, want: int(want % 4), acked: int(acked % 4), noPerm: flags&0x40 != 0},
			stall: replicationStall{Watched: 2, Stalled: int(stalled % 3)}}
		var cur *isolationHold
		if hasCur {
			cur = &isolationHold{Since: now.Add(-time.Duration(uint64(sinceMs)%10000) * time.Millisecond), Suspect: true}
		}
		got, _ := isolationDecision(cur, cleared, in)
		if got == nil {
			return
		}
		probeFailed := in.probe.ran && !in.probe.noPerm && in.probe.acked < in.probe.want
		if !in.stall.All() && !probeFailed && !in.probe.noPerm {
			t.Fatalf("held (%+v) with every replica receiving and confirming", got)
		}
		if cur != nil && !got.Since.Equal(cur.Since) {
			t.Fatalf("the hold restarted at %v, was %v", got.Since, cur.Since)
		}
		if got.Since.After(now) || got.Reason == "" {
			t.Fatalf("hold %+v", got)
		}
	})
}

func TestParseMasterView(t *testing.T) {
	v := parseMasterView("s1", map[string]string{"ip": "10.0.0.1", "port": "6379", "flags": "master,s_down",
		"config-epoch": "7", "last-ping-sent": "250", "last-ok-ping-reply": "1250", "quorum": "2"})
	want := masterView{sentinel: "s1", addr: "10.0.0.1:6379", flags: "master,s_down", epoch: 7,
		lastPingSent: 250 * time.Millisecond, lastOK: 1250 * time.Millisecond, quorum: 2}
	if v != want {
		t.Fatalf("%+v, want %+v", v, want)
	}
	if v := parseMasterView("s1", map[string]string{"last-ping-sent": "-5", "quorum": "x"}); v.lastPingSent != 0 || v.quorum != 0 || v.addr != "" || v.epoch != -1 {
		t.Fatalf("malformed fields: %+v", v)
	}
}
