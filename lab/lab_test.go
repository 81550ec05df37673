//go:build unix

package lab

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/testkit"
)

func pingNode(ctx context.Context, t *testing.T, n *Node) {
	t.Helper()
	c := n.NewClient()
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING %s at %s: %v", n.Name(), n.Addr(), err)
	}
}

func TestTopologiesStartAndAnswer(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
	}{
		{"standalone", Standalone()},
		{"replicated", Replicated(2)},
		{"sentinel", Sentinel(2)},
		{"sentinel-proxied", Config{Replicas: 1, Sentinels: 3, Proxy: true}},
		{"password", Config{Replicas: 1, Sentinels: 1, Password: "data-secret", SentinelPassword: "sentinel-secret"}},
		{"acl-user", Config{Replicas: 1, Sentinels: 1, Username: "app", Password: "app-secret",
			SentinelUsername: "watcher", SentinelPassword: "watcher-secret"}},
		{"tls", Config{Replicas: 1, Sentinels: 3, TLS: true, Proxy: true}},
		{"tls-client-auth", Config{Replicas: 1, TLS: true, TLSClientAuth: true}},
		{"partitions", Config{Replicas: 1, Sentinels: 3, Partitions: true}},
		{"partitions-tls-password", Config{Replicas: 1, Sentinels: 3, Partitions: true, TLS: true,
			Password: "data-secret", SentinelPassword: "sentinel-secret"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testkit.Context(t, 30*time.Second)
			l := New(t, tt.cfg)
			if got, want := len(l.Nodes()), tt.cfg.Replicas+1; got != want {
				t.Fatalf("%d nodes, want %d", got, want)
			}
			for _, n := range l.Nodes() {
				pingNode(ctx, t, n)
			}
			master, err := l.Master(ctx)
			if err != nil || master != l.Node(0) {
				t.Fatalf("Master() = %v, %v; want node0", master, err)
			}
			for _, n := range l.Nodes()[1:] {
				r, err := n.Role(ctx)
				if err != nil || r.Role != "slave" || r.MasterAddr != master.Addr() || r.LinkState != "connected" {
					t.Fatalf("%s ROLE = %+v, %v", n.Name(), r, err)
				}
			}
			if len(l.Sentinels()) != tt.cfg.Sentinels {
				t.Fatalf("%d sentinels, want %d", len(l.Sentinels()), tt.cfg.Sentinels)
			}
			for _, s := range l.Sentinels() {
				addr, err := s.MasterAddr(ctx)
				if err != nil || addr != master.Addr() {
					t.Fatalf("%s names %q (%v), want %s", s.Name(), addr, err, master.Addr())
				}
			}
			var b strings.Builder
			if err := l.Describe(ctx, &b); err != nil {
				t.Fatal(err)
			}
			for _, secret := range []string{tt.cfg.Password, tt.cfg.SentinelPassword} {
				if secret != "" && strings.Contains(b.String()+l.Redacted(), secret) {
					t.Fatalf("Describe or Redacted shows a password:\n%s", b.String())
				}
			}
		})
	}
}

func TestCredentialsAreEnforced(t *testing.T) {
	ctx := testkit.Context(t, 20*time.Second)
	l := New(t, Config{Replicas: 0, Sentinels: 1, Username: "app", Password: "app-secret",
		SentinelPassword: "sentinel-secret"})

	// The default user is disabled: a password without the username fails.
	opts := l.Node(0).Options()
	opts.Username = ""
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("PING without the ACL username succeeded")
	}
	// A sentinel refuses a client without its password.
	sc := redis.NewClient(&redis.Options{Addr: l.SentinelAddrs()[0], MaxRetries: -1})
	defer sc.Close()
	if err := sc.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("sentinel without password: %v, want NOAUTH", err)
	}
}

func TestTLSWithoutCAFails(t *testing.T) {
	ctx := testkit.Context(t, 20*time.Second)
	l := New(t, Config{TLS: true})
	opts := l.Node(0).Options()
	opts.TLSConfig.RootCAs = nil // trust the system roots only
	c := redis.NewClient(opts)
	defer c.Close()
	err := c.Ping(ctx).Err()
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("PING without the lab CA: %v, want a certificate error", err)
	}
}

func TestExtraConfig(t *testing.T) {
	ctx := testkit.Context(t, 20*time.Second)
	l := New(t, Config{
		ExtraConfig: []string{"maxmemory 1mb", "maxmemory-policy noeviction"},
		Nodes:       []NodeConfig{{ExtraConfig: []string{"hz 20"}}},
	})
	c := l.Node(0).NewClient()
	defer c.Close()
	cfg, err := c.ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"maxmemory": "1048576", "maxmemory-policy": "noeviction", "hz": "20"} {
		if cfg[k] != want {
			t.Errorf("CONFIG GET %s = %q, want %q", k, cfg[k], want)
		}
	}
}

// The injected delay shows in the measured PING round trip (±20%).
func TestInjectedLatencyShowsInPing(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := New(t, Config{Replicas: 1, Nodes: []NodeConfig{{Latency: 20 * time.Millisecond}}})
	master, replica := l.Node(0), l.Node(1)
	replica.SetLatency(42 * time.Millisecond)

	for _, tc := range []struct {
		node *Node
		rtt  time.Duration
	}{{master, 20 * time.Millisecond}, {replica, 42 * time.Millisecond}} {
		c := tc.node.NewClient()
		if err := c.Ping(ctx).Err(); err != nil { // connect first
			t.Fatal(err)
		}
		best := time.Hour
		for i := 0; i < 10; i++ {
			start := time.Now()
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			best = min(best, time.Since(start))
		}
		_ = c.Close()
		lo, hi := tc.rtt*8/10, tc.rtt*12/10
		if best < lo || best > hi {
			t.Errorf("%s: PING RTT %v with %v injected, want within ±20%%", tc.node.Name(), best, tc.rtt)
		}
	}
}

func TestBlackHoledNodeTimesOut(t *testing.T) {
	ctx := testkit.Context(t, 20*time.Second)
	l := New(t, Config{Proxy: true})
	n := l.Node(0)
	opts := n.Options()
	opts.ReadTimeout = 200 * time.Millisecond
	c := redis.NewClient(opts)
	defer c.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	n.BlackHole()
	start := time.Now()
	err := c.Ping(ctx).Err()
	if !failure.Timeout(err) {
		t.Fatalf("PING to a black-holed node: %v, want a timeout", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("timed out after %v, want about the 200ms read timeout", took)
	}
	n.Restore()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after Restore: %v", err)
	}
}

func TestKillRestartPauseResume(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := New(t, Config{Proxy: true})
	n := l.Node(0)
	c := n.NewClient()
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	oldPID := n.PID()
	if err := n.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(oldPID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("pid %d still exists after Kill: %v", oldPID, err)
	}
	if err := c.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Fatalf("PING to a killed node: %v, want connection refused", err)
	}
	if err := n.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if n.PID() == oldPID || n.PID() == 0 {
		t.Fatalf("PID after restart = %d (was %d)", n.PID(), oldPID)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after restart: %v", err)
	}

	if err := n.Pause(); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	err := c.Ping(short).Err()
	cancel()
	if err == nil {
		t.Fatal("a paused node answered")
	}
	if err := n.Resume(); err != nil {
		t.Fatal(err)
	}
	// The timed-out connection was dropped; a new one works.
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after resume: %v", err)
	}
}

func TestReplicaOfAndPriority(t *testing.T) {
	// 90 s: a machine that stalls the sentinels for 2 s or more puts them
	// in TILT mode for 30 s, and the topology settles only after it (seen
	// once in CI at load 5 on 2 cores, both servers' passes running).
	ctx := testkit.Context(t, 90*time.Second)
	l := New(t, Config{Replicas: 2, Sentinels: 3,
		Nodes: []NodeConfig{{}, {ReplicaPriority: 100}, {ReplicaPriority: 10}}})

	res, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.NewMaster != l.Node(2) {
		t.Fatalf("Sentinel promoted %s, want node2 (lowest replica-priority)", res.NewMaster.Name())
	}
	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}

	// Without sentinels, ReplicaOf and Promote rewire a replicated lab.
	r := New(t, Replicated(1))
	if err := r.Node(1).Promote(ctx); err != nil {
		t.Fatal(err)
	}
	if err := r.Node(0).ReplicaOf(ctx, r.Node(1)); err != nil {
		t.Fatal(err)
	}
	if err := r.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}
	if m, err := r.Master(ctx); err != nil || m != r.Node(1) {
		t.Fatalf("Master() = %v, %v; want node1", m, err)
	}
	info, err := r.Node(0).ReplicationInfo(ctx)
	if err != nil || info["role"] != "slave" || info["master_link_status"] != "up" {
		t.Fatalf("INFO replication of node0 = %v, %v", info, err)
	}
}

func TestFailoverMovesMasterAndSentinelsAgree(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := New(t, Config{Replicas: 1, Sentinels: 3, Proxy: true, Password: "pw", SentinelPassword: "spw"})
	old := l.Node(0)

	res, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.OldMaster != old || res.NewMaster != l.Node(1) {
		t.Fatalf("failover %v -> %v, want node0 -> node1", res.OldMaster.Name(), res.NewMaster.Name())
	}
	for _, s := range l.Sentinels() {
		addr, err := s.MasterAddr(ctx)
		if err != nil || addr != res.NewMaster.Addr() {
			t.Fatalf("%s names %s (%v), want %s", s.Name(), addr, err, res.NewMaster.Addr())
		}
		if _, ok := res.SwitchMaster[s.Addr()]; !ok {
			t.Fatalf("no +switch-master from %s in %v", s.Addr(), res.SwitchMaster)
		}
	}
	if r, err := res.NewMaster.Role(ctx); err != nil || r.Role != "master" {
		t.Fatalf("new master ROLE = %+v, %v", r, err)
	}
	t.Logf("failover agreed %v after the request; +switch-master per sentinel after the request: %s",
		res.Duration().Round(time.Millisecond), sinceRequest(res))

	// Sentinel then demotes the old master; the lab waits for that.
	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}
	if r, err := old.Role(ctx); err != nil || r.Role != "slave" || r.MasterAddr != res.NewMaster.Addr() {
		t.Fatalf("old master ROLE = %+v, %v; want replica of the new master", r, err)
	}
	ev, err := l.WaitEvent(ctx, res.Requested, EventType("+convert-to-slave"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ev.Payload, old.Addr()) {
		t.Fatalf("+convert-to-slave names %q, want the old master %s", ev.Payload, old.Addr())
	}
	t.Logf("+convert-to-slave of the old master %v after the request", ev.At.Sub(res.Requested).Round(time.Millisecond))

	// A second failover right after goes back.
	res2, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res2.NewMaster != old {
		t.Fatalf("second failover promoted %s, want node0", res2.NewMaster.Name())
	}
}

func TestSentinelKillAndRestart(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"plain", Sentinel(1)},
		// The sentinels sit behind proxies: a killed one's refuses
		// connections, and the restarted sentinel keeps its own address
		// and announcements from the config it rewrote.
		{"partitions", Config{Replicas: 1, Sentinels: DefaultSentinels, Partitions: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t, 30*time.Second)
			l := New(t, tc.cfg)
			s := l.Sentinels()[0]
			if err := s.Kill(); err != nil {
				t.Fatal(err)
			}
			if _, err := s.MasterAddr(ctx); err == nil {
				t.Fatal("a killed sentinel answered")
			}
			if _, err := net.DialTimeout("tcp", s.Addr(), time.Second); !failure.Refused(err) {
				t.Fatalf("dial a killed sentinel at %s: %v, want connection refused", s.Addr(), err)
			}
			if m, err := l.Master(ctx); err != nil || m != l.Node(0) {
				t.Fatalf("Master() with one sentinel down = %v, %v", m, err)
			}
			if err := s.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if addr, err := s.MasterAddr(ctx); err != nil || addr != l.Node(0).Addr() {
				t.Fatalf("restarted sentinel names %q, %v", addr, err)
			}
			if len(l.Sentinels()) > 1 {
				if err := l.WaitSettled(ctx); err != nil {
					t.Fatal(err)
				}
				if err := poll(ctx, "the restarted sentinel's peers to list it", func() error {
					for _, peer := range l.Sentinels() {
						if err := peer.checkPeers(ctx, l.Sentinels()); err != nil {
							return err
						}
					}
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			// Events from the restarted sentinel are still recorded.
			since := time.Now()
			if err := l.Node(1).Kill(); err != nil {
				t.Fatal(err)
			}
			if _, err := l.WaitEvent(ctx, since, func(ev SentinelEvent) bool {
				return ev.Sentinel == s.Addr() && ev.Type == "+sdown"
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCloseStopsEveryProcess(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l, err := Start(ctx, Config{Replicas: 2, Sentinels: 3, Proxy: true})
	if err != nil {
		t.Fatal(err)
	}
	pids := l.PIDs()
	if len(pids) != 6 {
		t.Fatalf("%d PIDs, want 6", len(pids))
	}
	if err := l.Node(1).Pause(); err != nil { // a stopped process must die too
		t.Fatal(err)
	}
	start := time.Now()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	t.Logf("Close took %v", time.Since(start))
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("pid %d still exists after Close: %v", pid, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestStartErrors(t *testing.T) {
	ctx := testkit.Context(t, 10*time.Second)
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{Replicas: -1}, "negative"},
		{Config{Sentinels: 3, Quorum: 4}, "Quorum"},
		{Config{Username: "u"}, "Password"},
		{Config{TLSClientAuth: true}, "TLS"},
		{Config{RedisServer: "/nonexistent/redis-server"}, "not found"},
		{Config{Server: ServerKind(99)}, "Config.Server"},
	} {
		_, err := Start(ctx, tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Start(%+v) = %v, want an error about %q", tc.cfg, err, tc.want)
		}
	}
}

// Passwords with spaces, quotes, a backslash or a '#' reach Redis as one
// value each: the servers start, replicate and are monitored with them,
// and only the whole password is accepted.
func TestPasswordsWithSpacesAndQuotes(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"requirepass", Config{Replicas: 1, Sentinels: 3, Password: `my secret "pw"`, SentinelPassword: `sentinel pass\word`}},
		{"acl-users", Config{Replicas: 1, Sentinels: 1, Username: "app", Password: `my secret "pw"`,
			SentinelUsername: "watcher", SentinelPassword: "sentinel # pass"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t, 30*time.Second)
			l := New(t, tc.cfg)
			for _, n := range l.Nodes() {
				pingNode(ctx, t, n)
			}
			opts := l.Node(0).Options()
			opts.Password = "my"
			c := redis.NewClient(opts)
			defer c.Close()
			if err := c.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
				t.Fatalf("PING with the password's first word: %v, want WRONGPASS", err)
			}
			// A sentinel restarted on the config it rewrote itself still
			// authenticates to the nodes and its peers.
			s := l.Sentinels()[0]
			if err := s.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := s.Restart(ctx); err != nil {
				t.Fatal(err)
			}
			if err := l.WaitSettled(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A start that fails shows the servers' log tails, with the passwords
// replaced: Redis quotes the config line it refuses, and a line of the
// caller's own may hold a password, as given or in config-file quoting.
func TestFailedStartHidesPasswords(t *testing.T) {
	const pw, spw = `my secret "pw"`, `sentinel pass\word`
	for _, cfg := range []Config{
		{Password: pw, ExtraConfig: []string{"masterauth " + pw}},
		{Password: pw, ExtraConfig: []string{"masterauth " + confQuote(pw) + " again"}},
		{Sentinels: 1, Password: pw, SentinelPassword: spw,
			SentinelExtraConfig: []string{"sentinel sentinel-pass " + confQuote(spw) + " again"}},
	} {
		ctx := testkit.Context(t, 20*time.Second)
		_, err := Start(ctx, cfg)
		if err == nil {
			t.Fatalf("Start(%+v) succeeded, want a refused config", cfg)
		}
		msg := err.Error()
		if !strings.Contains(msg, "FATAL CONFIG FILE ERROR") || !strings.Contains(msg, "xxxxx") {
			t.Fatalf("the error lacks the server's redacted log tail:\n%s", msg)
		}
		for _, secret := range []string{pw, spw, `my secret \"pw\"`, `sentinel pass\\word`, "my secret", `pass\`} {
			if strings.Contains(msg, secret) {
				t.Fatalf("the error shows a password (%q):\n%s", secret, msg)
			}
		}
	}
}

// takenPort is a port another listener holds for the test's duration.
func takenPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().(*net.TCPAddr).Port
}

// A port taken between freePort and the server's bind: Start stops what it
// started and starts the whole topology again on fresh ports, so every
// config names the ports the servers really have.
func TestStartAgainWhenAPortIsTaken(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	taken := takenPort(t)
	var mu sync.Mutex
	picks := 0
	// Attempt 1: node0 (pick 1) finds its port taken. Attempt 2 (picks
	// 3-4 for the nodes, 5-7 for the sentinels): sentinel0 does. Attempt
	// 3 gets free ports.
	pick := func(host netip.Addr) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		picks++
		if picks == 1 || picks == 5 {
			return taken, nil
		}
		return freePort(host)
	}
	l, err := startWith(ctx, Config{Replicas: 1, Sentinels: 3}, pick)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if picks != 12 {
		t.Fatalf("%d ports picked, want 12 (three attempts)", picks)
	}
	for _, s := range l.servers() {
		if s.port == taken {
			t.Fatalf("%s runs on the taken port", s.name)
		}
	}
	r, err := l.Node(1).Role(ctx)
	if err != nil || r.MasterAddr != l.Node(0).Addr() || r.LinkState != "connected" {
		t.Fatalf("node1 ROLE = %+v, %v; want a replica of %s", r, err, l.Node(0).Addr())
	}
	for _, s := range l.Sentinels() {
		if err := s.checkPeers(ctx, l.Sentinels()); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing from the first two attempts is left running.
	running, err := ProcessesIn(l.Dir())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(running)
	pids := l.PIDs()
	slices.Sort(pids)
	if !slices.Equal(running, pids) {
		t.Fatalf("processes in the lab's directory %v, want the lab's own %v", running, pids)
	}
	// The lab works: a failover is agreed on by all three sentinels.
	if _, err := l.Failover(ctx); err != nil {
		t.Fatal(err)
	}
}

// The kernel can hand the port it just freed to the next bind, and a
// server of another lab can hold the port picked for this one. Neither may
// make a lab start with a server that is not its own: a repeated pick is
// picked again, and a server whose port answers with another process's
// PID makes the topology start again on fresh ports.
func TestStartWithRepeatedAndForeignPorts(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	other := New(t, Standalone())
	foreign := other.Node(0).port
	var mu sync.Mutex
	picks, repeated := 0, 0
	pick := func(host netip.Addr) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		picks++
		switch picks {
		case 2: // node1, attempt 1: node0's port again
			return repeated, nil
		case 3: // node1 again, attempt 1: another lab's server
			return foreign, nil
		}
		port, err := freePort(host)
		if picks == 1 {
			repeated = port
		}
		return port, err
	}
	l, err := startWith(ctx, Config{Replicas: 1}, pick)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if picks != 5 {
		t.Errorf("%d ports picked, want 5 (node0, node1 thrice in attempt 1; both again in attempt 2)", picks)
	}
	if l.Node(0).port == l.Node(1).port || l.Node(1).port == foreign || l.Node(0).port == foreign {
		t.Fatalf("ports: node0 %d, node1 %d, the other lab's %d", l.Node(0).port, l.Node(1).port, foreign)
	}
	for _, n := range l.Nodes() {
		info, err := n.Do(ctx, "INFO", "server").Text()
		if err != nil || ParseInfo(info)["process_id"] != strconv.Itoa(n.PID()) {
			t.Fatalf("%s: INFO server process_id %q (%v), want %d", n.Name(), ParseInfo(info)["process_id"], err, n.PID())
		}
	}
	r, err := l.Node(1).Role(ctx)
	if err != nil || r.MasterAddr != l.Node(0).Addr() || r.LinkState != "connected" {
		t.Fatalf("node1 ROLE = %+v, %v; want a replica of %s", r, err, l.Node(0).Addr())
	}
}

// A port that stays taken: Start gives up after three attempts with the
// port-in-use error and leaves no process behind.
func TestStartGivesUpOnATakenPort(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	taken := takenPort(t)
	picks := 0
	dir := t.TempDir()
	_, err := startWith(ctx, Config{Dir: dir}, func(netip.Addr) (int, error) { picks++; return taken, nil })
	if !errors.Is(err, errPortInUse) || picks != maxStartAttempts {
		t.Fatalf("Start with every port taken: %v after %d picks; want the port-in-use error after %d", err, picks, maxStartAttempts)
	}
	if !strings.Contains(err.Error(), "node0 could not listen on 127.0.0.1:"+strconv.Itoa(taken)) {
		t.Fatalf("the error does not say which server could not listen where: %v", err)
	}
	if left, err := ProcessesIn(dir); err != nil || len(left) != 0 {
		t.Fatalf("processes left in the lab's directory: %v (%v)", left, err)
	}
}

// Status is what Describe prints: each server's role as it is now, with
// Redis's "slave" written "replica".
func TestStatusAndDescribe(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := New(t, Config{Replicas: 2, Sentinels: 1, Nodes: []NodeConfig{{}, {Latency: 5 * time.Millisecond}}})
	if err := l.Node(1).Pause(); err != nil {
		t.Fatal(err)
	}
	if err := l.Node(2).Kill(); err != nil {
		t.Fatal(err)
	}
	rows := l.Status(ctx)
	if err := l.Node(1).Resume(); err != nil {
		t.Fatal(err)
	}
	want := []ServerStatus{
		{Name: "node0", Role: "master", Addr: l.Node(0).Addr(), Server: l.Node(0).DirectAddr(), PID: l.Node(0).PID(), Shard: -1},
		{Name: "node1", Role: "paused", Addr: l.Node(1).Addr(), Server: l.Node(1).DirectAddr(), PID: l.Node(1).PID(), Latency: 5 * time.Millisecond, Shard: -1},
		{Name: "node2", Role: "down", Addr: l.Node(2).Addr(), Server: l.Node(2).DirectAddr(), Shard: -1},
		{Name: "sentinel0", Role: "sentinel", Addr: l.SentinelAddrs()[0], Server: l.SentinelAddrs()[0], PID: l.Sentinels()[0].PID(), Shard: -1},
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("Status:\n%+v\nwant\n%+v", rows, want)
	}
	if rows := l.Status(ctx); rows[1].Role != "replica" {
		t.Fatalf("node1 after Resume: %+v, want a replica", rows[1])
	}
	var b strings.Builder
	if err := l.Describe(ctx, &b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 || !strings.HasPrefix(lines[5], "URL: redis+sentinel://") {
		t.Fatalf("Describe:\n%s", b.String())
	}
	for i, r := range l.Status(ctx) {
		latency := r.Latency.String()
		if r.Role == "sentinel" {
			latency = "-"
		}
		if got := strings.Fields(lines[i+1]); !slices.Equal(got, []string{r.Name, r.Role, r.Addr, r.Server, strconv.Itoa(r.PID), latency}) {
			t.Errorf("Describe line %q, want the row %+v", lines[i+1], r)
		}
	}
}

// WriteStatus adds a SHARD column only when a row is in a cluster: a
// Sentinel lab's table is the one it has always been, byte for byte.
func TestStatusShardColumn(t *testing.T) {
	sentinelRows := []ServerStatus{
		{Name: "node0", Role: "master", Addr: "127.0.0.1:38707", Server: "127.0.0.1:34365", PID: 3702, Shard: -1},
		{Name: "node1", Role: "replica", Addr: "127.0.0.1:36513", Server: "127.0.0.1:46829", PID: 3700, Latency: 42 * time.Millisecond, Shard: -1},
		{Name: "sentinel0", Role: "sentinel", Addr: "127.0.0.1:36549", Server: "127.0.0.1:36549", PID: 3720, Shard: -1},
	}
	clusterRows := []ServerStatus{
		{Name: "node0", Role: "master", Addr: "127.0.0.1:38707", Server: "127.0.0.1:34365", PID: 3702, Shard: 0},
		{Name: "node1", Role: "replica", Addr: "127.0.0.1:36513", Server: "127.0.0.1:46829", PID: 3700, Latency: 5 * time.Millisecond, Shard: 0},
		{Name: "node2", Role: "down", Addr: "127.0.0.1:36549", Server: "127.0.0.1:36550", Shard: 1},
		{Name: "node3", Role: "master", Addr: "127.0.0.1:45323", Server: "127.0.0.1:45324", PID: 3719, Shard: 1},
	}
	for _, tc := range []struct {
		name string
		rows []ServerStatus
		want string
	}{
		{"sentinel lab", sentinelRows, "" +
			"NODE       ROLE      ADDR             SERVER           PID   LATENCY\n" +
			"node0      master    127.0.0.1:38707  127.0.0.1:34365  3702  0s\n" +
			"node1      replica   127.0.0.1:36513  127.0.0.1:46829  3700  42ms\n" +
			"sentinel0  sentinel  127.0.0.1:36549  127.0.0.1:36549  3720  -\n"},
		{"cluster", clusterRows, "" +
			"NODE   SHARD  ROLE     ADDR             SERVER           PID   LATENCY\n" +
			"node0  0      master   127.0.0.1:38707  127.0.0.1:34365  3702  0s\n" +
			"node1  0      replica  127.0.0.1:36513  127.0.0.1:46829  3700  5ms\n" +
			"node2  1      down     127.0.0.1:36549  127.0.0.1:36550  0     0s\n" +
			"node3  1      master   127.0.0.1:45323  127.0.0.1:45324  3719  0s\n"},
		{"a row outside the cluster", append(clusterRows[:1:1], sentinelRows[2]), "" +
			"NODE       SHARD  ROLE      ADDR             SERVER           PID   LATENCY\n" +
			"node0      0      master    127.0.0.1:38707  127.0.0.1:34365  3702  0s\n" +
			"sentinel0  -      sentinel  127.0.0.1:36549  127.0.0.1:36549  3720  -\n"},
		{"no rows", nil, "NODE  ROLE  ADDR  SERVER  PID  LATENCY\n"},
	} {
		var b strings.Builder
		if err := WriteStatus(&b, tc.rows); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s: WriteStatus wrote\n%s\nwant\n%s", tc.name, b.String(), tc.want)
		}
	}
}

// A cluster lab's Status gives each node its shard, and Describe adds the
// SHARD column, the cluster's shape and each shard's master, which follows
// a failover.
func TestStatusCluster(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := New(t, Cluster(2, 1))
	rows := l.Status(ctx)
	var got []string
	for _, r := range rows {
		got = append(got, r.Name+" "+strconv.Itoa(r.Shard)+" "+r.Role)
	}
	if want := []string{"node0 0 master", "node1 0 replica", "node2 1 master", "node3 1 replica"}; !slices.Equal(got, want) {
		t.Fatalf("Status: %q, want %q", got, want)
	}
	if _, err := l.ClusterFailover(ctx, 1, FailoverGraceful); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := l.Describe(ctx, &b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 7 || !strings.HasPrefix(lines[0], "NODE   SHARD  ROLE ") || !strings.HasPrefix(lines[6], "URL: redis://") ||
		lines[5] != "Cluster: 2 shards × 1 replica each; masters: shard 0 node0, shard 1 node3" {
		t.Fatalf("Describe:\n%s", b.String())
	}
	for i, r := range l.Status(ctx) {
		want := []string{r.Name, strconv.Itoa(r.Shard), r.Role, r.Addr, r.Server, strconv.Itoa(r.PID), r.Latency.String()}
		if got := strings.Fields(lines[i+1]); !slices.Equal(got, want) {
			t.Errorf("Describe line %q, want the row %+v", lines[i+1], r)
		}
	}
}

// sinceRequest lists each sentinel's +switch-master as the time after the
// failover request, earliest first.
func sinceRequest(res FailoverResult) string {
	var ds []time.Duration
	for _, at := range res.SwitchMaster {
		ds = append(ds, at.Sub(res.Requested).Round(time.Millisecond))
	}
	slices.Sort(ds)
	var parts []string
	for _, d := range ds {
		parts = append(parts, d.String())
	}
	return strings.Join(parts, ", ")
}

// TestServerKind checks how a lab picks its server: Config.Server, else
// ServerEnv, else Redis; an unknown ServerEnv value is an error, not a
// silent Redis.
func TestServerKind(t *testing.T) {
	for _, tc := range []struct {
		server   ServerKind
		env      string
		want     ServerKind
		wantBins [2]string
	}{
		{ServerAuto, "", ServerRedis, [2]string{"redis-server", "redis-sentinel"}},
		{ServerAuto, "valkey", ServerValkey, [2]string{"valkey-server", "valkey-sentinel"}},
		{ServerAuto, " Redis ", ServerRedis, [2]string{"redis-server", "redis-sentinel"}},
		{ServerRedis, "valkey", ServerRedis, [2]string{"redis-server", "redis-sentinel"}},
		{ServerValkey, "", ServerValkey, [2]string{"valkey-server", "valkey-sentinel"}},
	} {
		t.Setenv(ServerEnv, tc.env)
		c := Config{Server: tc.server}.withDefaults()
		if c.Server != tc.want || c.RedisServer != tc.wantBins[0] || c.RedisSentinel != tc.wantBins[1] {
			t.Errorf("Server %v, $%s=%q: got %v (%s, %s), want %v %v", tc.server, ServerEnv, tc.env,
				c.Server, c.RedisServer, c.RedisSentinel, tc.want, tc.wantBins)
		}
	}
	t.Setenv(ServerEnv, "keydb")
	_, err := Start(testkit.Context(t, 5*time.Second), Config{})
	if err == nil || !strings.Contains(err.Error(), "keydb") || !strings.Contains(err.Error(), ServerEnv) {
		t.Errorf("Start with $%s=keydb: %v, want an error naming both", ServerEnv, err)
	}
	if k, err := ParseServerKind("VALKEY"); err != nil || k != ServerValkey || k.String() != "valkey" {
		t.Errorf("ParseServerKind(VALKEY) = %v, %v", k, err)
	}
}

// TestServerVersion checks that ServerVersion reports what the lab runs:
// the kind its Config resolved to, version 7.0 or newer.
func TestServerVersion(t *testing.T) {
	l := New(t, Standalone())
	v := l.ServerVersion()
	t.Logf("lab runs %s", v)
	if v.Name != l.Config().Server.String() || !v.AtLeast(7, 0) {
		t.Errorf("ServerVersion = %+v, want %v 7.0 or newer", v, l.Config().Server)
	}
}

// TestFreePortBelowEphemeralRange: where the kernel's ephemeral range
// leaves room below it, a lab server's port is picked there, so that no
// outgoing connection can take it while a test has its server down.
func TestFreePortBelowEphemeralRange(t *testing.T) {
	low, ok := ephemeralLow()
	if !ok || low-stablePortFloor < 1000 {
		t.Skipf("no room below the ephemeral range (%d, %v)", low, ok)
	}
	for range 20 {
		port, err := freePort(netip.MustParseAddr("127.0.0.1"))
		if err != nil {
			t.Fatal(err)
		}
		if port < stablePortFloor || port >= low {
			t.Fatalf("port %d, want one in [%d, %d)", port, stablePortFloor, low)
		}
	}
}

// TestPortShare: the Redis and Valkey passes of make test pick their
// servers' ports from halves of the range that do not meet.
func TestPortShare(t *testing.T) {
	for _, tt := range []struct {
		env      string
		from, to int
	}{{"", 10000, 21384}, {"redis", 10000, 21384}, {"valkey", 21384, 32768}, {"VALKEY", 21384, 32768}} {
		t.Setenv(ServerEnv, tt.env)
		if from, to := portShare(10000, 32768); from != tt.from || to != tt.to {
			t.Errorf("%s=%q: [%d, %d), want [%d, %d)", ServerEnv, tt.env, from, to, tt.from, tt.to)
		}
	}
}
