package routing

import (
	"context"
	"strings"
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

// TestDurableTimeout: the one rule of every durable client. Left at zero
// it leaves a round trip of room under ReadTimeout; set, WAIT's reply (and
// WAITAOF's after it) must fit in one ReadTimeout.
func TestDurableTimeout(t *testing.T) {
	const def = time.Second
	for _, tc := range []struct {
		name                 string
		timeout, readTimeout time.Duration
		aof                  bool
		want                 time.Duration
		problem              string
	}{
		{"default", 0, 3 * time.Second, false, def, ""},
		{"default, AOF", 0, 3 * time.Second, true, def, ""},
		{"default under a short read timeout", 0, time.Second, false, 500 * time.Millisecond, ""},
		{"default under a short read timeout, AOF", 0, 900 * time.Millisecond, true, 300 * time.Millisecond, ""},
		{"set", 200 * time.Millisecond, 3 * time.Second, false, 200 * time.Millisecond, ""},
		{"set just under the read timeout", 999 * time.Millisecond, time.Second, false, 999 * time.Millisecond, ""},
		{"as long as the read timeout", time.Second, time.Second, false, 0, "must be shorter than ReadTimeout (1s)"},
		{"AOF: just under half", 499 * time.Millisecond, time.Second, true, 499 * time.Millisecond, ""},
		{"AOF: half", 500 * time.Millisecond, time.Second, true, 0, "with DurableAOF must be shorter than half of ReadTimeout (1s)"},
		{"negative", -time.Millisecond, time.Second, false, 0, "cannot be negative"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, problem := DurableTimeout(tc.timeout, tc.readTimeout, def, tc.aof)
			switch {
			case tc.problem != "" && !strings.Contains(problem, tc.problem):
				t.Fatalf("problem %q, want it to say %q", problem, tc.problem)
			case tc.problem == "" && (problem != "" || got != tc.want):
				t.Fatalf("%v, %q; want %v", got, problem, tc.want)
			}
		})
	}
}
