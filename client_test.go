package rediskit

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/sentinel"
)

const secret = "s3cret-Pa55"

// open makes a client for rawURL and closes it when the test ends; it
// checks the kind chosen and that no password shows in String or Stats.
func open(t *testing.T, rawURL string, cfg Config, want Kind) Client {
	t.Helper()
	start := time.Now()
	c, err := NewClientFromURL(rawURL, cfg)
	if err != nil {
		t.Fatalf("NewClientFromURL(%s): %v", redactedURL(rawURL), err)
	}
	t.Logf("NewClient: %v (%s)", time.Since(start), c)
	t.Cleanup(func() { _ = c.Close() })
	if c.Kind() != want || c.Stats().Kind != want {
		t.Fatalf("%s: Kind %v (Stats %v), want %v", c, c.Kind(), c.Stats().Kind, want)
	}
	if s := c.String(); strings.Contains(s, secret) || !strings.Contains(s, want.String()) {
		t.Fatalf("String %q: want the kind, without the password", s)
	}
	if s := fmt.Sprintf("%+v", c.Stats()); strings.Contains(s, secret) {
		t.Fatalf("Stats show the password: %s", s)
	}
	return c
}

func redactedURL(raw string) string {
	if u, err := redisurl.Parse(raw); err == nil {
		return u.Redacted()
	}
	return "(unparsable URL)"
}

// roundTrip writes and reads back a key of its own.
func roundTrip(ctx context.Context, t *testing.T, c Client, key string) {
	t.Helper()
	if err := c.Set(ctx, key, "v-"+key, 0).Err(); err != nil {
		t.Fatalf("%s: SET %s: %v", c, key, err)
	}
	if got, err := c.Get(ctx, key).Result(); err != nil || got != "v-"+key {
		t.Fatalf("%s: GET %s = %q, %v", c, key, got, err)
	}
}

// connectionsReceived reads the server's count of accepted connections
// on rc's own (already open) connection.
func connectionsReceived(ctx context.Context, t *testing.T, rc *redis.Client) int {
	t.Helper()
	info, err := rc.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_connections_received:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("no total_connections_received in INFO stats")
	return 0
}

// TestSentinelURLs: a Sentinel deployment over TLS with an ACL user, from
// its URL, and with the credentials and TLS given in the Config instead:
// a sentinel.Client, with durable writes confirmed by the replica.
func TestSentinelURLs(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 1, TLS: true, Username: "app", Password: secret})
	t.Logf("server %s", l.ServerVersion())
	bare, err := redisurl.Parse(l.URL())
	if err != nil {
		t.Fatal(err)
	}
	bare.Username, bare.Password, bare.CAFile = "", "", ""
	events := make(chan Event, 64)
	observe := func(e Event) {
		select {
		case events <- e:
		default:
		}
	}
	for _, tt := range []struct {
		name string
		url  string
		cfg  Config
	}{
		{"URL with everything", l.URL(), Config{Durable: true, Observer: observe}},
		{"credentials and TLS in the Config", bare.URL(), Config{Durable: true, Username: "app", Password: secret, TLSConfig: l.TLSConfig()}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := open(t, tt.url, tt.cfg, KindSentinel)
			if _, ok := c.Unwrap().(*sentinel.Client); !ok {
				t.Fatalf("Unwrap is %T", c.Unwrap())
			}
			roundTrip(ctx, t, c, "sentinel-"+tt.name)
			// Durable reached the typed client: the write was confirmed
			// by the replica the master lists.
			st := c.Stats()
			typed := st.Typed.(sentinel.Stats)
			if len(st.Masters) != 1 || len(typed.DurableReplicas) != 1 || st.WritesNotDurable != 0 {
				t.Fatalf("Stats %+v: want one master and the durable write confirmed by one replica", st)
			}
			if tt.cfg.Observer == nil {
				return
			}
			// The Observer sees the typed client's events: the replica
			// found at start.
			wait, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			for {
				select {
				case e := <-events:
					if _, ok := e.Typed.(sentinel.Event); !ok || e.Topology != KindSentinel || e.String() == "" {
						t.Fatalf("event %+v", e)
					}
					if e.Kind == sentinel.EventReplicasChanged.String() {
						return
					}
				case <-wait.Done():
					t.Fatal("no replicas-changed event")
				}
			}
		})
	}
	// A wrong kind is refused before any dial, naming the URL without
	// its password.
	_, err = NewClientFromURL(l.URL(), Config{Kind: KindCluster})
	var ke *KindError
	if !errors.As(err, &ke) || ke.Got != KindSentinel || strings.Contains(err.Error(), secret) {
		t.Fatalf("a sentinel URL as a cluster: %v", err)
	}
}

// TestClusterURLs: every way of naming a cluster gives a cluster.Client:
// redis+cluster://, go-redis's redis://h1?addr=h2, a redis:// seed (found
// by the probe), and a redis:// seed with Kind forced; writes spread over
// the shards' masters.
func TestClusterURLs(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Config{Shards: 2, Password: secret})
	t.Logf("server %s", l.ServerVersion())
	addrs := l.ClusterAddrs()
	seed := "redis://:" + secret + "@" + addrs[0]
	for _, tt := range []struct {
		name, url string
		cfg       Config
		why       string
	}{
		{"redis+cluster", "redis+cluster://:" + secret + "@" + strings.Join(addrs, ","), Config{}, "from the URL"},
		{"go-redis form", l.URL(), Config{}, "from the URL"},
		{"redis:// seed", seed, Config{}, "detected"},
		{"redis:// seed, kind forced", seed, Config{Kind: KindCluster}, "Config.Kind"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := open(t, tt.url, tt.cfg, KindCluster)
			if _, ok := c.Unwrap().(*cluster.Client); !ok {
				t.Fatalf("Unwrap is %T", c.Unwrap())
			}
			if !strings.Contains(c.String(), tt.why) {
				t.Fatalf("String %q: want it to say %q", c, tt.why)
			}
			for i := range 20 {
				roundTrip(ctx, t, c, fmt.Sprintf("cluster-%s-%d", tt.name, i))
			}
			st := c.Stats()
			var writing int
			for _, n := range st.Nodes {
				if n.Writes > 0 {
					writing++
				}
			}
			if len(st.Masters) != 2 || writing != 2 {
				t.Fatalf("Stats %+v: want 2 masters, both written to", st)
			}
			// The root package's per-call options reach the cluster
			// client: a durable write with no replica is refused unsent,
			// a read that must go to a replica finds none.
			var nde *cluster.NotDurableError
			if err := c.Set(WithDurable(ctx, true), "cluster-durable", "1", 0).Err(); !errors.As(err, &nde) || !nde.NotSent {
				t.Fatalf("WithDurable(true) with no replica: %v, want a *cluster.NotDurableError, not run", err)
			}
			var nre *cluster.NoReplicaError
			if err := c.Get(WithReadFrom(ctx, Replica), "cluster-durable").Err(); !errors.As(err, &nre) {
				t.Fatalf("WithReadFrom(Replica) with no replica: %v, want a *cluster.NoReplicaError", err)
			}
		})
	}
}

// TestStandaloneServerURLs: a redis:// seed that is a standalone server is
// refused as a cluster with one probe (one connection); a multidb client
// over its redis:// and unix:// URLs routes to the highest weight; a seed
// that does not answer is a *DetectError at once.
func TestStandaloneServerURLs(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	dir, err := os.MkdirTemp("", "rk") // short: a socket path has at most 107 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	sock := filepath.Join(dir, "redis.sock")
	l := lab.New(t, lab.Config{Password: secret, ExtraConfig: []string{"unixsocket " + sock, "unixsocketperm 700"}})
	t.Logf("server %s", l.ServerVersion())
	addr := l.Node(0).Addr()
	tcpURL := "redis://:" + secret + "@" + addr
	unixURL := "unix://:" + secret + "@" + sock

	t.Run("cluster seed that is not a cluster", func(t *testing.T) {
		rc := l.Node(0).NewClient()
		defer func() { _ = rc.Close() }()
		before := connectionsReceived(ctx, t, rc)
		for _, tt := range []struct {
			url string
			cfg Config
		}{
			{"redis+cluster://:" + secret + "@" + addr, Config{}},
			{tcpURL, Config{Kind: KindCluster}},
		} {
			_, err := NewClientFromURL(tt.url, tt.cfg)
			var ke *KindError
			if !errors.As(err, &ke) || ke.Want != KindCluster || ke.Got != KindStandalone || strings.Contains(err.Error(), secret) ||
				!strings.Contains(err.Error(), "not a cluster node") {
				t.Fatalf("%s as a cluster: %v, want a *KindError saying it is not a cluster node, without the password", redactedURL(tt.url), err)
			}
		}
		if got := connectionsReceived(ctx, t, rc) - before; got != 2 {
			t.Fatalf("the server accepted %d connections for two refused URLs, want one probe each", got)
		}
	})

	t.Run("standalone", func(t *testing.T) {
		c, err := NewClientFromURL(tcpURL, Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		sc, ok := c.Unwrap().(*sentinel.Client)
		if c.Kind() != KindStandalone || !ok || !strings.Contains(c.String(), "standalone primary="+addr) || strings.Contains(c.String(), secret) {
			t.Fatalf("%s: kind %v, typed %T", c, c.Kind(), c.Unwrap())
		}
		roundTrip(ctx, t, c, "standalone")
		if st := c.Stats(); !slices.Equal(st.Masters, []string{addr}) || sc.Master() != addr {
			t.Fatalf("Stats %+v: want the server as the one master", st)
		}
		// A guarantee of the routed client: a durable write with no
		// replica to confirm it is refused unsent.
		d, err := NewClientFromURL(tcpURL, Config{Durable: true, Kind: KindStandalone})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		var nde *sentinel.NotDurableError
		if err := d.Set(ctx, "durable", "1", 0).Err(); !errors.As(err, &nde) || !nde.NotSent {
			t.Fatalf("a durable write without a replica: %v, want a *NotDurableError, not sent", err)
		}
		if n, err := l.Node(0).Do(ctx, "EXISTS", "durable").Int(); err != nil || n != 0 {
			t.Fatalf("the refused durable write ran: %d, %v", n, err)
		}
		// The per-call options reach the standalone client, whichever
		// package's function made the context: durable on a plain
		// client is refused unsent, durable off on a durable client
		// writes, and a read that must go to a replica finds none.
		for _, tt := range []struct {
			name    string
			durable func(context.Context, bool) context.Context
		}{{"rediskit", WithDurable}, {"sentinel", sentinel.WithDurable}, {"cluster", cluster.WithDurable}} {
			if err := c.Set(tt.durable(ctx, true), "durable", "1", 0).Err(); !errors.As(err, &nde) || !nde.NotSent {
				t.Fatalf("%s.WithDurable(true) on a plain client: %v, want a *NotDurableError, not sent", tt.name, err)
			}
			if err := d.Set(tt.durable(ctx, false), "not-durable-"+tt.name, "1", 0).Err(); err != nil {
				t.Fatalf("%s.WithDurable(false) on a durable client: %v", tt.name, err)
			}
		}
		var nre *sentinel.NoReplicaError
		if err := c.Get(WithReadFrom(ctx, Replica), "standalone").Err(); !errors.As(err, &nre) {
			t.Fatalf("WithReadFrom(Replica) with no replica: %v, want a *NoReplicaError", err)
		}
	})

	t.Run("unix", func(t *testing.T) {
		// A unix socket alone: the standalone client, its primary reached
		// over the socket, with the same routing and typed errors.
		c, err := NewClientFromURL(unixURL, Config{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		sc, ok := c.Unwrap().(*sentinel.Client)
		if !ok || c.Kind() != KindStandalone || strings.Contains(c.String(), secret) {
			t.Fatalf("%s: kind %v, typed %T", c, c.Kind(), c.Unwrap())
		}
		roundTrip(ctx, t, c, "unix")
		if sc.Master() != sock || sc.Options().Network != "unix" {
			t.Fatalf("master %q over %q: want the socket %s", sc.Master(), sc.Options().Network, sock)
		}
		// The commands went over the socket: the server counts a unix
		// connection (CLIENT LIST shows it with addr /path:0).
		list, err := l.Node(0).Do(ctx, "CLIENT", "LIST").Text()
		if err != nil || !strings.Contains(list, sock) {
			t.Fatalf("CLIENT LIST (%v) shows no connection over %s:\n%s", err, sock, list)
		}
		// A connection lost before a write is sent re-sends it; one lost
		// after may have run and says so (the same rules as over TCP):
		// the server's restart is covered by TestStandaloneRestart; here,
		// a write after CLIENT KILL of the client's connections is sent
		// again on a new connection, as it provably was not executed or
		// is reported typed.
		if err := l.Node(0).Do(ctx, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes").Err(); err != nil {
			t.Fatal(err)
		}
		err = c.Set(ctx, "after-kill", "1", 0).Err()
		var ne *sentinel.NodeError
		if err != nil && (!errors.As(err, &ne) || ne.Addr != sock || strings.Contains(err.Error(), secret)) {
			t.Fatalf("a write after its connection was killed: %v, want success or a *NodeError naming the socket", err)
		}
		if err := c.Set(ctx, "after-kill", "2", 0).Err(); err != nil {
			t.Fatalf("the next write: %v", err)
		}
	})

	t.Run("multidb", func(t *testing.T) {
		c, err := NewClient(Config{Databases: []Database{
			{Name: "unix", URL: unixURL, Weight: 1},
			{Name: "tcp", URL: tcpURL, Weight: 2},
		}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		if c.Kind() != KindMultiDB || strings.Contains(c.String(), secret) {
			t.Fatalf("%s: kind %v", c, c.Kind())
		}
		if _, ok := c.Unwrap().(*multidb.Client); !ok {
			t.Fatalf("Unwrap is %T", c.Unwrap())
		}
		roundTrip(ctx, t, c, "multidb")
		st := c.Stats()
		typed := st.Typed.(multidb.Stats)
		if !slices.Equal(st.Masters, []string{"tcp"}) || typed.Active != "tcp" {
			t.Fatalf("Stats %+v: want the heavier database active", st)
		}
	})

	t.Run("cached", func(t *testing.T) {
		// Config.Cache reaches the client of every URL kind: a standalone
		// server and a multidb client over it serve repeated reads from
		// the cache, and another client's write ends the entry.
		other := l.Node(0).NewClient()
		defer func() { _ = other.Close() }()
		for _, tt := range []struct {
			name string
			cfg  Config
		}{
			{"standalone", Config{URL: tcpURL, Cache: &clientcache.Config{}}},
			{"multidb", Config{Databases: []Database{{Name: "tcp", URL: tcpURL, Weight: 1}}, Cache: &clientcache.Config{}}},
		} {
			c, err := NewClient(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = c.Close() })
			key := "cached-" + tt.name
			if err := other.Set(ctx, key, "1", 0).Err(); err != nil {
				t.Fatal(err)
			}
			cached := clientcache.WithTTL(ctx, time.Minute)
			// The node's tracking starts with its first cached read:
			// reads are cached once it is up.
			for c.Stats().Cache.Hits == 0 {
				if got, err := c.Get(cached, key).Result(); err != nil || got != "1" {
					t.Fatalf("%s: GET = %q, %v", tt.name, got, err)
				}
				if ctx.Err() != nil {
					t.Fatalf("%s: no read served from the cache: Stats %+v", tt.name, c.Stats().Cache)
				}
				time.Sleep(5 * time.Millisecond)
			}
			if err := other.Set(ctx, key, "2", 0).Err(); err != nil {
				t.Fatal(err)
			}
			for c.Get(cached, key).Val() != "2" {
				if ctx.Err() != nil {
					t.Fatalf("%s: the write by another client never ended the entry: Stats %+v", tt.name, c.Stats().Cache)
				}
				time.Sleep(time.Millisecond)
			}
			if st := c.Stats().Cache; st.Invalidations == 0 || st.Entries == 0 {
				t.Fatalf("%s: Stats().Cache %+v: want the invalidation counted and the new value cached", tt.name, st)
			}
		}
	})

	t.Run("unreachable seed", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		closed := ln.Addr().String()
		_ = ln.Close()
		start := time.Now()
		_, err = NewClientFromURL("redis://:"+secret+"@"+closed, Config{})
		var de *DetectError
		if !errors.As(err, &de) || de.Addr != closed || strings.Contains(err.Error(), secret) ||
			!strings.Contains(err.Error(), "NoClusterDetection") {
			t.Fatalf("an unreachable seed: %v, want a *DetectError naming it and how to skip the probe", err)
		}
		if d := time.Since(start); d > DefaultDetectTimeout+time.Second {
			t.Fatalf("refused after %v: the probe is bounded by %v", d, DefaultDetectTimeout)
		}
	})
}
