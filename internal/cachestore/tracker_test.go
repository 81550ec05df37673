package cachestore

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// cachedGet is a cached GET as a client runs one: a hit, or a read
// reserved before it is sent and filled with its reply.
func cachedGet(ctx context.Context, s *Store, n *Node, c *redis.Client, key string) (val string, hit bool, err error) {
	if v, ok := s.Get(n, key, "GET", time.Now()); ok {
		return v.(string), true, nil
	}
	tk := s.Reserve(n, key, "GET")
	val, err = c.Get(ctx, key).Result()
	if err != nil {
		s.Abandon(tk)
		return "", false, err
	}
	s.Fill(tk, val, int64(len(val)), 0, time.Now())
	return val, false, nil
}

// TestTracker runs a node's tracker against a real server: a write by
// another client invalidates the cached key; the tracking connection
// killed, black-holed, or the database flushed each stop the node's
// entries from being served, and tracking comes back by itself.
func TestTracker(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Config{Proxy: true})
	ln := l.Node(0)
	writer := ln.NewClient()
	defer writer.Close()
	reader := ln.NewClient()
	defer reader.Close()

	store := NewStore(1<<20, time.Hour)
	node := NewNode(ln.Addr())
	var fl testkit.Recorder[FlushCause]
	tr := NewTracker(TrackerConfig{Options: ln.Options(), Store: store, Node: node, OnFlush: fl.Add, Logger: slog.New(slog.NewTextHandler(testWriter{t}, nil))})
	defer tr.Close()
	testkit.WaitFor(t, 5*time.Second, "the tracking connection", func() bool { return node.Confirmed(time.Now()) })

	// cacheKey writes v to key (through another client, as another
	// process would) and reads it until it is a hit of v: until the
	// write's invalidation arrives, a read may still be served the entry
	// it replaces (the bound the package states).
	cacheKey := func(key, v string) {
		t.Helper()
		if err := writer.Set(ctx, key, v, 0).Err(); err != nil {
			t.Fatal(err)
		}
		testkit.WaitFor(t, 5*time.Second, "a cached "+key, func() bool {
			got, hit, err := cachedGet(ctx, store, node, reader, key)
			if err != nil {
				t.Fatal(err)
			}
			return hit && got == v
		})
	}
	// Invalidation: a write by another client; the first read after its
	// invalidation arrives is a miss with the new value.
	cacheKey("k", "v1")
	if err := writer.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatal(err)
	}
	acked := time.Now()
	took := testkit.WaitFor(t, 5*time.Second, "the invalidation of k", func() bool {
		_, ok := store.Get(node, "k", "GET", time.Now())
		return !ok
	})
	t.Logf("invalidation arrived %v after the write's reply", took.Round(time.Microsecond))
	if got, hit, err := cachedGet(ctx, store, node, reader, "k"); err != nil || hit || got != "v2" {
		t.Fatalf("after the invalidation: %q hit=%v %v, want v2 from the server", got, hit, err)
	}
	_ = acked

	for _, fault := range []struct {
		name  string
		cause FlushCause
		do    func()
		undo  func() // after the flush
	}{
		{"tracking connection killed", FlushConnectionLost, func() {
			if err := writer.Do(ctx, "CLIENT", "KILL", "ID", tr.connID.Load()).Err(); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"database flushed", FlushServer, func() {
			if err := writer.FlushAll(ctx).Err(); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"tracking connection black-holed", FlushHeartbeat, func() {
			// The proxy swallows everything for longer than the heartbeat's
			// timeout; the writer's connection is through it too, so the
			// write the tracker misses goes direct.
			holed := time.Now()
			ln.BlackHole()
			direct := redis.NewClient(&redis.Options{Addr: ln.DirectAddr(), Username: ln.Options().Username, Password: ln.Options().Password, TLSConfig: ln.Options().TLSConfig})
			defer direct.Close()
			if err := direct.Set(ctx, "k", "missed", 0).Err(); err != nil {
				t.Fatal(err)
			}
			// The bound, whatever the scheduling: no PING sent after the
			// hole opened is answered, so the entry is not served from
			// HeartbeatTimeout after it on.
			bound := holed.Add(clientcache.DefaultHeartbeatTimeout)
			if _, ok := store.Get(node, "k", "GET", bound); ok {
				t.Fatalf("the entry would be served %v after the black hole", clientcache.DefaultHeartbeatTimeout)
			}
			testkit.WaitFor(t, 10*time.Second, "the heartbeat to give up", func() bool { return node.until.Load() == notAlive })
			if _, ok := store.Get(node, "k", "GET", time.Now()); ok {
				t.Fatal("the entry is served after the heartbeat gave up")
			}
		}, func() {
			ln.Restore()
			ln.ResetConnections()
		}},
	} {
		t.Run(fault.name, func(t *testing.T) {
			cacheKey("k", "before")
			is := func(c FlushCause) bool { return c == fault.cause }
			before := fl.Count(is)
			fault.do()
			testkit.WaitFor(t, 10*time.Second, "the entry to stop being served", func() bool {
				_, ok := store.Get(node, "k", "GET", time.Now())
				return !ok
			})
			testkit.WaitFor(t, 10*time.Second, "a flush for "+string(fault.cause), func() bool {
				return fl.Count(is) > before
			})
			if fault.undo != nil {
				fault.undo()
			}
			// Tracking is back: a new value is cached, and invalidated.
			cacheKey("k", "after")
			if err := writer.Set(ctx, "k", "after2", 0).Err(); err != nil {
				t.Fatal(err)
			}
			testkit.WaitFor(t, 5*time.Second, "the invalidation after the fault", func() bool {
				_, ok := store.Get(node, "k", "GET", time.Now())
				return !ok
			})
		})
	}
}

// TestTrackerRefused: a server whose ACL forbids CLIENT TRACKING refuses
// caching at start, with the reason.
func TestTrackerRefused(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	ln := l.Node(0)
	admin := ln.NewClient()
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SETUSER", "notrack", "on", ">pw", "~*", "+@all", "-client|tracking").Err(); err != nil {
		t.Fatal(err)
	}
	opt := ln.Options()
	opt.Username, opt.Password = "notrack", "pw"
	err := CheckTracking(ctx, opt, nil)
	if !errors.Is(err, ErrTrackingUnavailable) {
		t.Fatalf("CheckTracking with CLIENT TRACKING forbidden: %v, want ErrTrackingUnavailable", err)
	}
	t.Log(err)
	if err := CheckTracking(ctx, ln.Options(), []string{"a:", "b:"}); err != nil {
		t.Fatalf("CheckTracking as the default user: %v", err)
	}
}

// testWriter logs through t.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
