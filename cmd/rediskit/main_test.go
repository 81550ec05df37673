//go:build unix

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// BinaryBuildLimit bounds building the rediskit binary for the
// end-to-end tests: a -race build takes about a minute on a loaded 2-core
// machine.
const BinaryBuildLimit = 10 * time.Minute

// cli is the rediskit binary the end-to-end tests run, built with -race on
// first use (rediskitBinary), so that a run with no such test builds
// nothing; TestMain removes its directory at the end.
var cli struct {
	once sync.Once
	dir  string // the temporary directory holding it; "" until built
	path string
	err  error // why the build failed, reported to every test that needs it
}

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		if cli.dir != "" {
			_ = os.RemoveAll(cli.dir)
		}
		os.Exit(code)
	}),
		// go-redis starts a goroutine per pool that redials once a second
		// after failed dials (the demo's killed cluster master); it ends
		// at its next wake-up after the pool is closed (as in package
		// cluster's TestMain).
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}

// rediskitBinary returns the path of the rediskit binary, building it on
// the first call; a failed build fails the calling test (and every later
// one) with the build's output.
func rediskitBinary(t *testing.T) string {
	t.Helper()
	cli.once.Do(func() { cli.path, cli.err = buildRediskit() })
	if cli.err != nil {
		t.Fatal(cli.err)
	}
	return cli.path
}

// buildRediskit builds the package's binary with -race into a temporary
// directory (cli.dir), within BinaryBuildLimit.
func buildRediskit() (string, error) {
	dir, err := os.MkdirTemp("", "rediskit-cli-")
	if err != nil {
		return "", fmt.Errorf("build rediskit: %w", err)
	}
	cli.dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), BinaryBuildLimit)
	defer cancel()
	path := filepath.Join(dir, "rediskit")
	out, err := exec.CommandContext(ctx, "go", "build", "-race", "-o", path, ".").CombinedOutput()
	if ctx.Err() != nil {
		return "", fmt.Errorf("build rediskit: not done within %v: %w\n%s", BinaryBuildLimit, err, out)
	}
	if err != nil {
		return "", fmt.Errorf("build rediskit: %w\n%s", err, out)
	}
	return path, nil
}

// rediskit runs the built binary and returns its output (stdout and
// stderr) and exit code.
func rediskit(t *testing.T, ctx context.Context, env []string, args ...string) (string, int) {
	t.Helper()
	var out bytes.Buffer
	code := runBinary(t, ctx, env, &out, &out, args...)
	return out.String(), code
}

// rediskitSplit is rediskit with stdout and stderr apart.
func rediskitSplit(t *testing.T, ctx context.Context, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	code = runBinary(t, ctx, env, &o, &e, args...)
	return o.String(), e.String(), code
}

func runBinary(t *testing.T, ctx context.Context, env []string, stdout, stderr io.Writer, args ...string) int {
	t.Helper()
	cmd := exec.CommandContext(ctx, rediskitBinary(t), args...)
	cmd.Env = commandEnv(env)
	cmd.Stdout = stdout
	cmd.Stderr = stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	default:
		t.Fatalf("run rediskit %v: %v", args, err)
		return -1
	}
}

// commandEnv is the test's environment without REDISKIT_ variables, plus
// env.
func commandEnv(env []string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "REDISKIT_") {
			out = append(out, kv)
		}
	}
	return append(out, env...)
}

// running is rediskit started in the background (startRediskit).
type running struct {
	args []string
	cmd  *exec.Cmd
	out  *testkit.Buffer // stdout, and stderr unless split
	errs *testkit.Buffer // stderr when split
	done chan struct{}   // closed when the process has exited; err is then set
	err  error
}

// startRediskit starts rediskit in the background, with stdout and stderr
// in out, or stderr apart in errs when split; the test's cleanup kills it
// if it is still running.
func startRediskit(t *testing.T, ctx context.Context, env []string, split bool, args ...string) *running {
	t.Helper()
	cmd := exec.CommandContext(ctx, rediskitBinary(t), args...)
	cmd.Env = commandEnv(env)
	r := &running{args: args, cmd: cmd, out: &testkit.Buffer{}, errs: &testkit.Buffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = r.out, r.out
	if split {
		cmd.Stderr = r.errs
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		select {
		case <-r.done:
		default:
			_ = cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

func (r *running) pid() int { return r.cmd.Process.Pid }

func (r *running) output() string { return r.out.String() + r.errs.String() }

// waitFor waits until the output (stdout and stderr) contains s.
func (r *running) waitFor(t *testing.T, s string) {
	t.Helper()
	r.waitUntil(t, "print "+strconv.Quote(s), func() bool { return strings.Contains(r.output(), s) })
}

// waitUntil waits at most 20 s for cond.
func (r *running) waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("rediskit %s did not %s:\n%s", strings.Join(r.args, " "), what, r.output())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// interrupt sends Ctrl-C and expects the command to exit with code 0
// within 15 s, printing no password.
func (r *running) interrupt(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.done:
		if r.err != nil {
			t.Fatalf("rediskit %s after Ctrl-C: %v\n%s", strings.Join(r.args, " "), r.err, r.output())
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("rediskit %s did not stop on Ctrl-C:\n%s", strings.Join(r.args, " "), r.output())
	}
	assertNoSecrets(t, r.output())
}

var pidColumn = regexp.MustCompile(`(?m)^(?:node|sentinel)\d+\s+\S+\s+\S+\s+\S+\s+(\d+)\s`)

// labPIDs reads the PIDs from a lab table in the output.
func labPIDs(t *testing.T, out string) []int {
	t.Helper()
	var pids []int
	for _, m := range pidColumn.FindAllStringSubmatch(out, -1) {
		pid, _ := strconv.Atoi(m[1])
		pids = append(pids, pid)
	}
	if len(pids) == 0 {
		t.Fatalf("no PIDs in output:\n%s", out)
	}
	return pids
}

func assertGone(t *testing.T, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			// A zombie has exited: only its reaping is pending (a
			// server's fork child, say, reparented to init when the
			// server was killed, and init reaps lazily).
			if state, desc := procState(pid); state != "Z" {
				t.Errorf("process %d still exists: %v (%s)", pid, err, desc)
			}
		}
	}
}

// procState is what /proc says of pid: its state letter (Z: a zombie,
// exited but not reaped) and a description with its command and parent,
// for a failure message.
func procState(pid int) (state, desc string) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", err.Error()
	}
	// pid (comm) state ppid ...
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return "", s
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return "", s
	}
	return f[0], fmt.Sprintf("%s, state %s, parent %s", s[:i+1], f[0], f[1])
}

// labWatch watches /proc for the lab servers of one demo run. The demo
// runs with its own temporary directory (TMPDIR), so every lab it starts,
// the tour's main lab and each tour's own, has its servers' working
// directories under it, whether or not the demo prints their PIDs.
type labWatch struct {
	dir  string
	mu   sync.Mutex
	seen map[int]bool
	stop chan struct{}
	done chan struct{}
}

// watchLabs starts watching and returns the environment to run the demo
// with.
func watchLabs(t *testing.T) (*labWatch, []string) {
	t.Helper()
	w := &labWatch{dir: t.TempDir(), seen: map[int]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			if pids, err := lab.ProcessesIn(w.dir); err == nil {
				w.mu.Lock()
				for _, pid := range pids {
					w.seen[pid] = true
				}
				w.mu.Unlock()
			}
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-w.stop:
		default:
			close(w.stop)
		}
		<-w.done
	})
	return w, []string{"TMPDIR=" + w.dir}
}

// finish stops watching once the demo has exited, checks that none of its
// servers is left, and returns the PIDs seen while it ran.
func (w *labWatch) finish(t *testing.T) []int {
	t.Helper()
	close(w.stop)
	<-w.done
	left, err := lab.ProcessesIn(w.dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("lab servers left running after the demo exited: %v", left)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var pids []int
	for pid := range w.seen {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	assertGone(t, pids)
	return pids
}

// assertSeen checks that the watch saw the servers of the lab table the
// demo printed (so it would have seen them left behind).
func assertSeen(t *testing.T, seen, printed []int) {
	t.Helper()
	for _, pid := range printed {
		if !slices.Contains(seen, pid) {
			t.Errorf("the lab table's PID %d was not seen under the demo's directory (seen %v)", pid, seen)
		}
	}
}

func TestDemoQuick(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	watch, env := watchLabs(t)
	r := startRediskit(t, ctx, env, false, "demo", "--quick")
	<-r.done
	out := r.output()
	if r.err != nil {
		t.Fatalf("demo --quick: %v:\n%s", r.err, out)
	}
	for _, want := range []string{
		"started 1 master, 2 replicas and 3 sentinels",
		"node2 ", "injected 42ms",
		`as the master of "mymaster"`,
		"node2 joined",
		"SENTINEL FAILOVER mymaster sent to",
		"writes are held from now on",
		"the SET sent while writes were held: waited",
		`ran once on node`,
		"with the error a caller sees:\n  master changed, re-run — sentinel",
		"it may have executed: check before re-running",
		"it was not re-run: demo:orders does not exist",
		"reads kept going: ",
		"rediskit_sentinel_master_changes_total{",
		"rediskit_sentinel_failovers_total{",
		`primary killed (SIGKILL): the client moved to "standby"`,
		`SetActive("primary") checked its health and switched in`,
		": 0 writes failed,",
		"stopped 6 processes",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	// The election: node1 elected after the first round, node2 not; every
	// near read on node1, the latency-blind ones on both replicas, and
	// after the swap every read on node2. The first table rests on one
	// PING sample a node, which a loaded machine can delay by several ms:
	// Nearest may then pick the master over node1 (the demo reads with
	// replicaPreferred, so either tells its story), and node2 is excluded
	// as slow only if the master's sample is below a third of node2's.
	matches(t, out, `(?m)^ +node1 +replica +\S+ +\S+ +1 +\S+ +yes +elected(, nearest)? +fastest eligible replica`,
		`(?m)^ +node2 +replica +\S+ +\S+ +1 +\S+ +yes +(excluded: slow +rtt \S+ > 3 × master|not elected +rtt \S+: more than 2ms above the fastest eligible replica)`,
		`(?m)^(\d+) GETs with readFrom=replicaPreferred: p50 [^;]+; \d+ on node1$`,
		`(?m)^the same GETs with a latency-blind choice .*; \d+ on node1, \d+ on node2$`,
		`(?m)^\d+ GETs again: p50 [^;]+; \d+ on node2$`)
	// The metrics step: GET /metrics served by the example shop's own
	// handler (the shop runs on its Redis, with the tour's metrics wired),
	// showing what the failover step's client recorded; the guard step
	// goes on with the same shop.
	metrics := section(t, out, "== 6. ", "== 7. ")
	matches(t, metrics,
		`(?m)^the example shop runs on a standalone Redis \(127\.0\.0\.1:\d+\) with the tour's metrics wired`,
		`(?m)^GET http://127\.0\.0\.1:\d+/metrics from the shop \(Prometheus text format`,
		`(?m)^  rediskit_sentinel_master_changes_total\{.*rediskit_master_new="127\.0\.0\.1:\d+",rediskit_master_old="127\.0\.0\.1:\d+"\} 1$`,
		`(?m)^  rediskit_sentinel_failovers_total\{.*\} 1$`,
		`(?m)^  rediskit_sentinel_writes_refused_total\{.*rediskit_may_have_executed="true"\} 1$`,
		`(?m)^  … and \d+ rediskit_guard_ lines: the shop's`)
	shopAddr := regexp.MustCompile(`standalone Redis \((127\.0\.0\.1:\d+)\)`).FindStringSubmatch(metrics)
	// The guard step: the shop with its Redis paused (SIGSTOP) serves the
	// catalog from the database and refuses login and payment with 503,
	// starting no charge; all recovers on resume.
	guardStep := section(t, out, "== 7. ", "== 8. ")
	if shopAddr != nil {
		contains(t, guardStep, "the example shop on a standalone Redis ("+shopAddr[1]+")")
	}
	paused := section(t, guardStep, "Redis paused (SIGSTOP: connections accepted, nothing answered):\n", "Redis resumed:")
	matches(t, paused,
		`(?m)^  GET  /catalog/sku-1 +200 in \S+ +price 1250 from the database \(fallback\)$`,
		`(?m)^  POST /login alice +503 in \S+ +login unavailable, try again later$`,
		`(?m)^  POST /pay order-2 +503 in \S+ +payment unavailable, try again later$`,
		`(?m)^  database reads \d+, provider calls 1: no charge was started$`)
	resumed := section(t, guardStep, "Redis resumed:\n", "totals:")
	matches(t, resumed,
		`(?m)^  GET  /catalog/sku-1 +200 in \S+ +price 1250 from Redis$`,
		`(?m)^  POST /login alice +200 `,
		`(?m)^  POST /pay order-3 +200 in \S+ +payment pay_\d+$`)
	matches(t, guardStep, `(?m)^totals: .*Redis failures [1-9]\d*, fallbacks [1-9]\d*; login 503s 1; payment 503s 1; provider calls \d+, charges \d+$`)
	// The ring step: the split covers each key once, and the remaining
	// worker takes every key back.
	ring := section(t, out, "== 8. ", "== 9. ")
	matches(t, ring,
		`(?m)^demo-a:\d+ alone owns 100 of 100 keys$`,
		`(?m)^demo-b:\d+ joins: demo-a:\d+ owns \d+ keys, demo-b:\d+ owns \d+, each key once \(settled `,
		`(?m)^demo-b:\d+ stops \(Stop took \S+\): demo-a:\d+ owns all 100 keys again `)
	// Every tour's servers: the main lab's 6, the guard's, the ring's and
	// the two databases' (a server restarted in a tour counts again).
	seen := watch.finish(t)
	t.Logf("%d lab servers seen", len(seen))
	assertSeen(t, seen, labPIDs(t, out))
	if len(seen) < 10 {
		t.Errorf("saw %d lab servers %v, want at least the 10 the tours start", len(seen), seen)
	}
}

// section is the part of out from the line starting with from up to the
// next to (or the end); it fails the test when from is missing.
func section(t *testing.T, out, from, to string) string {
	t.Helper()
	i := strings.Index(out, from)
	if i < 0 {
		t.Errorf("output lacks %q:\n%s", from, out)
		return ""
	}
	rest := out[i:]
	if j := strings.Index(rest[len(from):], to); j >= 0 {
		return rest[:len(from)+j]
	}
	return rest
}

func TestLabUpStopsOnInterrupt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	r := startRediskit(t, ctx, []string{"REDISKIT_PASSWORD=lab-up-secret"}, false,
		"lab", "up", "--replicas", "1", "--sentinels", "1", "--latency", "node1=5ms")
	r.waitFor(t, "Ctrl-C stops it")
	r.interrupt(t)
	text := r.output()
	if strings.Contains(text, "lab-up-secret") {
		t.Fatalf("lab up printed the password:\n%s", text)
	}
	if !strings.Contains(text, "stopped 3 processes") || !strings.Contains(text, "redis+sentinel://") {
		t.Fatalf("unexpected output:\n%s", text)
	}
	// --latency as a Go duration: node1 is 5 ms away, node0 not delayed.
	matches(t, text, `(?m)^node0 +master +.* 0s$`, `(?m)^node1 +replica +.* 5ms$`)
	assertGone(t, labPIDs(t, text))
}

// A lab start that exceeds --timeout (lab up's, or the demo's, which
// bounds each step and the start of its lab) fails with exit code 1, says
// so, and leaves no server behind.
func TestLabUpTimeout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"lab", "up", "--replicas", "1", "--sentinels", "1", "--timeout", "1ms"},
		{"demo", "--quick", "--timeout", "1ms"},
	} {
		watch, env := watchLabs(t)
		out := mustRun(t, ctx, env, exitFailed, args...)
		contains(t, out, "rediskit: the lab did not start within --timeout 1ms", "everything started was stopped")
		if strings.Contains(out, "Ctrl-C stops it") || strings.Contains(out, "== 1.") {
			t.Errorf("rediskit %v went on with a lab that did not start:\n%s", args, out)
		}
		watch.finish(t)
	}
}

func TestUsageErrorsExitTwo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{
		{"no-such-command"},
		{"lab", "up", "--no-such-flag"},
		{"lab", "up", "--latency", "node9=5ms"},
		{"lab", "up", "--latency", "node1=fast"},
		{"lab", "up", "--latency", "node1=-5"},
		{"lab", "up", "--latency", "node1=NaN"},
		{"lab", "up", "--timeout", "0s"},
		{"demo", "--timeout", "0s"},
		{"demo", "extra-arg"},
	} {
		out, code := rediskit(t, ctx, nil, args...)
		if code != exitUsage {
			t.Errorf("rediskit %v: exit %d, want %d:\n%s", args, code, exitUsage, out)
		}
	}
}

func TestLabUpTLSJSON(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// --latency as a bare number is milliseconds (issue 9's nodeN=ms).
	r := startRediskit(t, ctx, envPasswords, true, "lab", "up", "--tls", "--replicas", "1", "--sentinels", "1", "--json",
		"--latency", "node1=7")
	r.waitFor(t, "Ctrl-C stops it")
	// The note comes on stderr after the report on stdout, but the two
	// pipes are copied by different goroutines: the report may land later.
	r.waitUntil(t, "print the JSON report on stdout", func() bool { return json.Valid([]byte(r.out.String())) })
	var d labJSON
	decodeJSON(t, r.output(), r.out.String(), &d)
	if !d.TLS || d.MasterName != "mymaster" || len(d.Nodes) != 2 || len(d.Sentinels) != 1 ||
		d.Nodes[0].Role != "master" || d.Nodes[1].Role != "replica" || d.Nodes[0].PID == 0 || d.Sentinels[0].PID == 0 {
		t.Fatalf("lab %+v", d)
	}
	// A Sentinel lab's JSON has no cluster fields (lab up --cluster's).
	if d.Cluster != nil || d.Nodes[0].Shard != nil || strings.Contains(r.out.String(), `"shard"`) || strings.Contains(r.out.String(), `"cluster"`) {
		t.Fatalf("a Sentinel lab's JSON has cluster fields:\n%s", r.out.String())
	}
	if d.Nodes[0].LatencyMS != 0 || d.Nodes[1].LatencyMS != 7 {
		t.Fatalf("--latency node1=7: latencies %v ms and %v ms, want 0 and 7", d.Nodes[0].LatencyMS, d.Nodes[1].LatencyMS)
	}
	if !strings.HasPrefix(d.URL, "rediss+sentinel://"+d.Sentinels[0].Addr+"/mymaster?caFile=") || strings.Contains(d.URL, "xxxxx") {
		t.Fatalf("the ready URL %q", d.URL)
	}

	// The ready URL works as it is, with the passwords from the environment.
	out := mustRun(t, ctx, envPasswords, exitOK, "check", d.URL, "--write")
	matches(t, out, `(?m)^ok   TLS      `+regexp.QuoteMeta(d.Nodes[0].Addr)+` .* TLS 1\.[23], server certificate`,
		`(?m)^ok   AUTH `, `(?m)^ok   WRITE `)
	// The same URL over TLS without the CA fails at the TLS stage, on the
	// sentinel, naming the unknown authority.
	noCA := d.URL[:strings.Index(d.URL, "?")]
	checkUnknownAuthority(t, ctx, envPasswords, noCA, d.Sentinels[0].Addr)

	r.interrupt(t)
	contains(t, r.errs.String(), "stopped 3 processes")
	var pids []int
	for _, n := range d.Nodes {
		pids = append(pids, n.PID)
	}
	assertGone(t, append(pids, d.Sentinels[0].PID))
}

// Ctrl-C in the middle of the failover step ends the tour cleanly: exit
// code 0 and every lab process gone.
func TestDemoInterrupted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	watch, env := watchLabs(t)
	r := startRediskit(t, ctx, env, false, "demo", "--quick")
	r.waitFor(t, "an INCR demo:orders is in flight")
	r.interrupt(t)
	text := r.output()
	contains(t, text, "interrupted", "stopped 6 processes")
	seen := watch.finish(t)
	assertSeen(t, seen, labPIDs(t, text))
}

// --lab starts a lab for one command and stops it after.
func TestLabFlag(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var rep checkJSON
	runJSON(t, ctx, envPasswords, exitOK, &rep, "check", "--lab", "--write")
	if !rep.OK || rep.Kind != "sentinel" || rep.Replica == "" || !strings.Contains(rep.Target, ":xxxxx@") {
		t.Fatalf("check --lab: %+v", rep)
	}
	out := mustRun(t, ctx, envPasswords, exitOK, "health", "--lab", "--write")
	matches(t, out, `(?m)^writable master 127\.0\.0\.1:\d+ of "mymaster" `)
}
