package sentinel

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/netip"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// The caller's connection settings reach the go-redis options of the
// clients that carry the caller's commands, and none of the client's own
// (ROLE checks, probes), which keep rediskit's; NodeOptions and the
// credentials reach both.
func TestNodeAndControlOptions(t *testing.T) {
	var nodeOptionsCalls int
	o, err := Config{MasterName: "m", SentinelAddrs: []string{"a:1"},
		Username: "u", Password: "p", DB: 2, ClientName: "app",
		OnConnect: func(context.Context, *redis.Conn) error { return nil },
		Protocol:  2, Identity: true, IdentitySuffix: "svc",
		PoolFIFO: true, MaxActiveConns: 7, MaxConcurrentDials: 3,
		ConnMaxIdleTime: time.Minute, ConnMaxLifetime: time.Hour, ConnMaxLifetimeJitter: 2 * time.Minute,
		ReadBufferSize: 1 << 10, WriteBufferSize: 2 << 10,
		PipelinePoolSize: 4, PipelineReadBufferSize: 3 << 10, PipelineWriteBufferSize: 5 << 10,
		NodeOptions: func(ro *redis.Options) { nodeOptionsCalls++; ro.MaxIdleConns = 9 },
	}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	n := o.nodeOptions("a:1", dialer(&o))
	if n.OnConnect == nil || n.Protocol != 2 || n.DisableIdentity || n.IdentitySuffix != "svc" ||
		!n.PoolFIFO || n.MaxActiveConns != 7 || n.MaxConcurrentDials != 3 ||
		n.ConnMaxIdleTime != time.Minute || n.ConnMaxLifetime != time.Hour || n.ConnMaxLifetimeJitter != 2*time.Minute ||
		n.ReadBufferSize != 1<<10 || n.WriteBufferSize != 2<<10 ||
		n.PipelinePoolSize != 4 || n.PipelineReadBufferSize != 3<<10 || n.PipelineWriteBufferSize != 5<<10 {
		t.Errorf("the caller's settings did not all reach nodeOptions: %+v", n)
	}
	c := o.controlOptions("a:1")
	if c.OnConnect != nil || c.Protocol != 0 || !c.DisableIdentity || c.IdentitySuffix != "" ||
		c.PoolFIFO || c.MaxActiveConns != 0 || c.MaxConcurrentDials != 0 ||
		c.ConnMaxIdleTime != 0 || c.ConnMaxLifetime != 0 || c.ConnMaxLifetimeJitter != 0 ||
		c.ReadBufferSize != 0 || c.WriteBufferSize != 0 ||
		c.PipelinePoolSize != 0 || c.PipelineReadBufferSize != 0 || c.PipelineWriteBufferSize != 0 {
		t.Errorf("a caller's connection setting reached controlOptions: %+v", c)
	}
	for name, ro := range map[string]*redis.Options{"nodeOptions": n, "controlOptions": c} {
		if ro.Addr != "a:1" || ro.Dialer == nil || ro.Username != "u" || ro.Password != "p" || ro.DB != 2 || ro.ClientName != "app" ||
			ro.MaxRetries != -1 || ro.DialerRetries != 1 || !ro.ContextTimeoutEnabled || ro.MaxIdleConns != 9 {
			t.Errorf("%s: %+v", name, ro)
		}
	}
	if nodeOptionsCalls != 2 {
		t.Errorf("NodeOptions called %d times, want once for each", nodeOptionsCalls)
	}

	// Identity off (the default) leaves go-redis's identity off.
	o.Identity = false
	if n := o.nodeOptions("a:1", nil); !n.DisableIdentity {
		t.Error("CLIENT SETINFO on without Identity")
	}
	for _, p := range []int{1, 4, -1} {
		if _, err := (Config{MasterName: "m", SentinelAddrs: []string{"a:1"}, Protocol: p}).withDefaults(); err == nil || !strings.Contains(err.Error(), "Protocol") {
			t.Errorf("Protocol %d: %v, want an error", p, err)
		}
	}
}

// pipeConn is one end of a net.Pipe, as a Dialer through a proxy or a
// tunnel returns: its RemoteAddr is not the server's.
func pipeConn(t *testing.T) (net.Conn, net.Conn) {
	a, b := net.Pipe()
	t.Cleanup(func() { _ = a.Close(); _ = b.Close() })
	return a, b
}

// A Dialer's connection gets rediskit's checks: AllowedNetworks judges an
// IP address as given (a proxy's connection reports the proxy) and a host
// name by the peer reported, failing closed; a Dialer that fails, panics
// or returns nothing fails the dial as a *failure.DialError, unsent.
func TestDialWithCallersDialer(t *testing.T) {
	ctx := testkit.Context(t, 5*time.Second)
	errRefused := errors.New("refused by the proxy")
	tests := []struct {
		name     string
		addr     string
		dial     func(t *testing.T) (net.Conn, net.Conn, error) // the client's end, the other end
		wantErr  string
		wantIs   error
		wantOpen bool
	}{
		{name: "an allowed IP address through a proxy", addr: "10.1.2.3:6379", wantOpen: true,
			dial: func(t *testing.T) (net.Conn, net.Conn, error) { a, b := pipeConn(t); return a, b, nil }},
		{name: "an IP address outside", addr: "192.168.0.1:6379", wantErr: "outside Config.AllowedNetworks",
			dial: func(t *testing.T) (net.Conn, net.Conn, error) { a, b := pipeConn(t); return a, b, nil }},
		{name: "a host name through a proxy", addr: "redis.internal:6379", wantErr: "resolved to pipe",
			dial: func(t *testing.T) (net.Conn, net.Conn, error) { a, b := pipeConn(t); return a, b, nil }},
		{name: "the Dialer fails", addr: "10.1.2.3:6379", wantIs: errRefused,
			dial: func(*testing.T) (net.Conn, net.Conn, error) { return nil, nil, errRefused }},
		{name: "the Dialer panics", addr: "10.1.2.3:6379", wantErr: "Config.Dialer panicked: boom",
			dial: func(*testing.T) (net.Conn, net.Conn, error) { panic("boom") }},
		{name: "the Dialer returns nothing", addr: "10.1.2.3:6379", wantErr: "neither a connection nor an error",
			dial: func(*testing.T) (net.Conn, net.Conn, error) { return nil, nil, nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var other net.Conn
			var asked string
			o := Config{AllowedNetworks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")},
				Dialer: func(_ context.Context, _, addr string) (net.Conn, error) {
					asked = addr
					c, b, err := tt.dial(t)
					other = b
					return c, err
				}}
			conn, err := o.dialWith(ctx, &net.Dialer{}, "tcp", tt.addr, nil, true)
			if asked != tt.addr {
				t.Fatalf("the Dialer was asked for %q, want %q", asked, tt.addr)
			}
			if tt.wantOpen {
				if err != nil {
					t.Fatal(err)
				}
				_ = conn.Close()
				return
			}
			if err == nil {
				t.Fatal("dialled")
			}
			if !failure.IsDial(err) || !failure.NotExecuted(err) {
				t.Errorf("%v is not a dial failure", err)
			}
			if (tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr)) || (tt.wantIs != nil && !errors.Is(err, tt.wantIs)) {
				t.Fatalf("err = %v, want %q / %v", err, tt.wantErr, tt.wantIs)
			}
			if other != nil {
				// The refused connection was closed, before anything was sent.
				_ = other.SetReadDeadline(time.Now().Add(time.Second))
				if n, err := other.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
					t.Errorf("the refused connection: read %d, %v; want it closed", n, err)
				}
			}
		})
	}
}

// dialLog counts the dials a Dialer saw, by address.
type dialLog struct {
	mu    sync.Mutex
	dials map[string]int
}

func (d *dialLog) dialer() func(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := &net.Dialer{}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d.mu.Lock()
		if d.dials == nil {
			d.dials = map[string]int{}
		}
		d.dials[addr]++
		d.mu.Unlock()
		return nd.DialContext(ctx, network, addr)
	}
}

func (d *dialLog) count(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials[addr]
}

func (d *dialLog) addrs() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for a := range d.dials {
		out = append(out, a)
	}
	return out
}

// Config.Dialer opens every connection the client makes, to the
// sentinels as well as to the data nodes (NodeOptions' Dialer saw only
// the data nodes': 6 dials, and 0 to the sentinels), and composes with
// rediskit's TLS (the lab's servers speak TLS only; the Dialer returns
// plain TCP) and AllowedNetworks.
func TestDialerReachesEveryConnection(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 1, TLS: true})
	log := &dialLog{}
	c, _ := newTestClient(t, l, func(o *Config) {
		o.ReadFrom = Replica
		o.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		o.Dialer = log.dialer()
	})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "a healthy replica", func() bool { return len(c.Stats().Replicas) == 1 })
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET from the replica: %q, %v", v, err)
	}
	sub := c.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	sentinel, master, replica := l.SentinelAddrs()[0], l.Node(0).Addr(), l.Node(1).Addr()
	for _, addr := range []string{sentinel, master, replica} {
		if log.count(addr) == 0 {
			t.Errorf("no dial to %s through Config.Dialer (dials: %v)", addr, log.dials)
		}
	}
	for _, addr := range log.addrs() {
		if !slices.Contains([]string{sentinel, master, replica}, addr) {
			t.Errorf("a dial to %s, which is not a server of the lab", addr)
		}
	}
	t.Logf("dials: %v", log.dials)
}

// A hostile sentinel reached through Config.Dialer is bounded as one
// reached by rediskit's own dialer: the client's replies are checked
// whoever opened the connection.
func TestDialerConnectionsAreBounded(t *testing.T) {
	f := newFakeServer(t, func(args []string) string {
		if strings.EqualFold(args[0], "SENTINEL") {
			return "*2147483647\r\n"
		}
		if strings.EqualFold(args[0], "PSUBSCRIBE") {
			return respArray("$10\r\npsubscribe\r\n", "$1\r\n*\r\n", ":1\r\n")
		}
		return "-ERR no\r\n"
	})
	log := &dialLog{}
	var before runtime.MemStats
	runtime.ReadMemStats(&before)
	c, err := NewClient(Config{MasterName: "mymaster", SentinelAddrs: []string{f.Addr()}, Dialer: log.dialer(),
		DiscoveryTimeout: 300 * time.Millisecond, SentinelTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err = c.Ping(ctx).Err()
	if err == nil || !strings.Contains(err.Error(), f.Addr()) {
		t.Errorf("PING: %v; want an error naming the sentinel %s", err, f.Addr())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	var after runtime.MemStats
	runtime.ReadMemStats(&after)
	if log.count(f.Addr()) == 0 {
		t.Fatal("the sentinel was not dialled through Config.Dialer")
	}
	if grew, bound := int64(after.TotalAlloc-before.TotalAlloc), int64(respguard.DefaultMaxReplyBytes+64*respguard.DefaultMaxReplyElements); grew > bound {
		t.Errorf("%d bytes allocated, past respguard's bound %d", grew, bound)
	}
}

// clientList is CLIENT LIST on a node, one map of fields per connection.
func clientList(t *testing.T, ctx context.Context, n *lab.Node) []map[string]string {
	t.Helper()
	s, err := n.Do(ctx, "CLIENT", "LIST").Text()
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for line := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		m := map[string]string{}
		for _, kv := range strings.Fields(line) {
			k, v, _ := strings.Cut(kv, "=")
			m[k] = v
		}
		out = append(out, m)
	}
	return out
}

// OnConnect runs on every new connection that carries the caller's
// commands (to the master, to the replica, subscriptions), and on none of
// the client's own (the sentinels', the ROLE checks', the probes'); an
// OnConnect that fails or panics fails the caller's calls with its error,
// and leaves discovery alone.
func TestOnConnect(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 1})
	master, replica := l.Node(0), l.Node(1)

	t.Run("runs on the caller's connections", func(t *testing.T) {
		var mu sync.Mutex
		ran := map[string]bool{} // the server's address/the connection's ID
		calls := 0
		c, _ := newTestClient(t, l, func(o *Config) {
			o.ReadFrom, o.ClientName = Replica, "oc-test"
			o.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
				info, err := cn.ClientInfo(ctx).Result()
				if err != nil {
					return err
				}
				mu.Lock()
				defer mu.Unlock()
				calls++
				ran[info.LAddr+"/"+strconv.FormatInt(info.ID, 10)] = true
				return nil
			}
		})
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "a healthy replica", func() bool { return len(c.Stats().Replicas) == 1 })
		if err := c.Get(ctx, "k").Err(); err != nil {
			t.Fatal(err)
		}
		sub := c.Subscribe(ctx, "news")
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if calls != len(ran) {
			t.Errorf("OnConnect ran %d times on %d connections", calls, len(ran))
		}
		for conn := range ran {
			if laddr, _, _ := strings.Cut(conn, "/"); laddr != master.Addr() && laddr != replica.Addr() {
				t.Errorf("OnConnect ran on connection %s, not to a data node", conn)
			}
		}
		var callers, own int
		for _, n := range []*lab.Node{master, replica} {
			for _, cl := range clientList(t, ctx, n) {
				if cl["name"] != "oc-test" && cl["name"] != "oc-test-probe" {
					continue
				}
				id := cl["id"]
				did := ran[cl["laddr"]+"/"+id]
				switch cl["cmd"] {
				case "set", "get", "subscribe":
					callers++
					if !did {
						t.Errorf("%s: connection %s (last command %s) did not run OnConnect", n.Addr(), id, cl["cmd"])
					}
				case "role", "ping", "info":
					own++
					if did {
						t.Errorf("%s: the client's own connection %s (last command %s) ran OnConnect", n.Addr(), id, cl["cmd"])
					}
				}
			}
		}
		if callers < 3 || own < 2 {
			t.Fatalf("%d caller's and %d own connections seen: the test proves nothing", callers, own)
		}
	})

	t.Run("an error fails the caller's calls, not discovery", func(t *testing.T) {
		errNo := errors.New("not on my connections")
		for _, tt := range []struct {
			name      string
			onConnect func(context.Context, *redis.Conn) error
			want      func(error) bool
		}{
			{"an error", func(context.Context, *redis.Conn) error { return errNo }, func(err error) bool { return errors.Is(err, errNo) }},
			{"a panic", func(context.Context, *redis.Conn) error { panic("boom") },
				func(err error) bool {
					return err != nil && strings.Contains(err.Error(), "Config.OnConnect panicked: boom")
				}},
		} {
			c, _ := newTestClient(t, l, func(o *Config) { o.OnConnect = tt.onConnect })
			err := c.Set(ctx, "k", "v", 0).Err()
			if !tt.want(err) {
				t.Errorf("%s: SET: %v", tt.name, err)
			}
			if c.Master() != master.Addr() {
				t.Errorf("%s: master %q, want %s found (the ROLE checks do not run OnConnect)", tt.name, c.Master(), master.Addr())
			}
		}
	})
}

// recordingDialer records what the client writes on each connection.
type recordingDialer struct {
	mu    sync.Mutex
	conns []*recordedConn
}

type recordedConn struct {
	net.Conn
	mu      sync.Mutex
	written bytes.Buffer
}

func (c *recordedConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.written.Write(p)
	c.mu.Unlock()
	return c.Conn.Write(p)
}

func (c *recordedConn) text() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.ToLower(c.written.String())
}

func (r *recordingDialer) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	rc := &recordedConn{Conn: conn}
	r.mu.Lock()
	r.conns = append(r.conns, rc)
	r.mu.Unlock()
	return rc, nil
}

func (r *recordingDialer) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, c := range r.conns {
		out = append(out, c.text())
	}
	return out
}

// clientID is the ID of the connection a command of c's runs on.
func clientID(t *testing.T, ctx context.Context, c interface {
	ClientID(context.Context) *redis.IntCmd
}) int64 {
	t.Helper()
	id, err := c.ClientID(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// The connection settings of the caller's data-node connections, against
// a real master: Protocol, Identity, ConnMaxLifetime and ConnMaxIdleTime,
// PoolFIFO, MaxActiveConns.
func TestConnectionSettings(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Config{Sentinels: 1})
	master := l.Node(0)

	t.Run("Protocol", func(t *testing.T) {
		for _, tt := range []struct{ protocol, want int }{{0, 3}, {2, 2}, {3, 3}} {
			name := "proto-" + strconv.Itoa(tt.protocol)
			c, _ := newTestClient(t, l, func(o *Config) { o.Protocol, o.ClientName = tt.protocol, name })
			info, err := c.Do(ctx, "CLIENT", "INFO").Text()
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(info, " resp="+strconv.Itoa(tt.want)) {
				t.Errorf("Protocol %d: CLIENT INFO says %q, want resp=%d", tt.protocol, info, tt.want)
			}
			if err := c.HSet(ctx, "h:"+name, "f", "v").Err(); err != nil {
				t.Fatal(err)
			}
			if m, err := c.HGetAll(ctx, "h:"+name).Result(); err != nil || m["f"] != "v" {
				t.Errorf("Protocol %d: HGETALL = %v, %v", tt.protocol, m, err)
			}
			// The client's own connections keep RESP3.
			own := 0
			for _, cl := range clientList(t, ctx, master) {
				if cl["name"] == name && cl["cmd"] == "role" {
					own++
					if cl["resp"] != "3" {
						t.Errorf("Protocol %d: the client's own connection speaks RESP%s", tt.protocol, cl["resp"])
					}
				}
			}
			if own == 0 {
				t.Errorf("Protocol %d: no ROLE connection of the client's seen", tt.protocol)
			}
		}
	})

	t.Run("Identity", func(t *testing.T) {
		for _, tt := range []struct {
			name     string
			identity bool
		}{{"off, the default", false}, {"on", true}} {
			rec := &recordingDialer{}
			c, _ := newTestClient(t, l, func(o *Config) { o.Identity, o.IdentitySuffix, o.Dialer = tt.identity, "svc", rec.dial })
			if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatalf("%s: SET: %v", tt.name, err) // Redis 7.0 refuses CLIENT SETINFO; go-redis goes on
			}
			sent, callers := 0, 0
			for _, text := range rec.texts() {
				setinfo := strings.Contains(text, "setinfo")
				if strings.Contains(text, "\r\nset\r\n") {
					callers++
				}
				if setinfo {
					sent++
					if !strings.Contains(text, "go-redis(svc,") {
						t.Errorf("%s: CLIENT SETINFO without the suffix: %q", tt.name, text)
					}
					for _, own := range []string{"\r\nrole\r\n", "\r\nsentinel\r\n", "\r\nping\r\n"} {
						if strings.Contains(text, own) {
							t.Errorf("%s: CLIENT SETINFO on a connection of the client's own (%q)", tt.name, text)
						}
					}
				}
			}
			if callers == 0 {
				t.Fatalf("%s: no caller's connection recorded", tt.name)
			}
			if tt.identity != (sent > 0) {
				t.Errorf("%s: CLIENT SETINFO sent on %d connections", tt.name, sent)
			}
		}
	})

	t.Run("lifetimes", func(t *testing.T) {
		for _, tt := range []struct {
			name    string
			mod     func(*Config)
			wait    time.Duration
			wantNew bool
		}{
			{"no limit", func(*Config) {}, 400 * time.Millisecond, false},
			{"ConnMaxLifetime, within it", func(o *Config) { o.ConnMaxLifetime = 2 * time.Second }, 100 * time.Millisecond, false},
			{"ConnMaxLifetime, past it", func(o *Config) { o.ConnMaxLifetime = 300 * time.Millisecond }, 400 * time.Millisecond, true},
			{"ConnMaxIdleTime, past it", func(o *Config) { o.ConnMaxIdleTime = 300 * time.Millisecond }, 400 * time.Millisecond, true},
		} {
			c, _ := newTestClient(t, l, tt.mod)
			first := clientID(t, ctx, c)
			time.Sleep(tt.wait)
			if again := clientID(t, ctx, c); (again != first) != tt.wantNew {
				t.Errorf("%s: connection %d, then %d after %v", tt.name, first, again, tt.wait)
			}
		}
	})

	t.Run("PoolFIFO", func(t *testing.T) {
		for _, fifo := range []bool{false, true} {
			c, _ := newTestClient(t, l, func(o *Config) { o.PoolFIFO = fifo })
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			// Two connections, released A then B.
			a, b := c.Conn(), c.Conn()
			idA, idB := clientID(t, ctx, a), clientID(t, ctx, b)
			if idA == idB {
				t.Fatal("one connection for two Conns")
			}
			_ = a.Close()
			_ = b.Close()
			want := idB // LIFO: the last released
			if fifo {
				want = idA // FIFO: the first released
			}
			if got := clientID(t, ctx, c); got != want {
				t.Errorf("PoolFIFO %v: the next command ran on %d, want %d (A %d, B %d)", fifo, got, want, idA, idB)
			}
		}
	})

	t.Run("MaxActiveConns", func(t *testing.T) {
		c, _ := newTestClient(t, l, func(o *Config) { o.MaxActiveConns, o.PoolSize, o.ClientName = 2, 10, "active-test" })
		if err := c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		// One call at a time, each once the one before is blocked on the
		// master: go-redis v9.23 counts a connection against the bound
		// only once it is open, so concurrent dials can overshoot it by
		// one (see Config.MaxActiveConns).
		const calls = 4
		errs := make([]error, calls)
		took := make([]time.Duration, calls)
		var wg sync.WaitGroup
		var blocked atomic.Int32
		blpops := func() int {
			n := 0
			for _, cl := range clientList(t, ctx, master) {
				if cl["name"] == "active-test" && cl["cmd"] == "blpop" {
					n++
				}
			}
			blocked.Store(max(blocked.Load(), int32(n)))
			return n
		}
		for i := range calls {
			wg.Go(func() {
				began := time.Now()
				errs[i] = c.BLPop(ctx, time.Second, "nothing:"+strconv.Itoa(i)).Err()
				took[i] = time.Since(began)
			})
			if i < 2 {
				testkit.WaitFor(t, 2*time.Second, "the BLPOP blocked on the master", func() bool { return blpops() == i+1 })
			} else {
				time.Sleep(50 * time.Millisecond)
			}
		}
		blpops()
		wg.Wait()
		var timedOut, exhausted int
		for i, err := range errs {
			switch {
			case errors.Is(err, redis.Nil):
				timedOut++
			case errors.Is(err, redis.ErrPoolExhausted):
				exhausted++
				if took[i] > 900*time.Millisecond {
					t.Errorf("an exhausted call took %v: it should fail at once", took[i])
				}
			default:
				t.Errorf("BLPOP: %v", err)
			}
		}
		if timedOut != 2 || exhausted != 2 || blocked.Load() != 2 {
			t.Fatalf("%d BLPOPs ran (%d seen blocked), %d refused: want 2 and 2 (errors %v)", timedOut, blocked.Load(), exhausted, errs)
		}
	})
}
