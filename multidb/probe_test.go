package multidb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/sentinel"
)

// TestProbes runs each built-in probe against a real master and replica.
func TestProbes(t *testing.T) {
	l := lab.New(t, lab.Replicated(1))
	master, replica := redis.NewClient(clientOptions(opts(l.Node(0)))), redis.NewClient(clientOptions(opts(l.Node(1))))
	defer master.Close()
	defer replica.Close()
	write, err := WriteProbe("app")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := WriteProbe("bad prefix:"); err == nil {
		t.Fatal("WriteProbe accepted a prefix ending with ':'")
	}
	ctx := testkit.Context(t, 10*time.Second)
	probe := func(p Probe, cl *redis.Client) error {
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		return p(pctx, cl)
	}
	tests := []struct {
		name   string
		probe  Probe
		client *redis.Client
		want   error // nil: passes
	}{
		{"PING on the master", PingProbe(), master, nil},
		{"PING on the replica", PingProbe(), replica, nil},
		{"write probe on the master", write, master, nil},
		{"write probe on the replica: READONLY", write, replica, guard.ErrUnavailable},
		{"replication probe on the master", ReplicationProbe(time.Second), master, nil},
		{"replication probe on a synced replica", ReplicationProbe(5 * time.Second), replica, nil},
	}
	for _, tt := range tests {
		err := probe(tt.probe, tt.client)
		if (tt.want == nil) != (err == nil) || (tt.want != nil && !errors.Is(err, tt.want)) {
			t.Errorf("%s: %v, want %v", tt.name, err, tt.want)
		}
	}
	if v, err := master.Get(ctx, "app:health:write").Result(); err != nil || v == "" {
		t.Errorf("the write probe's key: %q, %v", v, err)
	}
	// The replica loses its master.
	if err := l.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the replication probe to fail", func() bool {
		return errors.Is(probe(ReplicationProbe(5*time.Second), replica), ErrReplicationLag)
	})
	if err := probe(PingProbe(), master); err == nil {
		t.Error("PING on a dead master passed")
	}
}

// TestClientKinds puts our Sentinel client and a go-redis cluster client
// (a one-node cluster) behind the multi-database client.
func TestClientKinds(t *testing.T) {
	sl := lab.New(t, lab.Sentinel(1))
	sc, err := sentinel.NewClient(sentinel.Config{MasterName: sl.MasterName(), SentinelAddrs: sl.SentinelAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	cluster := lab.New(t, lab.Config{ExtraConfig: []string{"cluster-enabled yes"}}).Node(0)
	ctx := testkit.Context(t, 20*time.Second)
	if err := cluster.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "the cluster", func() bool {
		s, _ := cluster.Do(ctx, "CLUSTER", "INFO").Text()
		return strings.Contains(s, "cluster_state:ok")
	})
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{cluster.Addr()}, MaxRetries: -1, DialerRetries: 1,
		ContextTimeoutEnabled: true, MaxRedirects: -1})
	defer cc.Close()

	log := &eventLog{}
	c, err := NewClient(fast(Config{Observer: log.observe, Databases: []Database{
		{Name: "sentinel", Weight: 10, Client: sc},
		{Name: "cluster", Weight: 5, Client: cc},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "k", "sentinel", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := get(t, sl.Node(0), "k"); v != "sentinel" {
		t.Fatalf("the Sentinel master has k=%q", v)
	}
	// Subscriptions go through the database's own client, whatever its
	// kind: on the Sentinel database, to its master.
	ps := c.Subscribe(ctx, "ch")
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatalf("Subscribe on the Sentinel database: %v", err)
	}
	if err := c.Publish(ctx, "ch", "from sentinel").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "from sentinel" {
		t.Fatalf("message on the Sentinel database: %v, %v", m, err)
	}
	if n := numsub(t, sl.Node(0), "ch"); n != 1 {
		t.Fatalf("the Sentinel master has %d subscribers to ch, want 1", n)
	}
	_ = ps.Close()

	if err := c.SetActive(ctx, "cluster"); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", "cluster", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := get(t, cluster, "k"); v != "cluster" {
		t.Fatalf("the cluster has k=%q", v)
	}
	ps = c.Subscribe(ctx, "ch")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Publish(ctx, "ch", "hello").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "hello" {
		t.Fatalf("message on the cluster: %v, %v", m, err)
	}
	// Shard channels, through the cluster client's SSubscribe.
	sps := c.SSubscribe(ctx, "shard")
	defer sps.Close()
	if _, err := sps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.SPublish(ctx, "shard", "sharded").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := sps.ReceiveMessage(ctx); err != nil || m.Payload != "sharded" || m.Channel != "shard" {
		t.Fatalf("shard message on the cluster: %v, %v", m, err)
	}
}

// TestNoSecrets checks that a password never shows in String, Stats,
// errors or logs, even when authentication fails and every database is
// down.
func TestNoSecrets(t *testing.T) {
	const secret = "s3cr3t-pa55word"
	nodes := standalone(t, 2, lab.Config{Password: secret})
	var buf testkit.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	wrong := opts(nodes[1])
	wrong.Password = secret + "-wrong"
	c, log := newClient(t, fast(Config{Logger: logger, FailoverAttempts: 1, FailoverDelay: 50 * time.Millisecond}), nodes[:1], 10)
	if err := c.AddDatabase(Database{Name: "wrong", Weight: 5, Options: wrong}); err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t, 10*time.Second)
	testkit.WaitFor(t, 5*time.Second, "the wrong password to fail", func() bool { return stateOf(c, "wrong").ChecksFailed > 0 })
	if err := nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	var errs []error
	testkit.WaitFor(t, 5*time.Second, "ErrNoHealthyDatabase", func() bool {
		err := c.Get(ctx, "k").Err()
		errs = append(errs, err)
		return errors.Is(err, ErrNoHealthyDatabase)
	})
	errs = append(errs, c.SetActive(ctx, "wrong"), c.UpdateWeight(ctx, "wrong", 20))
	texts := []string{c.String(), fmt.Sprintf("%+v", c.Stats()), buf.String()}
	for _, err := range errs {
		if err != nil {
			texts = append(texts, err.Error())
		}
	}
	for _, ev := range log.all() {
		texts = append(texts, ev.String())
	}
	for _, s := range texts {
		if strings.Contains(s, secret) {
			t.Fatalf("the password shows in %q", s)
		}
	}
	if !strings.Contains(buf.String(), "unreachable") || !strings.Contains(stateOf(c, "wrong").LastError, "WRONGPASS") {
		t.Fatalf("the logs or stats do not say what happened: %s / %s", buf.String(), stateOf(c, "wrong").LastError)
	}
}

// TestClosePromptAndIdempotent closes a client while a health check waits
// on a black-holed database: Close returns promptly, twice, and calls then
// fail with ErrClosed.
func TestClosePromptAndIdempotent(t *testing.T) {
	nodes := standalone(t, 2, lab.Config{Proxy: true})
	nodes[1].BlackHole()
	log := &eventLog{}
	cfg := fast(Config{Observer: log.observe, ProbeTimeout: 5 * time.Second, Databases: []Database{
		{Name: "a", Weight: 10, Options: opts(nodes[0])},
		{Name: "b", Weight: 5, Options: opts(nodes[1])},
	}})
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t, 10*time.Second)
	ps := c.Subscribe(ctx, "ch")
	defer ps.Close()
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // b's probe is waiting on the black hole
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("Close took %v", d)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := c.Ping(ctx).Err(); !errors.Is(err, ErrClosed) {
		t.Fatalf("PING after Close: %v, want ErrClosed", err)
	}
	for _, f := range []func() error{
		func() error { return c.SetActive(ctx, "a") },
		func() error { return c.UpdateWeight(ctx, "a", 1) },
		func() error { return c.AddDatabase(Database{Name: "x", Options: opts(nodes[0])}) },
		func() error { return c.RemoveDatabase("a") },
	} {
		if err := f(); !errors.Is(err, ErrClosed) {
			t.Errorf("after Close: %v, want ErrClosed", err)
		}
	}
	nodes[1].Restore()
}
