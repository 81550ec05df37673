package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/internal/testkit/errplace"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
)

var _ redis.UniversalClient = (*Client)(nil)

func TestDiscoverySkipsDownSentinel(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	if err := l.Sentinels()[0].Kill(); err != nil {
		t.Fatal(err)
	}
	c, events := newTestClient(t, l, nil)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if c.Master() != l.Node(0).Addr() {
		t.Fatalf("master %s, want %s", c.Master(), l.Node(0).Addr())
	}
	st := c.Stats()
	if st.Sentinels[0] == l.SentinelAddrs()[0] {
		t.Fatalf("the dead sentinel is still asked first: %v", st.Sentinels)
	}
	var skipped bool
	for _, ev := range events.all() {
		if ev.Kind == EventSentinelSkipped && ev.Sentinel == l.SentinelAddrs()[0] && ev.Reason == string(SkipDown) && strings.Contains(ev.Err.Error(), "down") {
			skipped = true
		}
	}
	if !skipped {
		t.Fatalf("no 'down' skip event for the dead sentinel: %v", events.all())
	}
}

// A sentinel that names a replica as the master is skipped after ROLE.
func TestDiscoverySkipsSentinelNamingAReplica(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	s0 := l.Sentinels()[0]
	replica := l.Node(1)
	host, port, _ := strings.Cut(replica.Addr(), ":")
	if err := s0.Do(ctx, "SENTINEL", "REMOVE", l.MasterName()).Err(); err != nil {
		t.Fatal(err)
	}
	if err := s0.Do(ctx, "SENTINEL", "MONITOR", l.MasterName(), host, port, 2).Err(); err != nil {
		t.Fatal(err)
	}
	c, events := newTestClient(t, l, nil)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if c.Master() != l.Node(0).Addr() {
		t.Fatalf("master %s, want %s (the sentinel naming the replica must be skipped)", c.Master(), l.Node(0).Addr())
	}
	var mismatch *RoleMismatchError
	for _, ev := range events.all() {
		if ev.Kind == EventSentinelSkipped && ev.Sentinel == s0.Addr() && errors.As(ev.Err, &mismatch) && ev.Reason == string(SkipRoleMismatch) {
			if mismatch.Addr != replica.Addr() || mismatch.Role != "slave" {
				t.Fatalf("mismatch %+v", mismatch)
			}
			return
		}
	}
	t.Fatalf("no ROLE-mismatch skip for %s: %v", s0.Addr(), events.all())
}

func TestAllSentinelsDownErrorListsEach(t *testing.T) {
	l := lab.New(t, lab.Sentinel(0))
	for _, s := range l.Sentinels() {
		if err := s.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	c, _ := newTestClient(t, l, func(o *Config) { o.DiscoveryTimeout = 5 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := c.Get(ctx, "k").Err()
	took := time.Since(start)
	var de *DiscoveryError
	if !errors.As(err, &de) {
		t.Fatalf("got %v, want a *DiscoveryError", err)
	}
	if took > 1500*time.Millisecond+250*time.Millisecond {
		t.Fatalf("returned after %v, past the 1.5s deadline", took)
	}
	for _, s := range l.SentinelAddrs() {
		if !strings.Contains(err.Error(), s+": down") {
			t.Errorf("error does not say %s is down: %v", s, err)
		}
	}
	for _, a := range de.Attempts {
		if a.Reason != SkipDown {
			t.Errorf("attempt %+v: reason %q, want %q", a, a.Reason, SkipDown)
		}
	}
}

// A master name no sentinel monitors fails at once (every sentinel
// answered: waiting will not help), listing the names they monitor; it
// used to wait the whole DiscoveryTimeout.
func TestUnknownMasterName(t *testing.T) {
	l := lab.New(t, lab.Sentinel(0))
	c, _ := newTestClient(t, l, func(o *Config) { o.MasterName = "nosuchmaster"; o.DiscoveryTimeout = 5 * time.Second })
	ctx := testkit.Context(t, 10*time.Second)
	began := time.Now()
	err := c.Ping(ctx).Err()
	took := time.Since(began)
	var de *DiscoveryError
	if !errors.As(err, &de) || !errors.Is(err, ErrUnknownMaster) || !slices.Equal(de.Monitored, []string{l.MasterName()}) ||
		!strings.Contains(err.Error(), "they monitor: "+l.MasterName()) {
		t.Fatalf("got %v; want a DiscoveryError listing %q", err, l.MasterName())
	}
	if took > time.Second {
		t.Fatalf("an unknown master name took %v to report (DiscoveryTimeout 5 s)", took)
	}
}

func TestReadFromRoutesReadsAndWrites(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	master, replica := l.Node(0), l.Node(1)
	// No background work while allocations are counted: AllocsPerRun
	// counts the whole process's, and a refresh or a sentinel poll
	// allocates as much in a round as a few thousand GETs.
	c, _ := newTestClient(t, l, func(o *Config) {
		o.ReadFrom, o.RefreshInterval, o.SentinelPollInterval = Replica, time.Hour, -1
	})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "a healthy replica", func() bool { return len(c.Stats().Replicas) == 1 })

	getsM, getsR := calls(t, master, "get"), calls(t, replica, "get")
	for range 10 {
		if err := c.Get(ctx, "k").Err(); err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
	}
	if d := calls(t, replica, "get") - getsR; d != 10 {
		t.Fatalf("%d GETs on the replica, want 10", d)
	}
	// The client's own count agrees with the server's.
	nodes := c.Stats().Nodes
	i := slices.IndexFunc(nodes, func(ns NodeStats) bool { return ns.Addr == replica.Addr() })
	if i < 0 || nodes[i].Reads != 10 {
		t.Fatalf("Stats.Nodes = %+v, want 10 reads on the replica %s", nodes, replica.Addr())
	}
	// Per-call override: read your own write on the master.
	for range 3 {
		if err := c.Get(WithReadFrom(ctx, Master), "k").Err(); err != nil {
			t.Fatal(err)
		}
	}
	if d := calls(t, master, "get") - getsM; d != 3 {
		t.Fatalf("%d GETs on the master with WithReadFrom(Master), want 3", d)
	}
	// Writes, server commands and blocking commands stay on the master.
	setsM := calls(t, master, "set")
	_ = c.Set(ctx, "k2", "v", 0).Err()
	_ = c.Info(ctx, "server").Err()
	if calls(t, master, "set")-setsM != 1 || calls(t, master, "info") == 0 {
		t.Fatal("writes or INFO did not run on the master")
	}
}

// TestAllocationsMatchGoRedis checks that routing a GET, to the master or
// to a replica, found or missing, allocates at most one object more than
// a plain go-redis client to the same node. A miss (redis.Nil) matters as
// much as a hit: it is every cache miss, and classifying its error once
// cost 12 allocations.
func TestAllocationsMatchGoRedis(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	// AllocsPerRun counts every allocation in the process while it runs,
	// so the client's own periodic work (sentinel polls, topology
	// refreshes, probe rounds: hundreds of allocations each) would be
	// charged to the calls measured, more of it the slower the machine
	// (29 against 27 at load 5 with -race). It is turned off or made rare
	// here: this test is about the calls' own allocations.
	sel, err := replica.NewSelector(replica.Config{LatencyWindow: -1, ProbeInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newTestClient(t, l, func(o *Config) {
		o.ReadFrom, o.ReplicaSelector = Replica, sel
		o.SentinelPollInterval, o.RefreshInterval = -1, time.Hour
	})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "reads on the replica", func() bool {
		before := calls(t, l.Node(1), "get")
		_ = c.Get(ctx, "k").Err()
		return calls(t, l.Node(1), "get") == before+1
	})
	for _, node := range []struct {
		name string
		ctx  context.Context
		addr string
	}{{"master", WithReadFrom(ctx, Master), l.Node(0).Addr()}, {"replica", ctx, l.Node(1).Addr()}} {
		plain := redis.NewClient(&redis.Options{Addr: node.addr, MaxRetries: -1, DisableIdentity: true})
		defer plain.Close()
		get := func(ctx context.Context, cl redis.UniversalClient) error { return cl.Get(ctx, "k").Err() }
		benchcmp.AllocsAtMost(t, node.ctx, "GET k on the "+node.name, c, plain, 1, get)
		benchcmp.AllocsAtMost(t, node.ctx, "GET of a missing key on the "+node.name, c, plain, 1, benchcmp.GetMiss)
	}
	// A lone caller auto-pipelined goes through the node's Batcher, which
	// adds nothing either (it cost 2 allocations a call until 2026-12-05).
	auto, _ := newTestClient(t, l, func(o *Config) {
		o.AutoPipeline = true
		o.SentinelPollInterval, o.RefreshInterval = -1, time.Hour
	})
	plain := redis.NewClient(&redis.Options{Addr: l.Node(0).Addr(), MaxRetries: -1, DisableIdentity: true})
	defer plain.Close()
	set := func(ctx context.Context, cl redis.UniversalClient) error { return cl.Set(ctx, "k", "v", 0).Err() }
	benchcmp.AllocsAtMost(t, ctx, "auto-pipelined SET k", auto, plain, 0, set)
	benchcmp.AllocsAtMost(t, ctx, "auto-pipelined GET of a missing key", auto, plain, 0, benchcmp.GetMiss)
}

func TestPipelinesAndTransactionsRouteAsAWhole(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	master, replica := l.Node(0), l.Node(1)
	// Routing as a whole, not the choice of replica: the round-robin
	// selector reads from the replica from the first call (the default,
	// latency-aware one reads from the master until its first probe).
	c, _ := newTestClient(t, l, func(o *Config) { o.ReadFrom, o.ReplicaSelector = ReplicaPreferred, NewRoundRobinSelector() })
	if err := c.Set(ctx, "a", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "a healthy replica", func() bool { return len(c.Stats().Replicas) == 1 })

	// Read-only pipeline: the replica.
	getsM, getsR := calls(t, master, "get"), calls(t, replica, "get")
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "a")
		p.Get(ctx, "b")
		p.Exists(ctx, "a")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	if len(cmds) != 3 || calls(t, replica, "get")-getsR != 2 || calls(t, master, "get") != getsM {
		t.Fatalf("read-only pipeline did not run on the replica as a whole")
	}
	// A pipeline with one write: all of it on the master.
	getsM, getsR = calls(t, master, "get"), calls(t, replica, "get")
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "a")
		p.Incr(ctx, "visits")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls(t, master, "get")-getsM != 1 || calls(t, replica, "get") != getsR {
		t.Fatal("mixed pipeline did not run on the master as a whole")
	}
	// A transaction of reads: the master, in MULTI/EXEC.
	execs := calls(t, master, "exec")
	tx, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Get(ctx, "a")
		p.Incr(ctx, "visits")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if calls(t, master, "exec")-execs != 1 {
		t.Fatal("transaction did not run on the master")
	}
	if v := tx[1].(*redis.IntCmd).Val(); v != 2 {
		t.Fatalf("INCR in transaction = %d, want 2", v)
	}

	// WATCH: optimistic increment.
	err = c.Watch(ctx, func(tx *redis.Tx) error {
		n, err := tx.Get(ctx, "a").Int()
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "a", n+1, 0)
			return nil
		})
		return err
	}, "a")
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := c.Get(WithReadFrom(ctx, Master), "a").Int(); v != 2 {
		t.Fatalf("after WATCH increment a = %d, want 2", v)
	}
}

func TestReplicaOnlyWithoutReplica(t *testing.T) {
	ctx := testkit.Context(t, 20*time.Second)
	l := lab.New(t, lab.Sentinel(0))
	c, _ := newTestClient(t, l, func(o *Config) { o.ReadFrom = Replica })
	err := c.Get(ctx, "k").Err()
	var nre *NoReplicaError
	if !errors.Is(err, ErrNoReplica) || !errors.As(err, &nre) {
		t.Fatalf("GET with ReadFrom replica and no replica: %v, want a *NoReplicaError", err)
	}
	if nre.MasterName != l.MasterName() || nre.Master != l.Node(0).Addr() || len(nre.Replicas) != 0 ||
		!strings.Contains(err.Error(), "Sentinel reports no healthy replica") {
		t.Fatalf("error %+v: %v", nre, err)
	}
	if err := c.Get(WithReadFrom(ctx, ReplicaPreferred), "k").Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("GET with ReplicaPreferred and no replica: %v, want redis.Nil from the master", err)
	}
}

func TestSubscribeResumesAfterFailover(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	c, _ := newTestClient(t, l, nil)
	sub := c.Subscribe(ctx, "news")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	ch := sub.Channel()
	publishUntilReceived := func(payload string) {
		t.Helper()
		deadline := time.After(15 * time.Second)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case msg := <-ch:
				if msg.Payload == payload {
					return
				}
			case <-tick.C:
				_ = c.Publish(ctx, "news", payload).Err()
			case <-deadline:
				t.Fatalf("no message %q received", payload)
			}
		}
	}
	publishUntilReceived("before")

	// A second subscriber receives with a 50 ms ReceiveTimeout through
	// the same faults: its timeouts keep its connection (the server
	// shows the same subscriber before and after them), and every other
	// error it sees is a *SubscriptionError.
	master, err := l.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sub2 := c.Subscribe(ctx, "news")
	defer sub2.Close()
	if _, err := sub2.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	pubsubIDs := func() string {
		list, err := master.Do(ctx, "CLIENT", "LIST", "TYPE", "pubsub").Text()
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for line := range strings.Lines(list) {
			ids = append(ids, strings.Fields(line)[0])
		}
		slices.Sort(ids)
		return strings.Join(ids, " ")
	}
	idsBefore := pubsubIDs()
	receiver := errplace.NewSubscriber(ctx, sub2, 50*time.Millisecond)
	testkit.WaitFor(t, 10*time.Second, "ReceiveTimeouts to time out", func() bool { return receiver.Timeouts() >= 3 })
	if ids := pubsubIDs(); ids != idsBefore {
		t.Errorf("the subscribers' connections changed across ReceiveTimeouts that timed out: %s, then %s", idsBefore, ids)
	}
	// Its connection killed by the server: lost, then made again.
	if err := master.Do(ctx, "CLIENT", "KILL", "TYPE", "pubsub").Err(); err != nil {
		t.Fatal(err)
	}
	publishUntilReceived("after the kill")
	news := func(p string) error { return c.Publish(ctx, "news", p).Err() }
	receiver.Await(t, 10*time.Second, "second", news)

	res, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the client to follow the failover", func() bool { return c.Master() == res.NewMaster.Addr() })
	publishUntilReceived("after")
	receiver.Await(t, 10*time.Second, "second after", news)
	receiver.Finish(t, "CLIENT KILL and a failover")
	// Delivered from the new master itself, not from a subscription left on
	// the old one (a replica relays what its master publishes).
	numsub := func(n *lab.Node) int64 {
		v, err := n.Do(ctx, "PUBSUB", "NUMSUB", "news").Slice()
		if err != nil || len(v) != 2 {
			t.Fatalf("PUBSUB NUMSUB on %s: %v, %v", n.Name(), v, err)
		}
		return v[1].(int64)
	}
	if numsub(res.NewMaster) != 2 || numsub(res.OldMaster) != 0 {
		t.Fatalf("subscribers: new master %d, old master %d; want 2 (both PubSubs) and 0", numsub(res.NewMaster), numsub(res.OldMaster))
	}
}

func TestDurableWrites(t *testing.T) {
	ctx := testkit.Context(t, 40*time.Second)
	l := lab.New(t, lab.Sentinel(2))
	c, _ := newTestClient(t, l, func(o *Config) { o.Durable = true; o.DurableTimeout = 300 * time.Millisecond })
	testkit.WaitFor(t, 5*time.Second, "two healthy replicas", func() bool { return len(c.Stats().Replicas) == 2 })
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("durable SET with both replicas up: %v", err)
	}
	for _, n := range l.Nodes()[1:] {
		if v, err := n.Do(ctx, "GET", "k").Text(); err != nil || v != "v" {
			t.Fatalf("%s has %q, %v after a durable write", n.Name(), v, err)
		}
	}
	// A replica that stops acknowledging makes durable writes fail (they
	// ran on the master but are not confirmed) until the client drops it.
	if err := l.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Node(2).Resume() }()
	err := c.Set(ctx, "k", "v2", 0).Err()
	var nde *NotDurableError
	if !errors.As(err, &nde) || nde.Acked != 1 || nde.Required != 2 || !errors.Is(err, ErrNotDurable) {
		t.Fatalf("durable SET with a replica paused: %v, want NotDurableError 1 of 2", err)
	}
	// Without Durable for this call, the write is acknowledged.
	if err := c.Set(WithDurable(ctx, false), "k", "v3", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Pipelines are confirmed as a whole.
	if err := l.Node(2).Resume(); err != nil {
		t.Fatal(err)
	}
	_, err = c.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "p1", "1", 0)
		p.Set(ctx, "p2", "2", 0)
		return nil
	})
	if err != nil {
		t.Fatalf("durable pipeline: %v", err)
	}
}

func TestDurableWithoutReplicaIsRefusedUnsent(t *testing.T) {
	ctx := testkit.Context(t, 20*time.Second)
	l := lab.New(t, lab.Sentinel(0))
	c, _ := newTestClient(t, l, func(o *Config) { o.Durable = true })
	err := c.Set(ctx, "k", "v", 0).Err()
	var nde *NotDurableError
	if !errors.As(err, &nde) || !nde.NotSent {
		t.Fatalf("got %v, want NotDurableError with NotSent", err)
	}
	if n, _ := l.Node(0).Do(ctx, "EXISTS", "k").Int(); n != 0 {
		t.Fatal("a refused durable write reached the master")
	}
}

// A replica the client cannot reach, while Sentinel and the master can,
// still counts for durable writes. Were it left out, WAIT would be met by
// the other replica alone, and if Sentinel promoted the unreachable one,
// the old master's acknowledged writes would be lost with it.
func TestDurableCountsReplicasTheClientCannotReach(t *testing.T) {
	tests := []struct {
		name string
		// dial is what the client gets when it dials the hidden replica.
		dial func(ctx context.Context) (net.Conn, error)
	}{
		{"connection refused", func(context.Context) (net.Conn, error) {
			return nil, &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
		}},
		{"black-holed", func(ctx context.Context) (net.Conn, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(300 * time.Millisecond): // the DialTimeout
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testkit.Context(t, 40*time.Second)
			l := lab.New(t, lab.Sentinel(2))
			reachable, hidden := l.Node(1), l.Node(2)
			c, _ := newTestClient(t, l, func(o *Config) {
				o.Durable, o.DurableTimeout = true, 300*time.Millisecond
				o.DialTimeout, o.ProbeTimeout = 300*time.Millisecond, 300*time.Millisecond
				o.NodeOptions = func(ro *redis.Options) {
					if ro.Addr == hidden.Addr() {
						ro.Dialer = func(ctx context.Context, _, _ string) (net.Conn, error) { return tt.dial(ctx) }
					}
				}
			})
			both := []string{reachable.Addr(), hidden.Addr()}
			slices.Sort(both)
			testkit.WaitFor(t, 10*time.Second, "one verified replica, two counted for durable writes", func() bool {
				st := c.Stats()
				return slices.Equal(st.Replicas, []string{reachable.Addr()}) && slices.Equal(st.DurableReplicas, both)
			})

			// Both replicas confirm: acknowledged, and on both.
			if err := c.Set(ctx, "k", "v1", 0).Err(); err != nil {
				t.Fatalf("durable SET, both replicas up: %v", err)
			}
			for _, n := range []*lab.Node{reachable, hidden} {
				if v, err := n.Do(ctx, "GET", "k").Text(); err != nil || v != "v1" {
					t.Fatalf("%s has %q, %v after a durable write", n.Name(), v, err)
				}
			}

			// The hidden replica stops confirming. The reachable one alone
			// must not make the write durable: it ran, 1 of 2 confirmed.
			if err := hidden.Pause(); err != nil {
				t.Fatal(err)
			}
			defer func() { _ = hidden.Resume() }()
			notDurable := func(when string) {
				t.Helper()
				err := c.Set(ctx, "k", "v2", 0).Err()
				var nde *NotDurableError
				if !errors.As(err, &nde) || nde.Required != 2 || nde.Acked != 1 || !slices.Equal(nde.Replicas, both) {
					t.Fatalf("durable SET, %s: %v; want NotDurableError, 1 of 2 %v", when, err, both)
				}
			}
			notDurable("the hidden replica paused")

			// Once Sentinel flags it s_down it could no longer be promoted,
			// but the master still streams to it: woken, it could confirm
			// in place of the replica being promoted. It still counts.
			testkit.WaitFor(t, 10*time.Second, "Sentinel to flag the hidden replica s_down", func() bool {
				rows, err := l.Sentinels()[0].Replicas(ctx)
				if err != nil {
					return false
				}
				for _, r := range rows {
					if net.JoinHostPort(r["ip"], r["port"]) == hidden.Addr() {
						return strings.Contains(r["flags"], "s_down")
					}
				}
				return false
			})
			refreshes := c.Stats().Resolutions
			testkit.WaitFor(t, 5*time.Second, "two more topology refreshes", func() bool { return c.Stats().Resolutions >= refreshes+2 })
			if got := c.Stats().DurableReplicas; !slices.Equal(got, both) {
				t.Fatalf("durable writes count %v with the hidden replica s_down but connected to the master, want %v", got, both)
			}
			notDurable("the hidden replica s_down but connected to the master")
		})
	}
}

// The credentials provider is asked for every new connection, so the new
// master after a failover gets the current token.
func TestCredentialsProviderPerConnection(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, Username: "app", Password: "token-1"})
	var asked atomic.Int32
	var current atomic.Value
	current.Store("token-1")
	c, _ := newTestClient(t, l, func(o *Config) {
		o.Username, o.Password = "", ""
		o.CredentialsProvider = func(context.Context) (string, string, error) {
			asked.Add(1)
			return "app", current.Load().(string), nil
		}
	})
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	before := asked.Load()
	if before == 0 {
		t.Fatal("provider never asked")
	}
	// Rotate the password on every node; existing connections stay
	// authenticated, new ones need the new token.
	for _, n := range l.Nodes() {
		if err := n.Do(ctx, "ACL", "SETUSER", "app", ">token-2").Err(); err != nil {
			t.Fatal(err)
		}
	}
	current.Store("token-2")
	res, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the client to follow the failover", func() bool { return c.Master() == res.NewMaster.Addr() })
	if err := c.Set(ctx, "k", "v2", 0).Err(); err != nil {
		t.Fatalf("write on the new master with the rotated token: %v", err)
	}
	if asked.Load() == before {
		t.Fatal("no new credentials were asked for the new master")
	}
}

func TestTLSAndSentinelAuth(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, TLS: true, Password: "data-pw", SentinelPassword: "sentinel-pw"})
	c, _ := newTestClient(t, l, func(o *Config) { o.ReadFrom = Replica })
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "a healthy replica", func() bool { return len(c.Stats().Replicas) == 1 })
	if err := c.Get(ctx, "k").Err(); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	for _, s := range []string{c.String(), fmt.Sprint(c.Stats())} {
		if strings.Contains(s, "-pw") {
			t.Fatalf("secret in %q", s)
		}
	}
}

func TestCloseIsPromptAndIdempotent(t *testing.T) {
	ctx := testkit.Context(t, 20*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	c, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	sub := c.Subscribe(ctx, "x")
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %v", took)
	}
	_ = sub.Close()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(ctx).Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ping after Close: %v, want ErrClosed", err)
	}
}

// A client given one sentinel learns the others, and watches them.
func TestLearnsSentinels(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	c, events := newTestClient(t, l, func(o *Config) { o.SentinelAddrs = l.SentinelAddrs()[:1] })
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "three known sentinels", func() bool { return len(c.Stats().Sentinels) == 3 })
	if n := events.count(EventSentinelAdded); n != 2 {
		t.Fatalf("%d sentinel-added events, want 2", n)
	}
	// With the configured sentinel dead, discovery uses the learned ones.
	if err := l.Sentinels()[0].Kill(); err != nil {
		t.Fatal(err)
	}
	res, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the client to follow", func() bool { return c.Master() == res.NewMaster.Addr() })
}

func TestNewClientFromURL(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, TLS: true, Password: "data-pw", SentinelPassword: "sentinel-pw"})
	c, err := NewClientFromURL(l.URL()+"&readFrom=replica&clientName=urltest", Config{RefreshInterval: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "a healthy replica", func() bool { return len(c.Stats().Replicas) == 1 })
	gets := calls(t, l.Node(1), "get")
	if err := c.Get(ctx, "k").Err(); err != nil {
		t.Fatal(err)
	}
	if calls(t, l.Node(1), "get") != gets+1 {
		t.Fatal("readFrom=replica from the URL was not applied")
	}
	if name, err := c.Do(WithReadFrom(ctx, Master), "CLIENT", "GETNAME").Text(); err != nil || name != "urltest" {
		t.Fatalf("CLIENT GETNAME = %q, %v", name, err)
	}
	if strings.Contains(c.String(), "-pw") {
		t.Fatalf("secret in %s", c)
	}
	if _, err := NewClientFromURL("redis://127.0.0.1:6379", Config{}); err == nil {
		t.Fatal("a redis:// URL was accepted")
	}
	if _, err := NewClientFromURL("redis+sentinel://127.0.0.1:26379/mymaster?readFrom=closest", Config{}); err == nil {
		t.Fatal("an invalid readFrom was accepted")
	}
}

// recordingSelector is a ReplicaSelector that keeps the Env it is bound to.
type recordingSelector struct {
	ReplicaSelector
	env replica.Env
}

func (r *recordingSelector) Bind(env replica.Env) { r.env = env }

// Evict moves reads off pooled connections: the replica sees the client's
// old connection closed and a new one opened.
func TestBindAndEvict(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	sel := &recordingSelector{ReplicaSelector: NewRoundRobinSelector()}
	c, _ := newTestClient(t, l, func(o *Config) {
		o.ReadFrom, o.ReplicaSelector, o.ClientName = Replica, sel, "evict-test"
	})
	if sel.env.MasterName != l.MasterName() || sel.env.NodeOptions == nil || sel.env.Evict == nil {
		t.Fatalf("Bind got %+v", sel.env)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "a healthy replica", func() bool { return len(c.Stats().Replicas) == 1 })
	replicaNode := l.Node(1)
	ids := func() []string {
		list, err := replicaNode.Do(ctx, "CLIENT", "LIST").Text()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for line := range strings.SplitSeq(list, "\n") {
			if strings.Contains(line, "name=evict-test") {
				out = append(out, strings.Fields(line)[0])
			}
		}
		return out
	}
	if err := c.Get(ctx, "k").Err(); err != nil {
		t.Fatal(err)
	}
	before := ids()
	if len(before) == 0 {
		t.Fatal("no connection from the client to the replica")
	}
	// A probe connection built from NodeOptions reaches the node too.
	probe := redis.NewClient(sel.env.NodeOptions(replicaNode.Addr()))
	if err := probe.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_ = probe.Close()

	sel.env.Evict(replicaNode.Addr())
	testkit.WaitFor(t, 5*time.Second, "the old connections to close", func() bool {
		if err := c.Get(ctx, "k").Err(); err != nil {
			t.Fatal(err)
		}
		after := ids()
		for _, id := range before {
			if slices.Contains(after, id) {
				return false
			}
		}
		return len(after) > 0
	})
}

// A write with a nil reply (SET ... GET, GETSET on a new key) ran: durable
// mode confirms it like any other.
func TestDurableConfirmsWritesWithNilReplies(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(2))
	c, _ := newTestClient(t, l, func(o *Config) { o.Durable = true; o.DurableTimeout = 300 * time.Millisecond })
	testkit.WaitFor(t, 5*time.Second, "two healthy replicas", func() bool { return len(c.Stats().Replicas) == 2 })
	// Both replicas up: confirmed, and the reply is go-redis's.
	if err := c.SetArgs(ctx, "a", "1", redis.SetArgs{Get: true}).Err(); !errors.Is(err, redis.Nil) {
		t.Fatalf("SET GET on a new key, confirmed: %v, want redis.Nil", err)
	}
	if err := l.Node(2).Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Node(2).Resume() }()
	for name, run := range map[string]func() error{
		"SET GET": func() error { return c.SetArgs(ctx, "b", "1", redis.SetArgs{Get: true}).Err() },
		"GETSET":  func() error { return c.GetSet(ctx, "c", "1").Err() },
	} {
		var nde *NotDurableError
		if err := run(); !errors.As(err, &nde) || nde.Acked != 1 || nde.Required != 2 {
			t.Errorf("%s on a new key with a replica paused: %v, want NotDurableError 1 of 2", name, err)
		}
	}
	if v, _ := l.Node(0).Do(ctx, "GET", "b").Text(); v != "1" {
		t.Fatalf("the write ran on the master: b = %q", v)
	}
}

// TestFirstReplicaReadOfANewClient sends a GET under ReadFrom Replica the
// moment each new client exists. The read wakes on the first snapshot and
// asks the selector at once: the selector must already know the replicas
// (and wait for their first probe), never answer as if there were none.
func TestFirstReplicaReadOfANewClient(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	const clients = 40
	for i := range clients {
		c, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), ReadFrom: Replica})
		if err != nil {
			t.Fatal(err)
		}
		err = c.Get(ctx, "missing").Err()
		if cerr := c.Close(); cerr != nil {
			t.Errorf("close: %v", cerr)
		}
		if !errors.Is(err, redis.Nil) {
			t.Fatalf("client %d: the first read got %v, want redis.Nil from the replica", i, err)
		}
	}
}

// The fault DurablePromotable does not cover, and DurableEveryKnownReplica
// (the default) does: a replica that was down while writes were confirmed
// restarts with its older data while the master and the other replica are
// lost, and Sentinel promotes it. DurablePromotable stopped counting it
// once Sentinel flagged it down, so the writes confirmed then are lost;
// what it promises (every write confirmed while that replica was counted
// survives) holds. The strict scope refused durable writes while it was
// down, and loses nothing. (TestDurableDoubleFault shows the same loss
// with the master and then the promoted one killed.)
func TestDurableScopesWhenADownReplicaComesBackStale(t *testing.T) {
	ctx := testkit.Context(t, 120*time.Second)
	l := lab.New(t, lab.Config{Replicas: 2, Sentinels: 3, ExtraConfig: []string{"appendonly yes", "appendfsync always"}})
	master, stale, other := l.Node(0), l.Node(1), l.Node(2)
	durable := func(scope DurableScope) func(*Config) {
		return func(o *Config) {
			o.Durable, o.DurableScope, o.DurableTimeout = true, scope, 300*time.Millisecond
			o.RefreshInterval = 100 * time.Millisecond
		}
	}
	def, _ := newTestClient(t, l, durable(DurablePromotable))
	strict, _ := newTestClient(t, l, durable(DurableEveryKnownReplica))
	both := []string{stale.Addr(), other.Addr()}
	slices.Sort(both)
	for _, c := range []*Client{def, strict} {
		testkit.WaitFor(t, 10*time.Second, "both replicas counted", func() bool { return slices.Equal(c.Stats().DurableReplicas, both) })
	}
	acked := map[*Client]int{}
	write := func(c *Client, key string, n int) (refused int) {
		for range n {
			err := c.Incr(ctx, key).Err()
			var nde *NotDurableError
			switch {
			case err == nil:
				acked[c]++
			case errors.As(err, &nde):
				refused++
			default:
				t.Fatalf("durable INCR %s: %v", key, err)
			}
		}
		return refused
	}
	write(def, "def", 50)
	write(strict, "strict", 50)
	if acked[def] != 50 || acked[strict] != 50 {
		t.Fatalf("with every replica up: %d and %d of 50 durable writes acknowledged", acked[def], acked[strict])
	}
	before := acked[def]

	if err := stale.Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 15*time.Second, "every sentinel to flag the killed replica s_down", func() bool {
		for _, s := range l.Sentinels() {
			rows, err := s.Replicas(ctx)
			if err != nil {
				return false
			}
			for _, r := range rows {
				if net.JoinHostPort(r["ip"], r["port"]) == stale.Addr() && !strings.Contains(r["flags"], "s_down") {
					return false
				}
			}
		}
		return true
	})
	testkit.WaitFor(t, 10*time.Second, "DurablePromotable to stop counting it", func() bool {
		return slices.Equal(def.Stats().DurableReplicas, []string{other.Addr()})
	})
	if got := strict.Stats().DurableReplicas; !slices.Equal(got, both) {
		t.Fatalf("the strict scope counts %v with a replica down, want %v", got, both)
	}
	if refused := write(def, "def", 50); refused != 0 {
		t.Fatalf("DurablePromotable, a replica down and not counted: %d of 50 durable writes refused", refused)
	}
	if refused := write(strict, "strict", 50); refused != 50 {
		t.Fatalf("strict scope, a known replica down: %d of 50 durable writes refused, want all", refused)
	}

	// The master and the up-to-date replica are lost; the stale one comes
	// back before Sentinel decides, and is the only one it can promote.
	if err := errors.Join(master.Kill(), other.Kill()); err != nil {
		t.Fatal(err)
	}
	if err := stale.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 60*time.Second, "Sentinel to promote the stale replica", func() bool {
		addr, err := l.Sentinels()[0].MasterAddr(ctx)
		if err != nil || addr != stale.Addr() {
			return false
		}
		r, err := stale.Role(ctx)
		return err == nil && r.Role == "master"
	})
	get := func(key string) int {
		v, err := stale.Do(ctx, "GET", key).Int()
		if err != nil {
			t.Fatalf("GET %s on the promoted replica: %v", key, err)
		}
		return v
	}
	if got := get("strict"); got != acked[strict] {
		t.Errorf("strict scope: %d durable writes acknowledged, %d on the promoted replica", acked[strict], got)
	}
	got := get("def")
	if got < before {
		t.Errorf("DurablePromotable: %d writes confirmed while the replica was counted, only %d on it", before, got)
	}
	t.Logf("DurablePromotable: %d durable writes acknowledged, %d on the promoted replica (%d confirmed while it was down and not counted are lost); strict scope (the default): %d acknowledged, %d on it",
		acked[def], got, acked[def]-got, acked[strict], get("strict"))
}
