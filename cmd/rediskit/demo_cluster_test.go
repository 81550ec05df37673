package main

import (
	"bytes"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
)

// TestDemoClusterStep runs the tour's cluster step on its own lab: Nearest
// reads land on the replicas, the killed master's writes resume on the
// promoted replica, nothing is written twice.
func TestDemoClusterStep(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	var out bytes.Buffer
	d := &demo{out: &out, quick: true}
	if err := d.clusterTour(ctx); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("\n%s", out.String())
	num := func(re string) int {
		m := regexp.MustCompile(re).FindStringSubmatch(out.String())
		if m == nil {
			t.Fatalf("no %q in the output", re)
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	// The last run's line (an earlier run during which the election
	// changed is reported, and read again).
	if on, all := num(`Nearest: (\d+) of \d+ reads on the shards'`), num(`Nearest: \d+ of (\d+) reads on the shards'`); all < 600 || on*100 < all*99 {
		t.Errorf("%d of %d reads on the replicas, want at least 99%% of 600", on, all)
	}
	if n := num(`(\d+) duplicated`); n != 0 {
		t.Errorf("%d writes duplicated", n)
	}
	if n := num(`writes: (\d+) acknowledged`); n == 0 {
		t.Error("no write acknowledged")
	}
	if n := num(`client: (\d+) master changes`); n == 0 {
		t.Error("the client saw no master change")
	}
	if n := num(`(\d+) writes held`); n == 0 || !regexp.MustCompile(`was held \S+ and ran on \S+ \(GET there: "once"\)`).MatchString(out.String()) {
		t.Errorf("the write sent during the failover was not held and run on the new master (%d held)", n)
	}
}
