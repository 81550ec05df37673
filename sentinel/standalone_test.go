package sentinel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/internal/testkit/errplace"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
)

// newPrimaryClient is newTestClient for the lab's node0 as a standalone
// primary (no Sentinel).
func newPrimaryClient(t *testing.T, l *lab.Lab, mod func(*Config)) *Client {
	t.Helper()
	return newTestClientNoSentinel(t, l, func(o *Config) {
		o.MasterName, o.SentinelAddrs = "", nil
		o.Primary = l.Node(0).Addr()
		if mod != nil {
			mod(o)
		}
	})
}

func newTestClientNoSentinel(t *testing.T, l *lab.Lab, mod func(*Config)) *Client {
	t.Helper()
	c, _ := newTestClient(t, l, mod)
	return c
}

// TestStandalonePrimary: a primary no Sentinel manages, with two replicas
// it lists in ROLE. The client finds them, sends replica reads to them,
// confirms durable writes on both (and refuses one a paused replica
// cannot confirm), and names the deployment as standalone.
func TestStandalonePrimary(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Config{Replicas: 2})
	c := newPrimaryClient(t, l, func(o *Config) {
		o.ReadFrom = Replica
		o.DurableTimeout = 300 * time.Millisecond
	})
	testkit.WaitFor(t, 10*time.Second, "two replicas from the primary's ROLE", func() bool { return len(c.Stats().Replicas) == 2 })
	if s := c.String(); !strings.Contains(s, "standalone primary="+l.Node(0).Addr()) {
		t.Errorf("String() = %s", s)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	gets := calls(t, l.Node(1), "get") + calls(t, l.Node(2), "get")
	testkit.WaitFor(t, 5*time.Second, "the write on the replicas", func() bool {
		return c.Get(ctx, "k").Val() == "v"
	})
	if calls(t, l.Node(1), "get")+calls(t, l.Node(2), "get") == gets || calls(t, l.Node(0), "get") != 0 {
		t.Errorf("replica reads did not go to the replicas (primary GETs %d)", calls(t, l.Node(0), "get"))
	}
	// Durable: both replicas confirm; a paused one cannot.
	if err := c.Set(WithDurable(ctx, true), "d", "1", 0).Err(); err != nil {
		t.Fatalf("a durable write with both replicas up: %v", err)
	}
	if err := l.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	err := c.Set(WithDurable(ctx, true), "d", "2", 0).Err()
	_ = l.Node(2).Resume()
	var nde *NotDurableError
	if !errors.As(err, &nde) || nde.Required != 2 {
		t.Errorf("a durable write with a replica paused: %v; want a NotDurableError of 2", err)
	}

	// Configured replicas instead of ROLE's: only node1.
	c1 := newPrimaryClient(t, l, func(o *Config) { o.Replicas = []string{l.Node(1).Addr()}; o.ReadFrom = Replica })
	testkit.WaitFor(t, 10*time.Second, "the configured replica", func() bool {
		r := c1.Stats().Replicas
		return len(r) == 1 && r[0] == l.Node(1).Addr()
	})

	// A replica given as the primary: no master, said so; no write sent.
	cr := newTestClientNoSentinel(t, l, func(o *Config) {
		o.MasterName, o.SentinelAddrs, o.Primary = "", nil, l.Node(1).Addr()
		o.DiscoveryTimeout = 500 * time.Millisecond
	})
	sets := calls(t, l.Node(1), "set")
	err = cr.Set(ctx, "x", "1", 0).Err()
	var de *DiscoveryError
	if !errors.As(err, &de) || de.Primary != l.Node(1).Addr() || !strings.Contains(err.Error(), "standalone primary") {
		t.Errorf("a write through a replica given as the primary: %v", err)
	}
	if calls(t, l.Node(1), "set") != sets {
		t.Error("a write was sent to the replica")
	}
}

// TestStandaloneRestart: the primary killed and restarted (AOF, fsync
// always), then stalled 2 s (SIGSTOP), under writers of unique ids with
// 500 ms deadlines, through rediskit and go-redis's default client side by
// side: rediskit writes no id twice and every error it returns is typed
// (a write refused unsent during the restart is sent again once the
// primary answers); go-redis's duplicates and the calls past their
// deadline and 100 ms are logged for both.
func TestStandaloneRestart(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Config{ExtraConfig: []string{"appendonly yes", "appendfsync always"}})
	c := newPrimaryClient(t, l, func(o *Config) { o.FailoverHold = 10 * time.Second })
	plain := redis.NewClient(&redis.Options{Addr: l.Node(0).Addr()})
	defer plain.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	tally := errplace.NewTally(typedOutcome)
	var stop atomic.Bool
	var wg sync.WaitGroup
	var plainErrs, late, plainLate atomic.Int64
	const deadline = 500 * time.Millisecond
	for g := range 8 {
		wg.Go(func() {
			for i := 0; !stop.Load(); i++ {
				id := fmt.Sprintf("%d:%d", g, i)
				wctx, cancel := context.WithTimeout(ctx, deadline)
				began := time.Now()
				tally.Add("RPUSH", c.RPush(wctx, "ids", id).Err())
				if time.Since(began) > deadline+100*time.Millisecond {
					late.Add(1)
				}
				cancel()
				wctx, cancel = context.WithTimeout(ctx, deadline)
				began = time.Now()
				if plain.RPush(wctx, "plain", id).Err() != nil {
					plainErrs.Add(1)
				}
				if time.Since(began) > deadline+100*time.Millisecond {
					plainLate.Add(1)
				}
				cancel()
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	if err := l.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if err := l.Node(0).Restart(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	if err := l.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := l.Node(0).Resume(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second)
	stop.Store(true)
	wg.Wait()
	dups := func(list string) int {
		ids, err := l.Node(0).Do(ctx, "LRANGE", list, 0, -1).StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		seen, n := map[string]bool{}, 0
		for _, id := range ids {
			if seen[id] {
				n++
			}
			seen[id] = true
		}
		return n
	}
	ours, theirs := dups("ids"), dups("plain")
	t.Logf("ids written twice: rediskit %d, go-redis NewClient %d (its errors: %d); calls past the deadline and 100 ms: rediskit %d, go-redis %d; rediskit's errors: %s",
		ours, theirs, plainErrs.Load(), late.Load(), plainLate.Load(), tally.Line())
	if ours != 0 {
		t.Errorf("rediskit wrote %d ids twice", ours)
	}
	tally.Check(t)
}

// TestStandaloneAllocationsMatchGoRedis is TestAllocationsMatchGoRedis
// for a standalone primary with a replica it lists in ROLE: a GET (hit
// and miss) on the primary and on the replica, and a SET, allocate at most
// one object more than go-redis's plain client to the same server.
func TestStandaloneAllocationsMatchGoRedis(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1})
	// The client's periodic work (refreshes, probe rounds) is made rare:
	// AllocsPerRun would charge it to the calls measured.
	sel, err := replica.NewSelector(replica.Config{LatencyWindow: -1, ProbeInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := newPrimaryClient(t, l, func(o *Config) {
		o.ReadFrom, o.ReplicaSelector = Replica, sel
		o.RefreshInterval = time.Hour
	})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "reads on the replica", func() bool {
		before := calls(t, l.Node(1), "get")
		_ = c.Get(ctx, "k").Err()
		return calls(t, l.Node(1), "get") == before+1
	})
	get := func(ctx context.Context, cl redis.UniversalClient) error { return cl.Get(ctx, "k").Err() }
	set := func(ctx context.Context, cl redis.UniversalClient) error { return cl.Set(ctx, "s", "v", 0).Err() }
	for _, node := range []struct {
		name string
		ctx  context.Context
		addr string
	}{{"primary", WithReadFrom(ctx, Master), l.Node(0).Addr()}, {"replica", ctx, l.Node(1).Addr()}} {
		plain := redis.NewClient(&redis.Options{Addr: node.addr, MaxRetries: -1, DisableIdentity: true})
		defer plain.Close()
		benchcmp.AllocsAtMost(t, node.ctx, "GET k on the "+node.name, c, plain, 1, get)
		benchcmp.AllocsAtMost(t, node.ctx, "GET of a missing key on the "+node.name, c, plain, 1, benchcmp.GetMiss)
		if node.name == "primary" {
			benchcmp.AllocsAtMost(t, node.ctx, "SET on the primary", c, plain, 1, set)
		}
	}
}

// TestStandaloneNearReplica: a standalone primary with a near replica and
// a far one (lab latencies), ReadFrom Replica with the latency election:
// no read goes to the far replica, from the client's first call (before
// the first probe round reads go to the primary). rediskit's p50 and p99
// are logged against go-redis's plain client to the primary.
func TestStandaloneNearReplica(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	const near, far = 2 * time.Millisecond, 40 * time.Millisecond
	l := lab.New(t, lab.Config{Replicas: 2, Nodes: []lab.NodeConfig{{Latency: near}, {Latency: near}, {Latency: far}}})
	sel, err := replica.NewSelector(replica.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sel.Close() })
	c := newPrimaryClient(t, l, func(o *Config) { o.ReadFrom, o.ReplicaSelector = Replica, sel })
	plain := redis.NewClient(&redis.Options{Addr: l.Node(0).Addr()})
	defer plain.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	farGets, nearGets := calls(t, l.Node(2), "get"), calls(t, l.Node(1), "get")
	measure := func(cl redis.UniversalClient) (p50, p99 time.Duration) {
		var d []time.Duration
		for range 300 {
			began := time.Now()
			if err := cl.Get(ctx, "k").Err(); err != nil && !errors.Is(err, redis.Nil) {
				t.Fatal(err)
			}
			d = append(d, time.Since(began))
		}
		slices.Sort(d)
		return d[len(d)/2], d[len(d)*99/100]
	}
	p50, p99 := measure(c)
	gp50, gp99 := measure(plain)
	if n := calls(t, l.Node(2), "get") - farGets; n != 0 {
		t.Errorf("%d of 300 reads went to the far replica", n)
	}
	if sel.Rounds() > 0 && calls(t, l.Node(1), "get") == nearGets {
		t.Error("no read went to the near replica after a probe round")
	}
	t.Logf("GET p50/p99: rediskit %v/%v, go-redis NewClient (primary) %v/%v; probe rounds %d; near replica reads %d",
		p50, p99, gp50, gp99, sel.Rounds(), calls(t, l.Node(1), "get")-nearGets)
	// The far replica is 40 ms away; a median past it means reads went there.
	if p50 >= far {
		t.Errorf("rediskit's p50 %v is past the far replica's latency %v", p50, far)
	}
}

// TestStandaloneErrorWording: the errors a standalone primary's client
// can return (no MasterName) neither quote an empty name nor talk about
// sentinels; a Sentinel master's keep their name.
func TestStandaloneErrorWording(t *testing.T) {
	const addr = "127.0.0.1:6379"
	for _, err := range []error{
		&NodeError{Addr: addr, Role: "master", Write: true, MayHaveExecuted: true, Err: errors.New("EOF")},
		&WriteHeldError{Master: addr, Reason: "the primary does not answer", Waited: time.Second},
		&NoReplicaError{Master: addr},
		&DiscoveryError{Primary: addr, Cause: errors.New("connection refused")},
	} {
		msg := err.Error()
		if strings.Contains(msg, `""`) || strings.Contains(strings.ToLower(msg), "sentinels") ||
			strings.Contains(msg, "Sentinel") || strings.Contains(msg, "sentinel master") {
			t.Errorf("%T for a standalone primary: %s", err, msg)
		}
		if !strings.Contains(msg, addr) {
			t.Errorf("%T does not name the primary %s: %s", err, addr, msg)
		}
	}
	if msg := (&NodeError{MasterName: "mymaster", Addr: addr, Role: "master", Err: errors.New("EOF")}).Error(); !strings.Contains(msg, `of "mymaster"`) {
		t.Errorf("a Sentinel master's NodeError: %s", msg)
	}
}
