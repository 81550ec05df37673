package multidb

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestRoutesToHighestWeight checks that every kind of call goes to the
// highest-weight database and nowhere else.
func TestRoutesToHighestWeight(t *testing.T) {
	nodes := standalone(t, 3, lab.Standalone())
	c, log := newClient(t, fast(Config{}), nodes, 1, 10, 5)
	ctx := testkit.Context(t, 10*time.Second)

	if got := c.Active(); got != "db1" {
		t.Fatalf("active %q, want db1 (weight 10)", got)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Fatalf("GET = %q, %v", v, err)
	}
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "n")
		p.Incr(ctx, "n")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Incr(ctx, "n")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(ctx, func(tx *redis.Tx) error {
		n, err := tx.Get(ctx, "n").Int()
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "n", n*10, 0)
			return nil
		})
		return err
	}, "n"); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Do(ctx, "GET", "n").Text(); err != nil || v != "30" {
		t.Fatalf("Do GET n = %q, %v; want 30", v, err)
	}
	for i, n := range nodes {
		want := map[bool]string{true: "v", false: ""}[i == 1]
		if got := get(t, n, "k"); got != want {
			t.Errorf("db%d has k=%q, want %q", i, got, want)
		}
	}
	if st := c.PoolStats(); st.TotalConns == 0 {
		t.Error("PoolStats sums no connection")
	}
	if s := c.String(); !strings.Contains(s, "active=db1") || !strings.Contains(s, "db1(weight 10, closed)") {
		t.Errorf("String() = %s", s)
	}
	// The first choice is reported as an activation, not a switch, and
	// nothing else changed.
	log.flush(t, c)
	if act := log.of(EventActivated); len(act) != 1 || act[0].Old != "" || act[0].New != "db1" {
		t.Errorf("activations %v, want one, of db1", act)
	}
	if sw := log.switches(); len(sw) != 0 || c.Stats().Switches != 0 {
		t.Errorf("switches %v (Stats.Switches %d), want none", sw, c.Stats().Switches)
	}
	// Health checks run on every database.
	testkit.WaitFor(t, 5*time.Second, "every database checked", func() bool {
		for _, d := range c.Stats().Databases {
			if !d.Checked || !d.Healthy || d.LastProbeLatency <= 0 || d.State != Closed {
				return false
			}
		}
		return true
	})
	if got := c.Stats().Databases; got[0].Name != "db1" || got[1].Name != "db2" || got[2].Name != "db0" {
		t.Errorf("stats order %s %s %s, want db1 db2 db0 (by weight)", got[0].Name, got[1].Name, got[2].Name)
	}
}

// TestAllocationsMatchGoRedis checks that routing a GET, found or
// missing, allocates at most one object more than a plain go-redis client
// to the active database. A miss (redis.Nil) is every cache miss: telling
// it from a failure must not cost allocations.
func TestAllocationsMatchGoRedis(t *testing.T) {
	nodes := standalone(t, 2, lab.Standalone())
	c, _ := newClient(t, Config{}, nodes, 10, 5)
	ctx := testkit.Context(t, 10*time.Second)
	plain := redis.NewClient(clientOptions(opts(nodes[0])))
	defer plain.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	get := func(ctx context.Context, cl redis.UniversalClient) error { return cl.Get(ctx, "k").Err() }
	benchcmp.AllocsAtMost(t, ctx, "GET k", c, plain, 1, get)
	benchcmp.AllocsAtMost(t, ctx, "GET of a missing key", c, plain, 1, benchcmp.GetMiss)
}

// TestReplyErrorsAreNotFailures checks that only connection errors and
// timeouts count: a WRONGTYPE reply, redis.Nil and the caller's own
// deadline do not trip even a breaker set to trip at the first failure.
func TestReplyErrorsAreNotFailures(t *testing.T) {
	nodes := standalone(t, 2, lab.Standalone())
	c, log := newClient(t, fast(Config{ConsecutiveFailures: 1, MinFailures: 1}), nodes, 10, 5)
	ctx := testkit.Context(t, 10*time.Second)
	if err := c.LPush(ctx, "list", "x").Err(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := c.Get(ctx, "list").Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
			t.Fatalf("GET on a list = %v, want WRONGTYPE", err)
		}
		if err := c.Get(ctx, "missing").Err(); !errors.Is(err, redis.Nil) {
			t.Fatalf("GET missing = %v, want redis.Nil", err)
		}
		expired, cancel := context.WithTimeout(ctx, time.Nanosecond)
		<-expired.Done()
		err := c.BLPop(expired, time.Second, "empty").Err()
		cancel()
		if err == nil {
			t.Fatal("BLPOP under an expired context succeeded")
		}
	}
	if c.Active() != "db0" || len(log.switches()) != 0 {
		t.Fatalf("active %s, switches %v: a reply or the caller's deadline counted as a failure", c.Active(), log.switches())
	}
	if st := stateOf(c, "db0"); st.Failures != 0 || st.State != Closed {
		t.Fatalf("db0: %d failures counted, breaker %s", st.Failures, st.State)
	}
}
