//go:build unix

package main

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/lab"
)

func TestDrillLabFailover(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	svg, png := filepath.Join(dir, "drill.svg"), filepath.Join(dir, "drill.png")
	stdout, stderr, code := rediskitSplit(t, ctx, nil, "drill", "--lab", "--failover", "--duration", "4s", "--rate", "400", "--json",
		"--svg", svg, "--png", png)
	var rep drillJSON
	decodeJSON(t, stdout+stderr, stdout, &rep)
	t.Logf("drill: exit %d, error %q, duration %.3fs, writes %+v, reads %+v, failover %+v, verification %+v, events %+v; stderr %q",
		code, rep.Error, rep.DurationS, rep.Writes, rep.Reads, rep.Failover, rep.Verification, rep.Events, stderr)

	if !rep.Lab || rep.RunID == "" || rep.KeyPrefix != "rediskit:drill:"+rep.RunID+":" || rep.Writers != 4 || rep.Readers != 4 {
		t.Errorf("report header %+v", rep)
	}
	// The failover is requested a third of the way in: not before the
	// timer (4 s / 3), and in the first half of the load as it ran (its
	// measured duration: a loaded machine fires both timers late).
	fo := rep.Failover
	if fo == nil || fo.Error != "" || fo.NewMaster == "" || fo.NewMaster == fo.OldMaster || fo.SwitchedAfterS <= 0 || fo.SwitchedAfterS > 5 ||
		fo.RequestedAtS < 4.0/3 || fo.RequestedAtS >= rep.DurationS/2 {
		t.Errorf("failover %+v (load %.3fs)", fo, rep.DurationS)
	}
	if rep.Writes.Succeeded == 0 || rep.Reads.Succeeded == 0 || rep.Writes.Attempted != rep.Writes.Succeeded+rep.Writes.Failed {
		t.Errorf("writes %+v, reads %+v", rep.Writes, rep.Reads)
	}
	v := rep.Verification
	if v == nil || v.Acknowledged != rep.Writes.Succeeded || v.Present < v.Acknowledged-v.Lost {
		t.Fatalf("verification %+v", v)
	}
	if rep.DeletedKeys != 2 {
		t.Errorf("deleted %d keys, want 2 (the op list and the read key)", rep.DeletedKeys)
	}
	kinds := map[string]int{}
	for _, ev := range rep.Events {
		kinds[ev.Event]++
	}
	// One switch: the client follows the failover once (it once switched
	// back to the old master while the leading sentinel still named it).
	if kinds["failover requested"] != 1 || kinds["master changed"] != 1 || kinds["failover started"] != 1 {
		t.Errorf("events %+v", rep.Events)
	}
	// Nothing duplicated (a write is never re-run) and, with writes held
	// from the leader's announcement, nothing acknowledged is lost: the
	// drill exits 0.
	clean := v.Lost == 0 && v.Duplicates == 0
	if !clean || code != exitOK || !rep.OK {
		t.Errorf("lost %d, duplicates %d, exit %d, ok %v, error %q", v.Lost, v.Duplicates, code, rep.OK, rep.Error)
	}
	if !clean && (code != exitFailed || !strings.Contains(stderr, "rediskit: drill failed: ")) {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}

	// Every acknowledged write was served by the old master or the new
	// one, both of which served some; every answered read by a node.
	if fo != nil {
		checkByNode(t, "writes", rep.Writes, fo.OldMaster, fo.NewMaster)
	}
	checkByNode(t, "reads", rep.Reads)
	if !slices.Equal(rep.Figures, []string{svg, png}) {
		t.Errorf("figures %v, want %v", rep.Figures, []string{svg, png})
	}
	checkDrillFigure(t, svg, png, rep)
}

// checkByNode checks that ops' successes by node add up, that no success
// lacks a node, and, given nodes, that exactly those served them.
func checkByNode(t *testing.T, what string, ops drillOpsJSON, nodes ...string) {
	t.Helper()
	sum := 0
	for node, n := range ops.ByNode {
		sum += n
		if node == "" || (len(nodes) > 0 && !slices.Contains(nodes, node)) {
			t.Errorf("%s: %d served by %q (want only %v)", what, n, node, nodes)
		}
	}
	for _, node := range nodes {
		if ops.ByNode[node] == 0 {
			t.Errorf("%s: none served by %s: %v", what, node, ops.ByNode)
		}
	}
	if sum != ops.Succeeded {
		t.Errorf("%s: by node %v sums to %d, %d succeeded", what, ops.ByNode, sum, ops.Succeeded)
	}
}

func TestDrillURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := lab.New(t, lab.Config{Password: dataSecret})
	node := l.Node(0)
	url := "redis://" + node.Addr()
	env := envPasswords[:1]

	began := time.Now()
	out := mustRun(t, ctx, env, exitOK, "drill", url, "--duration", "1s", "--rate", "200")
	// What a drill costs besides its load: starting, judging the target,
	// checking the result and deleting the keys, on this machine now.
	overhead := time.Since(began) - time.Second
	matches(t, out, `(?m)^drill on redis://:xxxxx@`+node.Addr()+` \(a rediskit lab\): 1s, 4 writers, 4 readers, at most 200 ops/s; keys rediskit:drill:[0-9a-f]{8}:\*$`,
		`(?m)^writes: (\d+) acknowledged, 0 failed; longest gap without an acknowledged write `,
		`(?m)^reads:  \d+ answered, 0 failed;`,
		`(?m)^check on the master: (\d+) of (\d+) acknowledged writes present; 0 duplicated; 0 lost; 0 failed writes applied anyway$`,
		`(?m)^deleted 2 keys \(rediskit:drill:[0-9a-f]{8}:\*\)$`)
	assertNoDrillKeys(t, ctx, node)

	// Ctrl-C ends the load early; the result is still checked and the
	// keys deleted.
	// Stopping takes the operations in flight (each bounded by --timeout)
	// and the same checks and cleanup: within twice that overhead and one
	// timeout.
	r := startRediskit(t, ctx, env, false, "drill", url, "--duration", "1m", "--rate", "200")
	r.waitFor(t, "drill on ")
	time.Sleep(1500 * time.Millisecond)
	began = time.Now()
	r.interrupt(t)
	took, bound := time.Since(began), 2*overhead+DefaultTimeout
	t.Logf("stopped %v after Ctrl-C (bound %v; a 1s drill took %v besides its load)", took, bound, overhead)
	if took > bound {
		t.Errorf("the drill took %v to stop after Ctrl-C, want within %v (a 1s drill took %v besides its load)", took, bound, overhead)
	}
	contains(t, r.output(), "interrupted after ", "0 lost", "deleted 2 keys")
	assertNoDrillKeys(t, ctx, node)
}

func TestDrillRefusesWhatIsNotALab(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A lab in a directory of its own is not recognisable as a lab.
	l := lab.New(t, lab.Config{Dir: t.TempDir()})
	node := l.Node(0)
	url := "redis://" + node.Addr()
	out := mustRun(t, ctx, nil, exitUsage, "drill", url, "--duration", "1s")
	contains(t, out, "is not a rediskit lab", "outside a rediskit-lab-* directory", "pass --yes")
	out = mustRun(t, ctx, nil, exitOK, "drill", url, "--duration", "1s", "--rate", "100", "--yes")
	contains(t, out, "(not a lab, run with --yes)", "0 lost", "deleted 2 keys")
	assertNoDrillKeys(t, ctx, node)
}

// A replica's URL: the drill says so and that it wrote nothing, instead
// of failing its cleanup and asking for keys to be deleted by hand.
func TestDrillRefusesAReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := lab.New(t, lab.Config{Replicas: 1})
	master, rep := l.Node(0), l.Node(1)
	url := "redis://" + rep.Addr()

	out := mustRun(t, ctx, nil, exitUsage, "drill", url, "--duration", "1s")
	contains(t, out, "rediskit: redis://"+rep.Addr()+" is a replica (read-only: READONLY ", "the drill wrote nothing",
		"Give it the master's URL, or a redis+sentinel:// URL")
	for _, wrong := range []string{"by hand", "could not delete", "writes:", "check on the master"} {
		if strings.Contains(out, wrong) {
			t.Errorf("output has %q:\n%s", wrong, out)
		}
	}
	// With --json the refusal is the usage error on stderr, as for a
	// target that is not a lab; stdout has no report.
	stdout, stderr, code := rediskitSplit(t, ctx, nil, "drill", url, "--duration", "1s", "--json")
	if code != exitUsage || strings.TrimSpace(stdout) != "" || !strings.Contains(stderr, "is a replica (read-only") {
		t.Errorf("--json: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	assertNoDrillKeys(t, ctx, master)
	assertNoDrillKeys(t, ctx, rep)

	// The master's URL runs (the replica's refusal was about the URL).
	out = mustRun(t, ctx, nil, exitOK, "drill", "redis://"+master.Addr(), "--duration", "1s", "--rate", "100")
	contains(t, out, "0 lost", "deleted 2 keys")
	assertNoDrillKeys(t, ctx, master)
}

func assertNoDrillKeys(t *testing.T, ctx context.Context, n *lab.Node) {
	t.Helper()
	keys, err := n.Do(ctx, "KEYS", "rediskit:drill:*").StringSlice()
	if err != nil || len(keys) != 0 {
		t.Fatalf("drill keys left behind: %v, %v", keys, err)
	}
}
