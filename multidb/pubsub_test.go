package multidb

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/internal/testkit/errplace"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/sentinel"
)

// expectDelivery publishes on channel through c until a message published
// while want is active arrives on msgs (messages published during a switch
// may be lost).
func expectDelivery(t *testing.T, c *Client, msgs <-chan *redis.Message, channel, step, want string) {
	t.Helper()
	ctx := testkit.Context(t, 15*time.Second)
	deadline := time.After(15 * time.Second)
	for i := 0; ; i++ {
		payload := fmt.Sprintf("%s-%d", step, i)
		if err := c.Publish(ctx, channel, payload).Err(); err != nil && c.Active() == want {
			t.Fatalf("%s: publish: %v", step, err)
		}
		select {
		case m := <-msgs:
			if m.Payload == payload && c.Active() == want {
				return
			}
		case <-time.After(100 * time.Millisecond):
		case <-deadline:
			t.Fatalf("%s: the subscriber received nothing published on %s", step, want)
		}
	}
}

// TestSubscriberFollowsSwitches subscribes through the client and keeps
// publishing through it: the subscriber keeps receiving after a manual
// switch and after the active database is killed.
func TestSubscriberFollowsSwitches(t *testing.T) {
	nodes := standalone(t, 3, lab.Standalone())
	c, _ := newClient(t, fast(Config{}), nodes, 10, 5, 1)
	ctx := testkit.Context(t, 30*time.Second)

	ps := c.Subscribe(ctx, "news")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription confirmation
		t.Fatal(err)
	}
	msgs := ps.Channel()

	// A second subscriber receives with a 50 ms ReceiveTimeout through
	// the switch and the kill below: every error it sees is a
	// *SubscriptionError, and it follows the active database.
	aps := c.Subscribe(ctx, "alerts")
	defer aps.Close()
	if _, err := aps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	receiver := errplace.NewSubscriber(ctx, aps, 50*time.Millisecond)
	alert := func(p string) error { return c.Publish(ctx, "alerts", p).Err() }
	receiver.Await(t, 10*time.Second, "a-before", alert)

	expectDelivery(t, c, msgs, "news", "before", "db0")
	if err := c.SetActive(ctx, "db1"); err != nil {
		t.Fatal(err)
	}
	expectDelivery(t, c, msgs, "news", "after SetActive", "db1")
	// The subscription really is on db1 now: a message published there
	// directly arrives.
	direct := redis.NewClient(opts(nodes[1]))
	defer direct.Close()
	if err := direct.Publish(ctx, "news", "direct").Err(); err != nil {
		t.Fatal(err)
	}
	select {
	case m := <-msgs:
		if m.Payload != "direct" {
			t.Fatalf("got %q, want the message published on db1", m.Payload)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a message published on db1 did not arrive")
	}
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "failover away from db1", func() bool { _ = c.Ping(ctx); return c.Active() == "db0" })
	expectDelivery(t, c, msgs, "news", "after the kill", "db0")
	receiver.Await(t, 10*time.Second, "a-after", alert)
	receiver.Finish(t, "a switch and a kill")
}

// TestSubscriberOnSentinelDatabase subscribes through a client whose
// databases are a Sentinel deployment (given as our Sentinel client) and a
// standalone server: the subscriber keeps receiving after manual switches
// between them, and after a Sentinel failover inside the Sentinel database
// while it is active, which the Sentinel client follows by itself (the
// multi-database client does not switch).
func TestSubscriberOnSentinelDatabase(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	sl := lab.New(t, lab.Sentinel(1))
	sc, err := sentinel.NewClient(sentinel.Config{MasterName: sl.MasterName(), SentinelAddrs: sl.SentinelAddrs()})
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	node := lab.New(t, lab.Standalone()).Node(0)
	log := &eventLog{}
	c, err := NewClient(fast(Config{Observer: log.observe, Databases: []Database{
		{Name: "sentinel", Weight: 10, Client: sc},
		{Name: "standalone", Weight: 5, Options: opts(node)},
	}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	ps := c.Subscribe(ctx, "news")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := ps.Channel()
	// subscribers waits until each node has the given number of
	// subscribers to news (a closed subscription leaves a server a moment
	// after its connection closed).
	subscribers := func(what string, want map[*lab.Node]int64) {
		t.Helper()
		testkit.WaitFor(t, 5*time.Second, what, func() bool {
			for n, w := range want {
				if numsub(t, n, "news") != w {
					return false
				}
			}
			return true
		})
	}

	expectDelivery(t, c, msgs, "news", "on the Sentinel database", "sentinel")
	subscribers("the subscription on the Sentinel master", map[*lab.Node]int64{sl.Node(0): 1, node: 0})

	if err := c.SetActive(ctx, "standalone"); err != nil {
		t.Fatal(err)
	}
	expectDelivery(t, c, msgs, "news", "after the switch to standalone", "standalone")
	subscribers("the subscription on the standalone server only", map[*lab.Node]int64{sl.Node(0): 0, node: 1})

	if err := c.SetActive(ctx, "sentinel"); err != nil {
		t.Fatal(err)
	}
	expectDelivery(t, c, msgs, "news", "after the switch back", "sentinel")
	subscribers("the subscription back on the Sentinel master", map[*lab.Node]int64{sl.Node(0): 1, node: 0})

	switches := len(log.switches())
	res, err := sl.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "the Sentinel client to follow the failover", func() bool { return sc.Master() == res.NewMaster.Addr() })
	expectDelivery(t, c, msgs, "news", "after the Sentinel failover", "sentinel")
	// Delivered from the new master itself, not from a subscription left on
	// the old one (a replica relays what its master publishes).
	subscribers("the subscription on the new master", map[*lab.Node]int64{res.NewMaster: 1, res.OldMaster: 0, node: 0})
	log.flush(t, c)
	if got := log.switches(); len(got) != switches {
		t.Fatalf("the client switched databases during the Sentinel failover: %v", got[switches:])
	}
}

// TestPubSubAsDirect runs the same pub/sub exchanges through a plain
// go-redis client and through a multi-database client over the same
// server: the subscriber sees the same thing either way (subscription
// confirmations, messages of each kind, pongs, error replies).
func TestPubSubAsDirect(t *testing.T) {
	nodes := standalone(t, 1, lab.Standalone())
	c, _ := newClient(t, fast(Config{}), nodes, 10)
	direct := redis.NewClient(clientOptions(opts(nodes[0])))
	defer direct.Close()

	// Each exchange subscribes through sub, publishes through pub, and
	// calls recv after every step whose result is compared.
	type exchange func(ctx context.Context, sub, pub redis.UniversalClient, recv func(*redis.PubSub))
	tests := []struct {
		name string
		run  exchange
	}{
		{"channels", func(ctx context.Context, sub, pub redis.UniversalClient, recv func(*redis.PubSub)) {
			ps := sub.Subscribe(ctx, "a", "b")
			defer ps.Close()
			recv(ps)
			recv(ps)
			pub.Publish(ctx, "b", "to b")
			recv(ps)
			pub.Publish(ctx, "a", "to a")
			recv(ps)
		}},
		{"patterns", func(ctx context.Context, sub, pub redis.UniversalClient, recv func(*redis.PubSub)) {
			ps := sub.PSubscribe(ctx, "news.*")
			defer ps.Close()
			recv(ps)
			pub.Publish(ctx, "news.eu", "pattern")
			recv(ps)
		}},
		{"shard channels", func(ctx context.Context, sub, pub redis.UniversalClient, recv func(*redis.PubSub)) {
			ps := sub.SSubscribe(ctx, "s")
			defer ps.Close()
			recv(ps)
			pub.SPublish(ctx, "s", "sharded")
			recv(ps)
		}},
		{"mixed, then unsubscribed", func(ctx context.Context, sub, pub redis.UniversalClient, recv func(*redis.PubSub)) {
			ps := sub.Subscribe(ctx, "a")
			defer ps.Close()
			recv(ps)
			_ = ps.PSubscribe(ctx, "p.*")
			recv(ps)
			_ = ps.SSubscribe(ctx, "s")
			recv(ps)
			_ = ps.Unsubscribe(ctx, "a")
			recv(ps)
			_ = ps.PUnsubscribe(ctx)
			recv(ps)
			pub.Publish(ctx, "a", "not received")
			pub.SPublish(ctx, "s", "received")
			recv(ps)
			_ = ps.SUnsubscribe(ctx, "s")
			recv(ps)
		}},
		{"unsubscribe without subscriptions", func(ctx context.Context, sub, _ redis.UniversalClient, recv func(*redis.PubSub)) {
			ps := sub.Subscribe(ctx)
			defer ps.Close()
			_ = ps.Unsubscribe(ctx)
			recv(ps)
		}},
		{"ping", func(ctx context.Context, sub, _ redis.UniversalClient, recv func(*redis.PubSub)) {
			ps := sub.Subscribe(ctx, "a")
			defer ps.Close()
			recv(ps)
			_ = ps.Ping(ctx, "payload")
			recv(ps)
			_ = ps.Ping(ctx)
			recv(ps)
		}},
		{"error reply", func(ctx context.Context, sub, _ redis.UniversalClient, recv func(*redis.PubSub)) {
			ps := sub.Subscribe(ctx, "a")
			defer ps.Close()
			recv(ps)
			_ = ps.Subscribe(ctx) // SUBSCRIBE without a channel
			recv(ps)
			_ = ps.Ping(ctx, "still subscribed")
			recv(ps)
		}},
	}
	transcript := func(run exchange, sub redis.UniversalClient) []string {
		ctx := testkit.Context(t, 10*time.Second)
		var out []string
		run(ctx, sub, direct, func(ps *redis.PubSub) {
			v, err := ps.ReceiveTimeout(ctx, 2*time.Second)
			if err != nil {
				out = append(out, "error: "+err.Error())
				return
			}
			switch m := v.(type) { // every field, not String()
			case *redis.Subscription:
				out = append(out, fmt.Sprintf("%+v", *m))
			case *redis.Message:
				out = append(out, fmt.Sprintf("%+v", *m))
			case *redis.Pong:
				out = append(out, fmt.Sprintf("%+v", *m))
			default:
				out = append(out, fmt.Sprintf("%T %v", v, v))
			}
		})
		return out
	}
	for _, tt := range tests {
		want := transcript(tt.run, direct)
		got := transcript(tt.run, c)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s:\n through multidb %q\n direct         %q", tt.name, got, want)
		}
	}
}

// TestCloseWhileSubscribing closes the client while a subscription is
// being made on a database that accepts connections and never answers:
// Close returns at once, without waiting for the database client's
// timeouts (500 ms here), and the subscriber gets errors, ErrClosed once
// it tries to reconnect, not a hang.
func TestCloseWhileSubscribing(t *testing.T) {
	nodes := standalone(t, 1, lab.Config{Proxy: true})
	c, err := NewClient(fast(Config{HealthCheckInterval: time.Minute, ProbeTimeout: 5 * time.Second,
		Databases: []Database{{Name: "a", Weight: 10, Options: opts(nodes[0])}}}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t, 10*time.Second)
	ps := closeWhileTheBridgeWaits(t, ctx, c, "a", nodes[0])
	if _, err := ps.ReceiveTimeout(ctx, time.Second); err == nil { // the connection's end
		t.Fatal("Receive after Close succeeded")
	}
	if _, err := ps.ReceiveTimeout(ctx, time.Second); !errors.Is(err, ErrClosed) {
		t.Fatalf("Receive after Close: %v, want ErrClosed", err)
	}
}

// TestCloseWhileSubscribingThroughNodeClients is TestCloseWhileSubscribing
// for database clients that subscribe through node clients of their own (a
// cluster client, a ring): the bridge's connection is closed at Close
// there too, not after the database's ReadTimeout (10 s here).
func TestCloseWhileSubscribingThroughNodeClients(t *testing.T) {
	for _, kind := range []string{"cluster", "ring"} {
		t.Run(kind, func(t *testing.T) {
			cfg := lab.Config{Proxy: true}
			if kind == "cluster" {
				cfg.ExtraConfig = []string{"cluster-enabled yes"}
			}
			node := lab.New(t, cfg).Node(0)
			ctx := testkit.Context(t, 20*time.Second)
			var client redis.UniversalClient
			if kind == "cluster" {
				if err := node.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", 0, 16383).Err(); err != nil {
					t.Fatal(err)
				}
				// The slots name the proxy, which the test black-holes (the
				// node itself would announce its own port).
				client = redis.NewClusterClient(&redis.ClusterOptions{MaxRetries: -1, DialerRetries: 1,
					ContextTimeoutEnabled: true, MaxRedirects: -1, ReadTimeout: 10 * time.Second,
					ClusterSlots: func(context.Context) ([]redis.ClusterSlot, error) {
						return []redis.ClusterSlot{{Start: 0, End: 16383, Nodes: []redis.ClusterNode{{Addr: node.Addr()}}}}, nil
					}})
			} else {
				client = redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"s": node.Addr()}, MaxRetries: -1,
					DialerRetries: 1, ContextTimeoutEnabled: true, ReadTimeout: 10 * time.Second})
			}
			defer client.Close()
			c, err := NewClient(fast(Config{HealthCheckInterval: time.Minute, ProbeTimeout: 5 * time.Second,
				Databases: []Database{{Name: kind, Weight: 10, Client: client}}}))
			if err != nil {
				t.Fatal(err)
			}
			closeWhileTheBridgeWaits(t, ctx, c, kind, node)
		})
	}
}

// closeWhileTheBridgeWaits subscribes through c once database db (the
// active one, on node) passed a health check and node was black-holed,
// then closes c while the subscription's bridge waits on the black hole:
// Close must return within 250 ms. It returns the PubSub (closed at the
// test's end).
func closeWhileTheBridgeWaits(t *testing.T, ctx context.Context, c *Client, db string, node *lab.Node) *redis.PubSub {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, "the first health check", func() bool { return stateOf(c, db).ChecksPassed > 0 })
	node.BlackHole()
	t.Cleanup(node.Restore)
	ps := c.Subscribe(ctx, "ch")
	t.Cleanup(func() { _ = ps.Close() })
	time.Sleep(100 * time.Millisecond) // the bridge waits on the black hole
	start := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 250*time.Millisecond {
		t.Fatalf("Close took %v", d)
	}
	return ps
}
