package isolation

import (
	"testing"
	"time"
)

func TestDecide(t *testing.T) {
	now := time.Unix(1000, 0)
	suspect := &Hold{Since: now.Add(-300 * time.Millisecond), Reason: "r", Suspect: true}
	confirmed := &Hold{Since: now.Add(-time.Second), Reason: "r"}
	tests := []struct {
		name        string
		cur         *Hold
		cleared     bool
		s           Signs
		held        bool
		suspect     bool
		wantCleared bool
	}{
		{name: "no sign: no hold"},
		{name: "a first suspicion holds", s: Signs{Suspicion: true}, held: true, suspect: true},
		{name: "a suspicion goes on", cur: suspect, s: Signs{Suspicion: true}, held: true, suspect: true},
		{name: "vouched: released, and cleared", cur: suspect, s: Signs{Suspicion: true, Vouched: true}, wantCleared: true},
		{name: "expired: released, and cleared", cur: suspect, s: Signs{Suspicion: true, Expired: true}, wantCleared: true},
		{name: "cleared: the same suspicion does not hold again", cleared: true, s: Signs{Suspicion: true}, wantCleared: true},
		{name: "confirmed: held, not a suspicion", cur: suspect, s: Signs{Suspicion: true, Confirmed: true, Vouched: true}, held: true},
		{name: "confirmed while cleared: held, still cleared", cleared: true, s: Signs{Confirmed: true}, held: true, wantCleared: true},
		{name: "confirmed, then no sign: released", cur: confirmed},
		{name: "receiving ends the episode", cur: suspect, cleared: true, s: Signs{Receiving: true}},
	}
	for _, tt := range tests {
		tt.s.Reason = "seen"
		got, cleared := Decide(tt.cur, tt.cleared, now, tt.s)
		if (got != nil) != tt.held || got != nil && got.Suspect != tt.suspect || cleared != tt.wantCleared {
			t.Errorf("%s: %+v cleared %v; want held %v suspect %v cleared %v", tt.name, got, cleared, tt.held, tt.suspect, tt.wantCleared)
		}
		if got != nil && tt.cur != nil && !got.Since.Equal(tt.cur.Since) {
			t.Errorf("%s: the hold restarted at %v, was %v", tt.name, got.Since, tt.cur.Since)
		}
		if got != nil && tt.cur == nil && (!got.Since.Equal(now) || got.Reason != "seen") {
			t.Errorf("%s: a new hold %+v", tt.name, got)
		}
	}
}
