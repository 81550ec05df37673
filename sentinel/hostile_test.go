package sentinel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// newFakeServer is a testkit.FakeServer answering each command with what
// reply returns, for the tests of what the client does with replies no
// Redis sends. HELLO gets an error, so go-redis goes on in RESP2.
func newFakeServer(t *testing.T, reply func(args []string) string) *testkit.FakeServer {
	t.Helper()
	return testkit.NewFakeServer(t, func(_ *testkit.FakeSession, args []string) string {
		if strings.EqualFold(args[0], "HELLO") {
			return "-ERR unknown command 'HELLO'\r\n"
		}
		return reply(args)
	})
}

// respFields writes field/value pairs as a RESP2 array of bulk strings.
func respFields(kv ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(kv))
	for _, s := range kv {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(s), s)
	}
	return b.String()
}

func respArray(items ...string) string {
	return fmt.Sprintf("*%d\r\n%s", len(items), strings.Join(items, ""))
}

// masterFields is a SENTINEL MASTER reply naming host:port.
func masterFields(host, port string) string {
	return respFields("name", "mymaster", "ip", host, "port", port, "flags", "master", "config-epoch", "0", "quorum", "2")
}

// A sentinel whose replies declare sizes no server would send, or that
// go-redis cannot read, costs an error naming it, not the process: no
// crash, memory within respguard's bound, a bounded call and a prompt
// Close (a "$2147483647" header made the process grow to 4 GiB and Close
// take 3.8-8.8 s; an array of 2^31-1 elements killed it).
func TestHostileSentinelReplies(t *testing.T) {
	for _, tt := range hostileReplies() {
		t.Run(tt.name, func(t *testing.T) {
			for _, cmd := range []string{"SENTINEL", "PSUBSCRIBE"} {
				f := newFakeServer(t, func(args []string) string {
					if strings.EqualFold(args[0], cmd) {
						return tt.reply
					}
					if strings.EqualFold(args[0], "PSUBSCRIBE") {
						return respArray("$10\r\npsubscribe\r\n", "$1\r\n*\r\n", ":1\r\n")
					}
					return "-ERR no\r\n"
				})
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				c, err := NewClient(Config{MasterName: "mymaster", SentinelAddrs: []string{f.Addr()},
					DiscoveryTimeout: 300 * time.Millisecond, SentinelTimeout: 300 * time.Millisecond})
				if err != nil {
					t.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				began := time.Now()
				err = c.Ping(ctx).Err()
				took := time.Since(began)
				cancel()
				if err == nil {
					t.Fatalf("%s to %s: PING answered", tt.reply[:min(len(tt.reply), 20)], cmd)
				}
				if cmd == "SENTINEL" && !strings.Contains(err.Error(), f.Addr()) {
					t.Errorf("the error does not name the bad sentinel %s: %v", f.Addr(), err)
				}
				if cmd == "SENTINEL" && len(err.Error()) > 4096 {
					t.Errorf("a %d-byte error", len(err.Error()))
				}
				time.Sleep(200 * time.Millisecond) // the watcher meets the reply too
				began = time.Now()
				if err := c.Close(); err != nil {
					t.Fatal(err)
				}
				closed := time.Since(began)
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				grew := int64(after.TotalAlloc - before.TotalAlloc)
				t.Logf("%s: PING failed in %v (%v), Close took %v, %d KiB allocated", cmd, took.Round(time.Millisecond), err, closed.Round(time.Millisecond), grew>>10)
				if took > 1500*time.Millisecond || closed > time.Second {
					t.Errorf("PING took %v and Close %v", took, closed)
				}
				if bound := int64(respguard.DefaultMaxReplyBytes + 64*respguard.DefaultMaxReplyElements); grew > bound {
					t.Errorf("%d bytes allocated, past respguard's bound %d", grew, bound)
				}
			}
		})
	}
}

// A sentinel that names malformed addresses gets its answer refused,
// with an error naming it and what it said, and nothing dialled: ":" was
// dialled 18-19 times a call (to 0.0.0.0:0), and ports -1, 0 and 70000 as
// given.
func TestMalformedAddressesAreNotDialled(t *testing.T) {
	tests := []struct{ name, reply, want string }{
		{"empty host and port", masterFields("", ""), "no host"},
		{"port -1", masterFields("127.0.0.1", "-1"), "port"},
		{"port 0", masterFields("127.0.0.1", "0"), "port"},
		{"port 70000", masterFields("127.0.0.1", "70000"), "port"},
		{"a host with a space", masterFields("10.0.0.1 x", "6379"), "byte"},
		{"an integer for the table", ":42\r\n", ""},
		{"an empty array", "*0\r\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each waits out its DiscoveryTimeout
			f := newFakeServer(t, func(args []string) string {
				if strings.EqualFold(args[0], "SENTINEL") {
					return tt.reply
				}
				return "-ERR no\r\n"
			})
			var dials atomic.Int32
			c, err := NewClient(Config{MasterName: "mymaster", SentinelAddrs: []string{f.Addr()},
				// Room for a starved machine: the check is on the error, and
				// the fake sentinel answers at once when it gets the CPU (at
				// load 10-20 a write to it took past the 500 ms default; in
				// CI's two -race passes at load 6, past 1 s).
				DiscoveryTimeout: 6 * time.Second, SentinelTimeout: 5 * time.Second, SentinelPollInterval: -1,
				NodeOptions: func(o *redis.Options) {
					next := o.Dialer
					o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
						dials.Add(1)
						return next(ctx, network, addr)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err = c.Set(ctx, "k", "v", 0).Err()
			var de *DiscoveryError
			if !errors.As(err, &de) || !strings.Contains(err.Error(), f.Addr()) {
				t.Fatalf("SET: %v; want a DiscoveryError naming %s", err, f.Addr())
			}
			var ae *AddressError
			if tt.want != "" && (!errors.As(err, &ae) || ae.Source != f.Addr() || !strings.Contains(ae.Reason, tt.want)) {
				t.Fatalf("SET: %v; want an AddressError from %s saying %q", err, f.Addr(), tt.want)
			}
			if n := dials.Load(); n != 0 {
				t.Fatalf("%d data-node dials to what the sentinel named", n)
			}
		})
	}
}

// AllowedNetworks keeps the client (and the credentials) from an address
// a sentinel names outside them; MapAddr translates announced addresses,
// as for NAT.
func TestAddressPolicy(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, Proxy: true, Password: "s3cret"})
	t.Run("outside AllowedNetworks", func(t *testing.T) {
		var dials atomic.Int32
		c, _ := newTestClient(t, l, func(o *Config) {
			o.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
			o.DiscoveryTimeout = 2 * time.Second // room for a starved machine
			o.NodeOptions = func(ro *redis.Options) {
				next := ro.Dialer
				ro.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
					dials.Add(1)
					return next(ctx, network, addr)
				}
			}
		})
		err := c.Set(ctx, "k", "v", 0).Err()
		var ae *AddressError
		if !errors.As(err, &ae) || !strings.Contains(ae.Reason, "AllowedNetworks") || ae.Field != "master" {
			t.Fatalf("SET: %v; want an AddressError: outside AllowedNetworks", err)
		}
		if n := dials.Load(); n != 0 {
			t.Fatalf("%d dials to a master outside AllowedNetworks", n)
		}
		if strings.Contains(err.Error(), "s3cret") {
			t.Fatal("the error quotes the password")
		}
	})
	t.Run("inside", func(t *testing.T) {
		c, _ := newTestClient(t, l, func(o *Config) {
			o.AllowedNetworks = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		})
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("MapAddr", func(t *testing.T) {
		// The nodes announce their proxies; the client is told to reach
		// them directly, as behind a NAT.
		direct := map[string]string{}
		for _, n := range l.Nodes() {
			direct[n.Addr()] = n.DirectAddr()
		}
		c, _ := newTestClient(t, l, func(o *Config) {
			o.MapAddr = func(addr string) (string, error) {
				if d, ok := direct[addr]; ok {
					return d, nil
				}
				return "", fmt.Errorf("no mapping for %s", addr)
			}
		})
		if err := c.Set(ctx, "mapped", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := c.Master(); got != l.Node(0).DirectAddr() {
			t.Fatalf("the client writes to %s, want the mapped %s", got, l.Node(0).DirectAddr())
		}
		testkit.WaitFor(t, 5*time.Second, "the replica, mapped", func() bool {
			st := c.Stats()
			return len(st.Replicas) == 1 && st.Replicas[0] == l.Node(1).DirectAddr()
		})
	})
}

// One sentinel listing a thousand peers does not make the client dial
// them: a peer is learned only when most of the sentinels list it, and
// never past MaxSentinels (a 2 s SET took 0.6-1.6 s with a thousand fake
// peers, each dialled with the sentinel password).
func TestSentinelFloodIsBounded(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	host, port, _ := net.SplitHostPort(l.Node(0).Addr())
	var fakes []string
	for i := range 1000 {
		fakes = append(fakes, respFields("name", fmt.Sprintf("fake%d", i), "ip", "127.0.0.1", "port", strconv.Itoa(20000+i), "flags", "sentinel"))
	}
	flood := newFakeServer(t, func(args []string) string {
		if !strings.EqualFold(args[0], "SENTINEL") || len(args) < 2 {
			return "-ERR no\r\n"
		}
		switch strings.ToUpper(args[1]) {
		case "MASTER":
			return masterFields(host, port)
		case "REPLICAS":
			return "*0\r\n"
		case "SENTINELS":
			return respArray(fakes...)
		}
		return "-ERR no\r\n"
	})
	t.Run("with the real sentinels", func(t *testing.T) {
		c, _ := newTestClient(t, l, func(o *Config) {
			o.SentinelAddrs = append([]string{flood.Addr()}, l.SentinelAddrs()...)
		})
		began := time.Now()
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		refreshes := c.Stats().Resolutions
		testkit.WaitFor(t, 5*time.Second, "two more refreshes", func() bool { return c.Stats().Resolutions >= refreshes+2 })
		if got := c.Stats().Sentinels; len(got) != 4 {
			t.Fatalf("the client knows %d sentinels, want the 4 configured: %v", len(got), got)
		}
		t.Logf("SET in %v", time.Since(began))
	})
	t.Run("alone", func(t *testing.T) {
		c, _ := newTestClient(t, l, func(o *Config) { o.SentinelAddrs = []string{flood.Addr()} })
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "a refresh", func() bool { return c.Stats().Resolutions >= 2 })
		if got := c.Stats().Sentinels; len(got) > DefaultMaxSentinels {
			t.Fatalf("the client knows %d sentinels, past MaxSentinels %d", len(got), DefaultMaxSentinels)
		}
		octx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		began := time.Now()
		if err := c.Set(octx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if took := time.Since(began); took > 500*time.Millisecond {
			t.Fatalf("SET took %v with a flooding sentinel", took)
		}
	})
}

// A long error from a sentinel is cut in the client's error (50 kB); one
// past respguard's line limit (100 kB) is refused as a bad server, the
// error saying so in a few hundred bytes.
func TestLongServerErrorIsCut(t *testing.T) {
	for _, tt := range []struct {
		size int
		want string
	}{{50_000, "truncated"}, {100_000, "the limit is"}} {
		t.Run(strconv.Itoa(tt.size), func(t *testing.T) {
			t.Parallel() // each waits out its DiscoveryTimeout
			long := strings.Repeat("e", tt.size)
			f := newFakeServer(t, func(args []string) string { return "-ERR " + long + "\r\n" })
			// The test is about the error's text. Discovery asks the
			// sentinel again until DiscoveryTimeout and reports its last
			// complete round: a SentinelTimeout longer than
			// DiscoveryTimeout means a round is complete only with the
			// sentinel's answer (a round cut by the deadline is not),
			// however long a busy machine takes to read 100 kB (in CI at
			// load 10-20 a retry took over 3 s; at load 6, a first
			// answer did not come within 3 s).
			c, err := NewClient(Config{MasterName: "mymaster", SentinelAddrs: []string{f.Addr()}, DiscoveryTimeout: 10 * time.Second,
				SentinelTimeout: 30 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			err = c.Ping(context.Background()).Err()
			_ = c.Close()
			if err == nil || len(err.Error()) > 2048 || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("a %d-byte error from a %d-byte reply, want %q in it: %.300s", len(fmt.Sprint(err)), tt.size, tt.want, err)
			}
		})
	}
}

// Work that fails on a node with no answer from it is a *NodeError naming
// the node and whether it may have run; checks written for go-redis's
// errors (errors.Is of the system error) keep working.
func TestNodeErrorsAreTyped(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, Proxy: true, DownAfter: 30 * time.Second})
	c, _ := newTestClient(t, l, nil)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	master := l.Node(0)
	t.Run("connection lost after sending", func(t *testing.T) {
		master.SetLatency(400 * time.Millisecond)
		defer master.SetLatency(0)
		result := make(chan error, 1)
		go func() { result <- c.Incr(ctx, "n").Err() }()
		time.Sleep(250 * time.Millisecond) // the INCR is past the proxy's first half
		master.ResetConnections()
		err := <-result
		var ne *NodeError
		if !errors.As(err, &ne) || ne.Addr != master.Addr() || ne.Role != "master" || !ne.Write || !ne.MayHaveExecuted {
			t.Fatalf("INCR on a connection reset mid-flight: %v (%T); want a NodeError on the master, may have executed", err, err)
		}
		if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) {
			t.Fatalf("errors.Is of the system error: %v", err)
		}
	})
	t.Run("no connection", func(t *testing.T) {
		master.Proxy().Suspend()
		defer func() { _ = master.Proxy().Resume() }()
		err := c.Set(ctx, "k", "v", 0).Err()
		var ne *NodeError
		if !errors.As(err, &ne) || ne.MayHaveExecuted || !failure.Refused(err) {
			t.Fatalf("SET to a master refusing connections: %v; want a NodeError, not executed, ECONNREFUSED", err)
		}
		if !strings.Contains(err.Error(), "re-running it is safe") {
			t.Fatalf("the error does not say what to do: %v", err)
		}
	})
	t.Run("a server reply stays go-redis's", func(t *testing.T) {
		if err := c.Set(ctx, "str", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		err := c.LPush(ctx, "str", "x").Err()
		var ne *NodeError
		if err == nil || errors.As(err, &ne) || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Fatalf("LPUSH on a string: %v (%T); want go-redis's WRONGTYPE reply", err, err)
		}
		if err := c.Get(ctx, "missing").Err(); err != redis.Nil {
			t.Fatalf("GET of a missing key: %v, want redis.Nil itself", err)
		}
	})
}
