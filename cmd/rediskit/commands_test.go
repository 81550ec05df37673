//go:build unix

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/lab"
)

// The passwords of the shared lab; no output may contain them.
const (
	dataSecret     = "data-Secret-7f3a"
	sentinelSecret = "sentinel-Secret-91c2"
)

// passwordLab starts the lab most command tests share: a master, one
// replica and three sentinels, with a data-node password and a separate
// sentinel password.
func passwordLab(t *testing.T) *lab.Lab {
	t.Helper()
	// 10 ms on each node, so that check's REPLICA stage elects the
	// replica: the election excludes a replica whose RTT is 3 × the
	// master's however small both are. On bare loopback (tens of µs) one
	// slow PING on a loaded machine reaches that ratio, and such a machine
	// has delayed a 2 ms PING by 14 ms.
	return lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, Password: dataSecret, SentinelPassword: sentinelSecret,
		Nodes: []lab.NodeConfig{{Latency: 10 * time.Millisecond}, {Latency: 10 * time.Millisecond}}})
}

// sentinelURL is the lab's redis+sentinel:// URL without passwords.
func sentinelURL(l *lab.Lab) string {
	return fmt.Sprintf("redis+sentinel://%s/%s", strings.Join(l.SentinelAddrs(), ","), l.MasterName())
}

var envPasswords = []string{envPassword + "=" + dataSecret, envSentinelPassword + "=" + sentinelSecret}

func assertNoSecrets(t *testing.T, out string) {
	t.Helper()
	for _, s := range []string{dataSecret, sentinelSecret} {
		if strings.Contains(out, s) {
			t.Fatalf("output shows a password:\n%s", out)
		}
	}
}

// mustRun runs rediskit, checks the exit code and that no password shows,
// and returns the output.
func mustRun(t *testing.T, ctx context.Context, env []string, wantCode int, args ...string) string {
	t.Helper()
	out, code := rediskit(t, ctx, env, args...)
	assertNoSecrets(t, out)
	if code != wantCode {
		t.Fatalf("rediskit %s: exit %d, want %d:\n%s", strings.Join(args, " "), code, wantCode, out)
	}
	return out
}

// runJSON runs rediskit with --json, separately capturing stdout, and
// decodes it into v.
func runJSON(t *testing.T, ctx context.Context, env []string, wantCode int, v any, args ...string) string {
	t.Helper()
	stdout, stderr, code := rediskitSplit(t, ctx, env, append(args, "--json")...)
	assertNoSecrets(t, stdout+stderr)
	if code != wantCode {
		t.Fatalf("rediskit %s --json: exit %d, want %d:\n%s%s", strings.Join(args, " "), code, wantCode, stdout, stderr)
	}
	decodeJSON(t, stdout+stderr, stdout, v)
	return stderr
}

// decodeJSON decodes stdout, which must be exactly one JSON value, into v.
func decodeJSON(t *testing.T, all, stdout string, v any) {
	t.Helper()
	assertNoSecrets(t, all)
	dec := json.NewDecoder(strings.NewReader(stdout))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("stdout is not the JSON report (%v):\n%s", err, all)
	}
	if dec.More() {
		t.Fatalf("stdout holds more than one JSON value:\n%s", stdout)
	}
}

func contains(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

func matches(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("output does not match %q:\n%s", p, out)
		}
	}
}

func deadAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	return addr
}

func TestCheck(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := passwordLab(t)
	master, replica := l.Node(0).Addr(), l.Node(1).Addr()
	url := sentinelURL(l)

	t.Run("sentinel URL, passwords from the environment, write probe", func(t *testing.T) {
		out := mustRun(t, ctx, envPasswords, exitOK, "check", url, "--write")
		matches(t, out,
			`(?m)^ok   SENTINEL `+regexp.QuoteMeta(l.SentinelAddrs()[0])+` .* named `+regexp.QuoteMeta(master)+` as the master of "mymaster"$`,
			`(?m)^ok   AUTH     `+regexp.QuoteMeta(master)+` .* authenticated as the default user$`,
			`(?m)^ok   ROLE     `+regexp.QuoteMeta(master)+` .* master with 1 connected replica\(s\)$`,
			`(?m)^ok   REPLICA  `+regexp.QuoteMeta(replica)+` .* read-only work would use replica `+regexp.QuoteMeta(replica),
			`(?m)^ok   WRITE    `+regexp.QuoteMeta(master)+` .* SET rediskit:health:write `,
			`(?m)^ok: sentinel .* named master `+regexp.QuoteMeta(master)+`, verified; read-only work would use replica `+regexp.QuoteMeta(replica)+`; writable$`)
		contains(t, out, "sentinelPassword=xxxxx", ":xxxxx@")
	})

	t.Run("JSON", func(t *testing.T) {
		var rep checkJSON
		runJSON(t, ctx, envPasswords, exitOK, &rep, "check", url, "--write")
		var stages []string
		for _, s := range rep.Steps {
			stages = append(stages, s.Stage)
			if !s.OK || s.Server == "" || s.Detail == "" || s.TookMS < 0 {
				t.Errorf("step %+v", s)
			}
		}
		if got := strings.Join(stages, " "); got != "SENTINEL SENTINEL SENTINEL TCP AUTH HELLO PING ROLE REPLICA WRITE" {
			t.Errorf("stages %s", got)
		}
		if !rep.OK || rep.Kind != "sentinel" || rep.MasterName != "mymaster" || rep.Master != master || rep.Replica != replica ||
			rep.Sentinel != l.SentinelAddrs()[0] || rep.Error != "" {
			t.Errorf("report %+v", rep)
		}
	})

	t.Run("a username and the environment's password", func(t *testing.T) {
		out := mustRun(t, ctx, envPasswords, exitOK, "check", "redis://default@"+master)
		contains(t, out, `authenticated as user "default"`, "redis://default:xxxxx@")
	})

	t.Run("wrong password: AUTH failed on the master", func(t *testing.T) {
		env := []string{envPassword + "=wrong-" + dataSecret[:4], envSentinelPassword + "=" + sentinelSecret}
		out := mustRun(t, ctx, env, exitFailed, "check", url)
		matches(t, out, `(?m)^FAIL AUTH     `+regexp.QuoteMeta(master)+` .*AUTH failed on `+regexp.QuoteMeta(master)+`: WRONGPASS`,
			`(?m)^rediskit: AUTH failed on `+regexp.QuoteMeta(master)+`: WRONGPASS`)
		var rep checkJSON
		runJSON(t, ctx, env, exitFailed, &rep, "check", url)
		if rep.OK || rep.FailedStage != "AUTH" || rep.FailedServer != master || !strings.Contains(rep.Error, "WRONGPASS") {
			t.Errorf("report %+v", rep)
		}
	})

	t.Run("a password in the URL wins over the environment's", func(t *testing.T) {
		out := mustRun(t, ctx, envPasswords, exitFailed, "check", "redis://:not-the-password@"+master)
		contains(t, out, "AUTH failed on "+master+": WRONGPASS", "redis://:xxxxx@")
		if strings.Contains(out, "not-the-password") {
			t.Fatalf("the URL's password was printed:\n%s", out)
		}
	})

	t.Run("wrong sentinel password", func(t *testing.T) {
		env := []string{envPassword + "=" + dataSecret, envSentinelPassword + "=nope"}
		out := mustRun(t, ctx, env, exitFailed, "check", url)
		s0 := regexp.QuoteMeta(l.SentinelAddrs()[0])
		matches(t, out, `(?m)^FAIL AUTH     `+s0+` .* skipped \(auth\): AUTH failed on `+s0+`: WRONGPASS`,
			`(?m)^rediskit: AUTH failed on `+s0+`: WRONGPASS`)
	})

	t.Run("a dead sentinel is skipped", func(t *testing.T) {
		dead := deadAddr(t)
		out := mustRun(t, ctx, envPasswords, exitOK, "check", "redis+sentinel://"+dead+","+strings.Join(l.SentinelAddrs(), ",")+"/mymaster")
		matches(t, out, `(?m)^FAIL TCP      `+regexp.QuoteMeta(dead)+` .* skipped \(down\): TCP failed on `+regexp.QuoteMeta(dead)+`: .*connection refused$`,
			`(?m)^ok: sentinel `+regexp.QuoteMeta(l.SentinelAddrs()[0])+` named master`)
	})

	t.Run("every sentinel dead", func(t *testing.T) {
		dead := deadAddr(t)
		out := mustRun(t, ctx, envPasswords, exitFailed, "check", "redis+sentinel://"+dead+"/mymaster")
		contains(t, out, "rediskit: TCP failed on "+dead+": dial tcp "+dead)
	})

	t.Run("an unknown master name", func(t *testing.T) {
		out := mustRun(t, ctx, envPasswords, exitFailed, "check", strings.Replace(url, "/mymaster", "/nosuchmaster", 1))
		contains(t, out, `skipped: does not monitor a master named "nosuchmaster"`,
			"rediskit: SENTINEL failed on "+l.SentinelAddrs()[0]+`: does not monitor a master named "nosuchmaster"`)
	})

	t.Run("a read-only replica with --write", func(t *testing.T) {
		out := mustRun(t, ctx, envPasswords, exitFailed, "check", "redis://"+replica, "--write")
		matches(t, out, `(?m)^ok   ROLE     `+regexp.QuoteMeta(replica)+` .* replica of `+regexp.QuoteMeta(master)+`, link connected$`,
			`(?m)^FAIL WRITE    `+regexp.QuoteMeta(replica)+` .* WRITE failed on `+regexp.QuoteMeta(replica)+`: read-only: READONLY`)
		// Without --write the replica passes: it answers.
		mustRun(t, ctx, envPasswords, exitOK, "check", "redis://"+replica)
	})

	t.Run("a database that does not exist", func(t *testing.T) {
		out := mustRun(t, ctx, envPasswords, exitFailed, "check", "redis://"+master+"/99")
		contains(t, out, "SELECT failed on "+master)
	})

	t.Run("health", func(t *testing.T) {
		out := mustRun(t, ctx, envPasswords, exitOK, "health", url, "--write")
		matches(t, out, `(?m)^writable master `+regexp.QuoteMeta(master)+` of "mymaster" \(ping ok .*, write ok .*\)$`)
		var rep healthJSON
		runJSON(t, ctx, envPasswords, exitOK, &rep, "health", url, "--write")
		if !rep.OK || rep.State != "writable" || rep.Server != master || !rep.PingOK || !rep.WriteProbed ||
			rep.ProbeKey != "rediskit:health:write" || rep.Error != "" {
			t.Errorf("report %+v", rep)
		}
		out = mustRun(t, ctx, envPasswords, exitOK, "health", "redis://"+replica)
		matches(t, out, `(?m)^reachable `+regexp.QuoteMeta(replica)+` \(ping ok [^,]*\)$`)
		out = mustRun(t, ctx, envPasswords, exitFailed, "health", "redis://"+replica, "--write", "--prefix", "myapp")
		matches(t, out, `(?m)^read-only `+regexp.QuoteMeta(replica)+` \(ping ok .*, write failed .*\)$`, `READONLY`)
		rep = healthJSON{}
		runJSON(t, ctx, []string{envPassword + "=wrong"}, exitFailed, &rep, "health", "redis://"+master)
		if rep.OK || rep.State != "auth-failed" || rep.PingOK || !strings.Contains(rep.Error, "WRONGPASS") {
			t.Errorf("report %+v", rep)
		}
		dead := deadAddr(t)
		out = mustRun(t, ctx, nil, exitFailed, "health", "redis://"+dead)
		matches(t, out, `(?m)^unreachable `+regexp.QuoteMeta(dead)+` `)
	})
}

// A server that does not answer, and one out of memory.
func TestTimeoutsAndOOM(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := lab.New(t, lab.Standalone())
	n := l.Node(0)
	url := "redis://" + n.Addr()

	if err := n.Do(ctx, "CONFIG", "SET", "maxmemory", "1").Err(); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, ctx, nil, exitFailed, "health", url, "--write")
	matches(t, out, `(?m)^out-of-memory `+regexp.QuoteMeta(n.Addr())+` \(ping ok .*, write failed`)
	out = mustRun(t, ctx, nil, exitFailed, "check", url, "--write")
	contains(t, out, "WRITE failed on "+n.Addr()+": out-of-memory: OOM")
	if err := n.Do(ctx, "CONFIG", "SET", "maxmemory", "0").Err(); err != nil {
		t.Fatal(err)
	}

	// A paused server: check's HELLO and health's PING each wait one
	// --timeout, no less (the bound is honoured) and less than two (a
	// retry would wait another), and each command then ends. What a run
	// costs besides that wait (starting a -race binary, which a loaded
	// machine stretches to seconds) is measured on the same machine just
	// before: the same commands against an address that refuses the
	// connection at once.
	const timeout = 300 * time.Millisecond
	dead := "redis://" + deadAddr(t)
	timed := func(code int, args ...string) (string, time.Duration) {
		t.Helper()
		began := time.Now()
		out := mustRun(t, ctx, nil, code, append(args, "--timeout", timeout.String())...)
		return out, time.Since(began)
	}
	_, baseCheck := timed(exitFailed, "check", dead)
	_, baseHealth := timed(exitFailed, "health", dead)
	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = n.Resume() }()
	out, tookCheck := timed(exitFailed, "check", url)
	matches(t, out, `(?m)^ok   TCP `, `(?m)^FAIL HELLO    `+regexp.QuoteMeta(n.Addr())+` .*i/o timeout`)
	waited := func(out, pattern string) time.Duration {
		t.Helper()
		m := regexp.MustCompile(pattern).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("output does not match %q:\n%s", pattern, out)
		}
		d, err := time.ParseDuration(m[1])
		if err != nil || d < timeout || d >= 2*timeout {
			t.Errorf("waited %s (%v) on the paused server with --timeout %v, want at least the timeout and less than twice it:\n%s", m[1], err, timeout, out)
		}
		return d
	}
	hello := waited(out, `(?m)^FAIL HELLO    `+regexp.QuoteMeta(n.Addr())+` +(\S+) `)
	out, tookHealth := timed(exitFailed, "health", url)
	ping := waited(out, `(?m)^timeout `+regexp.QuoteMeta(n.Addr())+` \(ping failed (\d+(?:\.\d+)?m?s)\)$`)
	t.Logf("paused server: check %v (HELLO waited %v), health %v (PING waited %v); against a refusing address: check %v, health %v",
		tookCheck, hello, tookHealth, ping, baseCheck, baseHealth)
	if tookCheck >= baseCheck+2*timeout || tookHealth >= baseHealth+2*timeout {
		t.Errorf("against the paused server check took %v and health %v with --timeout %v; against a refusing address %v and %v: want less than two timeouts more",
			tookCheck, tookHealth, timeout, baseCheck, baseHealth)
	}
}

// checkUnknownAuthority runs check on a TLS URL without a CA file and
// expects it to fail at the TLS stage on server, naming the unknown
// authority, in the report and on stderr.
//
// Without a CA file the handshake verifies the chain against the system
// roots, which Go loads on first use, inside the handshake and so under
// --timeout: it reads and parses the host's CA store (a few hundred
// certificates; about 90 ms under -race on an idle machine, ten times
// that with 4 busy loops on 2 vCPUs, past the 2 s default at a load
// average of 20). The parse is not interrupted, but once the timeout has
// passed the handshake reports the deadline instead of its verdict
// (tls.Conn.HandshakeContext returns the context's error). That outcome
// is a measurement that did not complete, not a verdict: the check runs
// again with a timeout scaled from the duration the TLS stage took, at
// most twice. Any other outcome is judged at once.
func checkUnknownAuthority(t *testing.T, ctx context.Context, env []string, url, server string) {
	t.Helper()
	var timeout time.Duration // the first run: the default --timeout
	for attempt := 1; ; attempt++ {
		args := []string{"check", url}
		if timeout > 0 {
			args = append(args, "--timeout", timeout.String())
		}
		var rep checkJSON
		stderr := runJSON(t, ctx, env, exitFailed, &rep, args...)
		if rep.OK || rep.FailedStage != "TLS" || rep.FailedServer != server || len(rep.Steps) == 0 {
			t.Fatalf("check %s: %+v, want it to fail at the TLS stage on %s", url, rep, server)
		}
		tlsStep := rep.Steps[len(rep.Steps)-1]
		bound := timeout
		if bound == 0 {
			bound = DefaultTimeout
		}
		took := time.Duration(tlsStep.TookMS * float64(time.Millisecond))
		timedOut := took >= bound && (strings.Contains(rep.Error, "deadline exceeded") || strings.Contains(rep.Error, "timeout"))
		if timedOut && attempt < 3 {
			t.Logf("check %s, attempt %d: the TLS handshake used its whole --timeout %v (%v): %s; running it again with %v",
				url, attempt, bound, took, rep.Error, 4*took)
			timeout = (4 * took).Round(time.Millisecond)
			continue
		}
		want := "TLS failed on " + server + ": tls: failed to verify certificate: x509: certificate signed by unknown authority"
		if tlsStep.Stage != "TLS" || tlsStep.OK || !strings.Contains(rep.Error, want) || !strings.Contains(stderr, "rediskit: "+want) {
			t.Fatalf("check %s (attempt %d, TLS stage %v of --timeout %v): error %q, stderr %q; want %q", url, attempt, took, bound, rep.Error, stderr, want)
		}
		t.Logf("check %s: %s after %v (attempt %d, --timeout %v)", url, rep.Error, took, attempt, bound)
		return
	}
}

func TestCheckTLS(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := lab.New(t, lab.Config{TLS: true})
	addr := l.Node(0).Addr()

	out := mustRun(t, ctx, nil, exitFailed, "check", "rediss://"+addr)
	matches(t, out, `(?m)^FAIL TLS      `+regexp.QuoteMeta(addr)+` .*TLS failed on `+regexp.QuoteMeta(addr)+`: `)
	checkUnknownAuthority(t, ctx, nil, "rediss://"+addr, addr)
	out = mustRun(t, ctx, nil, exitFailed, "check", "redis://"+addr, "--timeout", "500ms")
	contains(t, out, "failed on "+addr) // plain text to a TLS port

	out = mustRun(t, ctx, nil, exitOK, "check", l.URL(), "--write")
	matches(t, out, `(?m)^ok   TLS      `+regexp.QuoteMeta(addr)+` .* TLS 1\.[23], server certificate "`, `(?m)^ok   WRITE `)
	out = mustRun(t, ctx, nil, exitOK, "health", l.URL(), "--write")
	contains(t, out, "writable "+addr)

	// A CA file that cannot be read is a usage error.
	out = mustRun(t, ctx, nil, exitUsage, "check", "rediss://"+addr+"?caFile=/nonexistent/ca.pem")
	contains(t, out, "caFile")
}

func TestRing(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l := lab.New(t, lab.Config{Password: dataSecret})
	url := "redis://" + l.Node(0).Addr()
	env := envPasswords[:1]

	out := mustRun(t, ctx, env, exitFailed, "ring", "owner", url, "--key", "cli-ring", "7")
	contains(t, out, `ring "cli-ring": 0 node(s)`, "(none)", `rediskit: ring "cli-ring" has no live node`)

	join := func() *running {
		return startRediskit(t, ctx, env, false, "ring", "join", url, "--key", "cli-ring", "--items", "20")
	}
	a := join()
	a.waitForLast(t, "owns 20 of 20 items (1 node(s) on the ring)")
	b := join()
	b.waitForLast(t, "(2 node(s) on the ring)")
	a.waitForLast(t, "(2 node(s) on the ring)")

	out = mustRun(t, ctx, env, exitOK, "ring", "print", url, "--key", "cli-ring")
	contains(t, out, `Hash ring "cli-ring" replicas:`, `Hash ring "cli-ring" nodes:`)
	if n := strings.Count(out, "       16 "); n != 2 {
		t.Errorf("want two nodes of 16 replicas:\n%s", out)
	}
	var rj ringJSON
	runJSON(t, ctx, env, exitOK, &rj, "ring", "print", url, "--key", "cli-ring")
	if rj.Key != "cli-ring" || rj.Hash != "xxhash" || len(rj.Nodes) != 2 || len(rj.Replicas) != 32 {
		t.Fatalf("ring %+v", rj)
	}
	share := rj.Nodes[0].Share + rj.Nodes[1].Share
	if share < 0.999999 || share > 1.000001 {
		t.Errorf("shares add up to %v", share)
	}
	ids := map[string]bool{rj.Nodes[0].ID: true, rj.Nodes[1].ID: true}

	items := []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}
	var oj ownersJSON
	runJSON(t, ctx, env, exitOK, &oj, append([]string{"ring", "owner", url, "--key", "cli-ring"}, items...)...)
	if oj.Nodes != 2 || len(oj.Owners) != len(items) {
		t.Fatalf("owners %+v", oj)
	}
	// Each item's owner is the joined node that says it owns it.
	for _, o := range oj.Owners {
		if !ids[o.Owner] {
			t.Errorf("item %s owned by %q, not a node of the ring", o.Item, o.Owner)
		}
		owner := a
		if !strings.HasSuffix(o.Owner, fmt.Sprintf(":%d", a.pid())) {
			owner = b
		}
		if !owner.owns(o.Item) {
			t.Errorf("ring owner says %s owns %s; its node's last line: %q", o.Owner, o.Item, owner.lastLine())
		}
	}
	out = mustRun(t, ctx, env, exitOK, "ring", "owner", url, "--key", "cli-ring", "0")
	matches(t, out, `(?m)^ITEM +POINT +OWNER$`, `(?m)^0 +\d+ +\S+:\d+$`)

	// b leaves on Ctrl-C; a takes all the items over.
	b.interrupt(t)
	contains(t, b.out.String(), `left ring "cli-ring"`)
	a.waitForLast(t, "owns 20 of 20 items (1 node(s) on the ring)")
	a.interrupt(t)
	out = mustRun(t, ctx, env, exitFailed, "ring", "owner", url, "--key", "cli-ring", "7")
	contains(t, out, "0 node(s)")

	// JSON lines from join.
	c := startRediskit(t, ctx, env, false, "ring", "join", url, "--key", "cli-ring", "--items", "5", "--json")
	c.waitForLast(t, `"owned":5`)
	c.interrupt(t)
	var line joinJSON
	if err := json.Unmarshal([]byte(strings.SplitN(c.out.String(), "\n", 2)[0]), &line); err != nil ||
		line.Owned != 5 || line.Nodes != 1 || len(line.Items) != 5 {
		t.Fatalf("join --json first line: %+v, %v\n%s", line, err, c.out.String())
	}
}

func TestUsage(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check"}, "a URL is required"},
		{[]string{"check", "redis://127.0.0.1:1", "--lab"}, "not both"},
		{[]string{"check", "redis://127.0.0.1:1", "extra"}, "accepts at most 1 arg"},
		{[]string{"check", "redis+sentinal://h/m"}, "unknown scheme"},
		{[]string{"check", "unix:///tmp/redis.sock"}, "health takes unix://"},
		{[]string{"check", "redis://127.0.0.1:1", "--timeout", "0s"}, "--timeout must be positive"},
		{[]string{"health"}, "a URL is required"},
		{[]string{"health", "redis://127.0.0.1:1", "--prefix", "bad prefix"}, "KeyPrefix"},
		{[]string{"ring", "print", "redis://127.0.0.1:1"}, "--key is required"},
		{[]string{"ring", "owner", "redis://127.0.0.1:1", "--key", "k"}, "at least one ITEM"},
		{[]string{"ring", "join", "redis://127.0.0.1:1", "--key", "k", "--items", "0"}, "--items must be positive"},
		{[]string{"ring", "nope"}, "unknown command"},
		{[]string{"lab", "nope"}, "unknown command"},
		{[]string{"drill", "redis://127.0.0.1:1", "--failover"}, "--failover needs a redis+sentinel:// URL"},
		{[]string{"drill", "redis://127.0.0.1:1", "--duration", "-1s"}, "--duration must be positive"},
		{[]string{"lab", "up", "--master-name", "a b"}, "--master-name"},
	} {
		out := mustRun(t, ctx, nil, exitUsage, tc.args...)
		contains(t, out, tc.want)
	}
	for _, args := range [][]string{
		{"--help"}, {"check", "--help"}, {"probe", "--help"}, {"health", "--help"}, {"ring", "--help"}, {"ring", "print", "--help"},
		{"ring", "owner", "--help"}, {"ring", "join", "--help"}, {"drill", "--help"}, {"lab", "up", "--help"}, {"demo", "--help"},
	} {
		out := mustRun(t, ctx, nil, exitOK, args...)
		contains(t, out, "Usage:")
	}
}

// waitForLast waits until the last line of a "ring join" says s.
func (r *running) waitForLast(t *testing.T, s string) {
	t.Helper()
	r.waitUntil(t, "print "+strconv.Quote(s)+" last", func() bool { return strings.Contains(r.lastLine(), s) })
}

// lastLine is the last complete line of output.
func (r *running) lastLine() string {
	lines := strings.Split(strings.TrimRight(r.out.String(), "\n"), "\n")
	return lines[len(lines)-1]
}

// owns reports whether a "ring join"'s last line lists the item.
func (r *running) owns(item string) bool {
	_, items, _ := strings.Cut(r.lastLine(), ": ")
	for _, it := range strings.Fields(items) {
		if it == item {
			return true
		}
	}
	return false
}

// The environment's password is used but never lands in the URL: not in a
// query value with an '@' (clientName), not in a file path with one
// (caFile), so it is neither printed nor sent as the client name.
func TestEnvironmentPasswordStaysOutOfTheURL(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// A URL without a port: the socket (its path is short, as Unix
	// sockets need).
	dir, err := os.MkdirTemp("", "rk-sock-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "redis.sock")
	l := lab.New(t, lab.Config{Password: dataSecret, ExtraConfig: []string{"unixsocket " + sock, "unixsocketperm 700"}})
	env := envPasswords[:1]
	url := "unix://" + sock + "?clientName=svc@eu"

	var rep healthJSON
	runJSON(t, ctx, env, exitOK, &rep, "health", url, "--write")
	if !rep.OK || rep.State != "writable" || !strings.Contains(rep.Target, "clientName=svc%40eu") {
		t.Fatalf("health with the environment's password: %+v", rep)
	}
	out := mustRun(t, ctx, env, exitOK, "health", url)
	contains(t, out, "reachable ")

	// The name the server sees is the URL's.
	r := startRediskit(t, ctx, env, false, "ring", "join", url, "--key", "cli-env-ring", "--items", "1")
	r.waitForLast(t, "owns 1 of 1 items")
	clients, err := l.Node(0).Do(ctx, "CLIENT", "LIST").Text()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(clients, " name=svc@eu ") || strings.Contains(clients, dataSecret) {
		t.Fatalf("CLIENT LIST does not show name=svc@eu alone:\n%s", clients)
	}
	r.interrupt(t)

	// A CA file path with an '@': the error names the file as written.
	for _, args := range [][]string{
		{"health", "rediss://localhost?caFile=/nonexistent/me@corp/ca.pem"},
		{"check", "rediss://localhost?caFile=/nonexistent/me@corp/ca.pem"},
		{"health", "rediss://localhost?caFile=/nonexistent/me@corp/ca.pem", "--json"},
	} {
		out := mustRun(t, ctx, env, exitUsage, args...)
		contains(t, out, "/nonexistent/me@corp/ca.pem")
	}
}
