//go:build unix

package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/lab"
)

func TestProbe(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// node2 is 100 ms away: more than 3 × the master, so never elected.
	// The master and node1 are 10 ms away. The 3 × rule holds however
	// small the RTTs, so they must be large enough that a delayed first
	// PING does not make node1 3 × the master: on bare loopback (tens of
	// µs) scheduling jitter alone reaches that ratio in a few percent of
	// rounds, and a loaded machine has delayed a 2 ms PING by 14 ms.
	l := lab.New(t, lab.Config{Replicas: 2, Sentinels: 3, Password: dataSecret, SentinelPassword: sentinelSecret,
		Nodes: []lab.NodeConfig{{Latency: 10 * time.Millisecond}, {Latency: 10 * time.Millisecond}, {Latency: 100 * time.Millisecond}}})
	url := sentinelURL(l)
	master, near, far := l.Node(0).Addr(), l.Node(1).Addr(), l.Node(2).Addr()

	out := mustRun(t, ctx, envPasswords, exitOK, "probe", url)
	matches(t, out,
		`(?m)^\d\d:\d\d:\d\d\.\d{3}  round 1 of "mymaster", every 2s$`,
		`(?m)^NODE +ROLE +RTT \(EWMA\) +LAST +SAMPLES +LAG +HEALTHY +ELECTION +WHY$`,
		`(?m)^`+regexp.QuoteMeta(master)+` +master +\S+ +\S+ +1 +- +yes `,
		`(?m)^`+regexp.QuoteMeta(near)+` +replica +\S+ +\S+ +1 +\d+B/\S+ +yes +elected`,
		`(?m)^`+regexp.QuoteMeta(far)+` +replica +\d+(\.\d+)?ms +\S+ +1 +\S+ +yes +excluded: slow +rtt \d+(\.\d+)?ms > 3 × master `)

	var rep probeJSON
	runJSON(t, ctx, envPasswords, exitOK, &rep, "probe", url)
	if rep.MasterName != "mymaster" || rep.Round != 1 || len(rep.Nodes) != 3 {
		t.Fatalf("probe --json: %+v", rep)
	}
	byAddr := map[string]probeNodeJSON{}
	for _, n := range rep.Nodes {
		byAddr[n.Addr] = n
	}
	if m := byAddr[master]; m.Role != "master" || !m.Healthy || m.RTTMS <= 0 {
		t.Errorf("master row %+v", m)
	}
	if n := byAddr[near]; n.Role != "replica" || !n.Elected || n.Excluded != "" || n.LinkUp == nil || !*n.LinkUp || n.LagBytes == nil {
		t.Errorf("near replica row %+v", n)
	}
	// The far replica's RTT is at least the 100 ms the lab adds; what a
	// loaded machine adds to it, it adds to the master's (10 ms) too, so
	// beyond the master's it is under twice the 90 ms difference.
	if n, m := byAddr[far], byAddr[master]; n.Elected || n.Excluded != "slow" || n.RTTMS < 100 || n.RTTMS-m.RTTMS >= 2*90 ||
		!strings.Contains(n.Why, "> 3 × master") {
		t.Errorf("far replica row %+v (master %v ms)", n, m.RTTMS)
	}

	// --watch, not on a terminal: one table per round, and the changes of
	// the election, until Ctrl-C.
	svg := filepath.Join(t.TempDir(), "probe.svg")
	r := startRediskit(t, ctx, envPasswords, false, "probe", url, "--watch", "--interval", "200ms", "--svg", svg)
	r.waitFor(t, `round 4 of "mymaster"`)
	// The far replica comes near: it joins the election.
	l.Node(2).SetLatency(10 * time.Millisecond)
	elected := regexp.MustCompile(`election changed \(\w+\): elected .*` + regexp.QuoteMeta(far))
	r.waitUntil(t, "show "+far+" elected", func() bool { return elected.MatchString(r.output()) })
	r.interrupt(t)
	text := r.output()
	// The near replica is elected from none: at the first round, or (when
	// a loaded machine delays its first PING past 3 × the master's) at a
	// later one, with that round's reason.
	matches(t, text, `(?m)^\S+ election changed \([a-z-]+\): elected `+regexp.QuoteMeta(near)+` \(was none\)`)
	if n := strings.Count(text, "NODE "); n < 5 {
		t.Errorf("probe --watch printed %d tables, want one per round:\n%s", n, text)
	}
	if strings.Contains(text, "\x1b[") {
		t.Error("probe --watch moved the cursor though its output is not a terminal")
	}
	// The figure, written at Ctrl-C: a line per node, the election's
	// changes as markers.
	contains(t, text, "RTT per node drawn in "+svg)
	checkProbeFigure(t, svg, []string{master, near, far}, strings.Count(text, " election changed ("))

	// Failures.
	out = mustRun(t, ctx, envPasswords, exitFailed, "probe", strings.Replace(url, "/mymaster", "/nosuchmaster", 1), "--timeout", "500ms")
	contains(t, out, `rediskit: no master for "nosuchmaster"`)
	out = mustRun(t, ctx, envPasswords, exitUsage, "probe", "redis://"+master)
	contains(t, out, "probe needs a redis+sentinel:// URL")
	out = mustRun(t, ctx, envPasswords, exitUsage, "probe", url, "--interval", "10ms")
	contains(t, out, "--interval must be at least 100ms")
}
