package sentinel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
)

// scanFixture fills the master with 200 keys, a 1000-field hash, a
// 1000-member set and a 1000-member sorted set, and waits until both
// replicas have them.
func scanFixture(t *testing.T, ctx context.Context, l *lab.Lab) {
	t.Helper()
	m := l.Node(0).NewClient()
	defer m.Close()
	_, err := m.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 200 {
			p.Set(ctx, fmt.Sprintf("pfx:%d", i), i, 0)
		}
		for i := range 1000 {
			p.HSet(ctx, "hash", fmt.Sprintf("f%d", i), i)
			p.SAdd(ctx, "set", fmt.Sprintf("m%d", i))
			p.ZAdd(ctx, "zset", redis.Z{Score: float64(i), Member: fmt.Sprintf("z%d", i)})
		}
		p.Set(ctx, "other", "x", 0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := m.Do(ctx, "WAIT", len(l.Nodes())-1, 5000).Int(); err != nil || n != len(l.Nodes())-1 {
		t.Fatalf("WAIT: %d, %v", n, err)
	}
}

// iterate runs one iteration through it and returns the distinct elements
// (keys or fields/members) and how many it returned in all.
func iterate(ctx context.Context, it *redis.ScanIterator, pairs bool) (map[string]bool, int, error) {
	seen := map[string]bool{}
	n := 0
	for i := 0; it.Next(ctx); i++ {
		if pairs && i%2 == 1 {
			continue // HSCAN and ZSCAN return field, value, field, value...
		}
		seen[it.Val()] = true
		n++
	}
	return seen, n, it.Err()
}

// Every SCAN-family iteration returns every element, through every read
// preference and selector: each page runs on the node that issued the
// cursor (routed on its own, with two replicas sharing the reads, SCAN
// over 200 keys returned 150-155 and HSCAN over 1000 fields 761-772).
func TestScanIterationsAreComplete(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Sentinel(2))
	scanFixture(t, ctx, l)
	selectors := map[string]func() ReplicaSelector{
		"latency-aware, both replicas elected": func() ReplicaSelector {
			cfg := replica.Config{}
			cfg.LatencyWindow = time.Second // loopback: both within it
			// Not compared with the master: on a busy machine a probe
			// round can time a replica's loopback RTT above 3 × the
			// master's, and the reads then go to the master (seen at
			// load 5: no SCAN page on a replica).
			cfg.ExclusionFactor = math.Inf(1)
			sel, err := replica.NewSelector(cfg)
			if err != nil {
				t.Fatal(err)
			}
			return sel
		},
		"round-robin": NewRoundRobinSelector,
	}
	for selName, mk := range selectors {
		for _, rf := range []ReadFrom{Master, Replica, ReplicaPreferred, Nearest} {
			t.Run(selName+"/"+string(rf), func(t *testing.T) {
				c, _ := newTestClient(t, l, func(o *Config) { o.ReadFrom, o.ReplicaSelector = rf, mk() })
				testkit.WaitFor(t, 10*time.Second, "two healthy replicas", func() bool { return len(c.Stats().Replicas) == 2 })
				if rf != Master {
					// Reads spread over both replicas before the test
					// starts (the latency-aware selector reads the master
					// until its first probe round).
					testkit.WaitFor(t, 10*time.Second, "reads on both replicas", func() bool {
						for range 20 {
							_ = c.Get(ctx, "other").Err()
						}
						return calls(t, l.Node(1), "get") > 0 && calls(t, l.Node(2), "get") > 0
					})
				}
				scans := func() (n int) {
					for _, node := range l.Nodes()[1:] {
						n += calls(t, node, "scan") + calls(t, node, "hscan")
					}
					return n
				}
				before := scans()
				for _, tt := range []struct {
					name  string
					it    *redis.ScanIterator
					want  int
					pairs bool
				}{
					{"SCAN", c.Scan(ctx, 0, "pfx:*", 10).Iterator(), 200, false},
					{"HSCAN", c.HScan(ctx, "hash", 0, "", 10).Iterator(), 1000, true},
					{"SSCAN", c.SScan(ctx, "set", 0, "", 10).Iterator(), 1000, false},
					{"ZSCAN", c.ZScan(ctx, "zset", 0, "", 10).Iterator(), 1000, true},
				} {
					seen, n, err := iterate(ctx, tt.it, tt.pairs)
					if err != nil || len(seen) != tt.want {
						t.Errorf("%s: %d distinct of %d (%d returned), %v", tt.name, len(seen), tt.want, n, err)
					}
				}
				// By Do too.
				seen, cursor := map[string]bool{}, "0"
				for {
					v, err := c.Do(ctx, "SCAN", cursor, "MATCH", "pfx:*", "COUNT", 10).Slice()
					if err != nil {
						t.Fatal(err)
					}
					for _, k := range v[1].([]any) {
						seen[k.(string)] = true
					}
					if cursor = v[0].(string); cursor == "0" {
						break
					}
				}
				if len(seen) != 200 {
					t.Errorf("SCAN by Do: %d of 200 keys", len(seen))
				}
				if got := scans() - before; rf != Master && got == 0 {
					t.Fatalf("no SCAN page ran on a replica under %s", rf)
				}
			})
		}
	}
}

// An iteration keeps to its node when the election changes in the middle
// of it, and fails with a *CursorError (restart from 0), never continues
// elsewhere, when that node leaves the healthy set or the master it ran
// on is replaced.
func TestScanCursorStaysOnItsNode(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Config{Replicas: 2, Sentinels: 3, Proxy: true})
	scanFixture(t, ctx, l)
	cfg := replica.Config{}
	cfg.ProbeInterval = 100 * time.Millisecond
	sel, err := replica.NewSelector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newTestClient(t, l, func(o *Config) { o.ReadFrom, o.ReplicaSelector = Replica, sel })
	testkit.WaitFor(t, 10*time.Second, "two healthy replicas", func() bool { return len(c.Stats().Replicas) == 2 })

	// The first page, on whichever replica serves it; then its node is
	// pushed out of the election (slow) mid-iteration: the rest of the
	// pages still run there.
	keys, cursor, err := c.HScan(ctx, "hash", 0, "", 10).Result()
	if err != nil || cursor == 0 {
		t.Fatalf("first page: %v, cursor %d", err, cursor)
	}
	first := cursorNode(t, c, cursor)
	slow := l.NodeByAddr(first)
	slow.SetLatency(40 * time.Millisecond)
	testkit.WaitFor(t, 10*time.Second, "the election to leave "+first, func() bool {
		addr, done := sel.Pick(Replica)
		if done != nil {
			done()
		}
		return addr != "" && addr != first
	})
	seen := map[string]bool{}
	for i := 0; i < len(keys); i += 2 {
		seen[keys[i]] = true
	}
	for cursor != 0 {
		if keys, cursor, err = c.HScan(ctx, "hash", cursor, "", 10).Result(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < len(keys); i += 2 {
			seen[keys[i]] = true
		}
	}
	if len(seen) != 1000 {
		t.Fatalf("HSCAN across an election change: %d of 1000 fields", len(seen))
	}
	slow.SetLatency(0)

	// Its node leaves the healthy set: the next page fails, typed.
	_, cursor, err = c.SScan(ctx, "set", 0, "", 10).Result()
	if err != nil || cursor == 0 {
		t.Fatalf("first page: %v, cursor %d", err, cursor)
	}
	gone := l.NodeByAddr(cursorNode(t, c, cursor))
	if err := gone.Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "the killed replica to leave the healthy set", func() bool {
		for _, r := range c.Stats().Replicas {
			if r == gone.Addr() {
				return false
			}
		}
		return true
	})
	err = c.SScan(ctx, "set", cursor, "", 10).Err()
	var ce *CursorError
	if !errors.As(err, &ce) || !errors.Is(err, ErrCursorLost) || ce.Node != gone.Addr() {
		t.Fatalf("SSCAN with a cursor of the killed replica: %v; want a CursorError naming %s", err, gone.Addr())
	}
	if err := gone.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}

	// Reading from the master, through a failover.
	_, cursor, err = c.Scan(WithReadFrom(ctx, Master), 0, "pfx:*", 10).Result()
	if err != nil || cursor == 0 {
		t.Fatalf("first page on the master: %v, cursor %d", err, cursor)
	}
	res, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the client on the new master", func() bool { return c.Master() == res.NewMaster.Addr() })
	if err := c.Scan(WithReadFrom(ctx, Master), cursor, "pfx:*", 10).Err(); !errors.As(err, &ce) || ce.Node != res.OldMaster.Addr() {
		t.Fatalf("SCAN with a cursor of the replaced master: %v; want a CursorError naming %s", err, res.OldMaster.Addr())
	}
}

// cursorNode names the node a cursor the client handed out came from.
func cursorNode(t *testing.T, c *Client, cursor uint64) string {
	t.Helper()
	tag := cursor >> 48
	addr, ok := c.topo.nodes.addrOf(tag)
	if !ok {
		t.Fatalf("cursor %d carries no node the client knows (tag %d)", cursor, tag)
	}
	return addr
}
