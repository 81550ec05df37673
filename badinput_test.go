package rediskit

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/sentinel"
)

// connsReceived is the server's count of connections accepted so far
// (INFO stats total_connections_received), read over the one connection
// of rc, which is dialled before the count is first read and so never
// counts itself twice.
func connsReceived(ctx context.Context, t *testing.T, rc *redis.Client) int {
	t.Helper()
	info, err := rc.Info(ctx, "stats").Result()
	if err != nil {
		t.Fatalf("INFO stats: %v", err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_connections_received:"); ok {
			n, err := strconv.Atoi(v)
			if err != nil {
				t.Fatalf("total_connections_received %q: %v", v, err)
			}
			return n
		}
	}
	t.Fatalf("INFO stats without total_connections_received: %q", info)
	return 0
}

// TestBadInput: every URL a constructor does not serve, and every server
// that is not what the URL says, fails with a typed error that names the
// URL without its password and says what to do; a refused URL kind dials
// nothing, and a probe dials each address at most once.
func TestBadInput(t *testing.T) {
	ctx := context.Background()
	l := lab.New(t, lab.Config{Password: secret})
	addr := l.Node(0).Addr()
	t.Logf("server: %s", l.ServerVersion())
	rc := l.Node(0).NewClient()
	t.Cleanup(func() { _ = rc.Close() })
	rc.Options().PoolSize = 1
	_ = connsReceived(ctx, t, rc) // dial rc's own connection first

	standaloneURL := "redis://:" + secret + "@" + addr
	sentinelURL := "redis+sentinel://:" + secret + "@" + addr + "/mymaster"
	clusterURL := "redis+cluster://:" + secret + "@" + addr
	unixURL := "unix://:" + secret + "@/tmp/rediskit-badinput.sock"

	asURL := func(err error) bool { var e *redisurl.Error; return errors.As(err, &e) }
	asKind := func(err error) bool { var e *KindError; return errors.As(err, &e) }
	sentinelNew := func(u string) (any, error) { return sentinel.NewClientFromURL(u, sentinel.Config{}) }
	clusterNew := func(u string) (any, error) { return cluster.NewClientFromURL(u, cluster.Config{}) }
	rediskitNew := func(k Kind) func(string) (any, error) {
		return func(u string) (any, error) { return NewClientFromURL(u, Config{Kind: k}) }
	}
	for _, tc := range []struct {
		name string
		url  string
		new  func(string) (any, error)
		// typed is errors.As to the exported type; hint a word of what to
		// do; dials the most connections the server may see.
		typed func(error) bool
		hint  string
		dials int
	}{
		{"unknown scheme/rediskit", "foo://:" + secret + "@" + addr, rediskitNew(KindAuto), asURL, "redis://", 0},
		{"unknown scheme/sentinel", "foo://:" + secret + "@" + addr, sentinelNew, asURL, "redis://", 0},
		{"unknown scheme/cluster", "foo://:" + secret + "@" + addr, clusterNew, asURL, "redis://", 0},
		{"redis+cluster to sentinel", clusterURL, sentinelNew, asURL, "cluster.NewClientFromURL", 0},
		{"redis to sentinel", standaloneURL, sentinelNew, asURL, "Config.Primary", 0},
		{"unix to sentinel", unixURL, sentinelNew, asURL, "rediskit.NewClientFromURL", 0},
		{"redis+sentinel to cluster", sentinelURL, clusterNew, asURL, "redis+cluster://", 0},
		{"unix to cluster", unixURL, clusterNew, asURL, "redis+cluster://", 0},
		{"redis+sentinel to rediskit Kind cluster", sentinelURL, rediskitNew(KindCluster), asKind, "Config.Kind", 0},
		{"redis+sentinel to rediskit Kind standalone", sentinelURL, rediskitNew(KindStandalone), asKind, "Config.Kind", 0},
		{"redis+cluster to rediskit Kind sentinel", clusterURL, rediskitNew(KindSentinel), asKind, "Config.Kind", 0},
		{"redis+cluster to rediskit Kind standalone", clusterURL, rediskitNew(KindStandalone), asKind, "Config.Kind", 0},
		{"redis to rediskit Kind sentinel", standaloneURL, rediskitNew(KindSentinel), asKind, "Config.Kind", 0},
		{"unix to rediskit Kind cluster", unixURL, rediskitNew(KindCluster), asKind, "redis+cluster://", 0},
		// A plain server given as a cluster: one probe, then refused.
		{"plain server to rediskit Kind cluster", standaloneURL, rediskitNew(KindCluster), asKind, "redis://", 1},
		{"plain server as redis+cluster", clusterURL, rediskitNew(KindAuto), asKind, "redis://", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := connsReceived(ctx, t, rc)
			c, err := tc.new(tc.url)
			if err == nil {
				if cl, ok := c.(interface{ Close() error }); ok {
					_ = cl.Close()
				}
				t.Fatalf("accepted %s", redactedURL(tc.url))
			}
			time.Sleep(50 * time.Millisecond) // let a dial in flight land in the count
			dials := connsReceived(ctx, t, rc) - before
			msg := err.Error()
			t.Logf("%s (%d dials)", msg, dials)
			if !tc.typed(err) {
				t.Errorf("%T is not the typed error: %v", err, err)
			}
			if strings.Contains(msg, secret) {
				t.Errorf("the error shows the password: %s", msg)
			}
			if s, ok := err.(interface{ String() string }); ok && strings.Contains(s.String(), secret) {
				t.Errorf("String() shows the password: %s", s.String())
			}
			if !strings.Contains(msg, tc.hint) {
				t.Errorf("the error does not say what to do (%q): %s", tc.hint, msg)
			}
			if !strings.HasPrefix(tc.url, "foo:") && !strings.HasPrefix(tc.url, "unix:") && !strings.Contains(msg, addr) {
				t.Errorf("the error does not name the URL's server %s: %s", addr, msg)
			}
			if dials > tc.dials {
				t.Errorf("%d connections made, want at most %d", dials, tc.dials)
			}
		})
	}
}

// TestBadInputStandaloneReplica: a standalone URL naming a replica makes a
// client that refuses writes with a typed error that says the server is a
// replica of its master and that writes go there. (Reads through it are
// refused too today: see the branch's report.)
func TestBadInputStandaloneReplica(t *testing.T) {
	ctx := context.Background()
	l := lab.New(t, lab.Config{Replicas: 1, Password: secret})
	t.Logf("server: %s", l.ServerVersion())
	primary, repl := l.Node(0), l.Node(1)
	if err := primary.NewClient().Set(ctx, "badinput:k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}
	c := open(t, "redis://:"+secret+"@"+repl.Addr(), Config{}, KindStandalone)
	rdb := c.Unwrap().(*sentinel.Client)
	err := rdb.Set(ctx, "badinput:w", "v", 0).Err()
	if err == nil {
		t.Fatal("a write to a replica was accepted")
	}
	msg := err.Error()
	t.Logf("write: %s", msg)
	var de *sentinel.DiscoveryError
	if !errors.As(err, &de) || de.Primary != repl.Addr() {
		t.Errorf("%T, want a *sentinel.DiscoveryError for %s: %v", err, repl.Addr(), err)
	}
	for _, want := range []string{"replica of", "writes go to the primary"} {
		if !strings.Contains(msg, want) {
			t.Errorf("the write's error does not say %q: %s", want, msg)
		}
	}
	if strings.Contains(msg, secret) || strings.Contains(strings.ToLower(msg), "sentinel") {
		t.Errorf("the write's error shows the password or speaks of sentinels: %s", msg)
	}
}
