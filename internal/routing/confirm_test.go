package routing

import (
	"context"
	"testing"
	"time"
)

// TestThrottle lets one action through per interval, from the first.
func TestThrottle(t *testing.T) {
	var th Throttle
	if !th.Allow(time.Hour) {
		t.Fatal("the first action was held")
	}
	if th.Allow(time.Hour) {
		t.Fatal("a second action within the interval went through")
	}
	if !th.Allow(0) {
		t.Fatal("an action after the interval was held")
	}
}

// TestConfirmCmds: WAIT alone, or WAIT then WAITAOF, with the timeout in
// milliseconds.
func TestConfirmCmds(t *testing.T) {
	ctx := context.Background()
	got := ConfirmCmds(ctx, 2, 1500*time.Millisecond, false)
	if len(got) != 1 || got[0].String() != "wait 2 1500: 0" {
		t.Errorf("without AOF: %v", got)
	}
	got = ConfirmCmds(ctx, 2, time.Second, true)
	if len(got) != 2 || got[0].Name() != "wait" || got[1].Name() != "waitaof" || len(got[1].Args()) != 4 || got[1].Args()[1] != 1 {
		t.Errorf("with AOF: %v", got)
	}
}
