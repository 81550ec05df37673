package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/internal/testkit/errplace"
	"github.com/rediskit/rediskit/lab"
)

// labNode is the lab node whose client address is addr.
func labNode(t *testing.T, l *lab.Lab, addr string) *lab.Node {
	t.Helper()
	for _, s := range l.ShardIDs() {
		for _, n := range l.ShardNodes(s) {
			if n.Addr() == addr {
				return n
			}
		}
	}
	t.Fatalf("no lab node at %s", addr)
	return nil
}

// subscribed waits for ps's subscription confirmation.
func subscribed(t *testing.T, ctx context.Context, ps *redis.PubSub) {
	t.Helper()
	msg, err := ps.Receive(ctx)
	if err != nil {
		t.Fatalf("subscribing: %v", err)
	}
	if _, ok := msg.(*redis.Subscription); !ok {
		t.Fatalf("first reply %T %v, want a subscription", msg, msg)
	}
}

// awaitPublished publishes "<tag>-<i>" with publish every 100 ms until one
// of them arrives on ch (earlier messages are skipped), and returns how
// long that took.
func awaitPublished(t *testing.T, ctx context.Context, ch <-chan *redis.Message, tag string, publish func(payload string) error) time.Duration {
	t.Helper()
	start := time.Now()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var lastErr error
	for i := 0; ; i++ {
		if err := publish(fmt.Sprint(tag, "-", i)); err != nil {
			lastErr = err
		}
		for {
			select {
			case m, ok := <-ch:
				if !ok {
					t.Fatalf("%s: the PubSub's channel closed", tag)
				}
				if strings.HasPrefix(m.Payload, tag+"-") {
					return time.Since(start)
				}
				continue
			case <-ctx.Done():
				t.Fatalf("%s: no message arrived in %v (last publish error: %v)", tag, time.Since(start), lastErr)
			case <-tick.C:
			}
			break
		}
	}
}

// TestPubSubBroadcast subscribes on one node and receives what is
// published on every node; after a CLUSTER FAILOVER demotes that node, and
// after a SIGKILL of the node it moved to, the subscription moves to a
// master and receives what is published after.
func TestPubSubBroadcast(t *testing.T) {
	ctx := testkit.Context(t, 120*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	t.Logf("server %s", l.ServerVersion())
	c := newTestClient(t, l, func(o *Config) { o.RefreshInterval = time.Second })
	ps := c.Subscribe(ctx, "news")
	defer ps.Close()
	subscribed(t, ctx, ps)
	pps := c.PSubscribe(ctx, "new*")
	defer pps.Close()
	subscribed(t, ctx, pps)
	for _, s := range l.ShardIDs() {
		for _, n := range l.ShardNodes(s) {
			if err := n.Do(ctx, "PUBLISH", "news", "from-"+n.Name()).Err(); err != nil {
				t.Fatal(err)
			}
			for _, p := range []*redis.PubSub{ps, pps} {
				m, err := p.ReceiveMessage(ctx)
				if err != nil || m.Payload != "from-"+n.Name() || m.Channel != "news" {
					t.Fatalf("published on %s: got %v, %v", n.Name(), m, err)
				}
			}
		}
	}
	if err := c.Publish(ctx, "news", "via-client").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Payload != "via-client" {
		t.Fatalf("published through the client: %v, %v", m, err)
	}
	// More channels on the same PubSub, and an unsubscription.
	if err := ps.Subscribe(ctx, "more"); err != nil {
		t.Fatal(err)
	}
	subscribed(t, ctx, ps)
	if err := c.Publish(ctx, "more", "m1").Err(); err != nil {
		t.Fatal(err)
	}
	if m, err := ps.ReceiveMessage(ctx); err != nil || m.Channel != "more" || m.Payload != "m1" {
		t.Fatalf("on the added channel: %v, %v", m, err)
	}
	if err := ps.Unsubscribe(ctx, "more"); err != nil {
		t.Fatal(err)
	}
	if msg, err := ps.Receive(ctx); err != nil || msg.(*redis.Subscription).Kind != "unsubscribe" {
		t.Fatalf("unsubscribing: %v, %v", msg, err)
	}

	// A second subscriber receives with a 50 ms ReceiveTimeout through
	// the failover and the kill below: every error it sees is a
	// *SubscriptionError, and it follows the moves.
	aps := c.Subscribe(ctx, "alerts")
	defer aps.Close()
	subscribed(t, ctx, aps)
	receiver := errplace.NewSubscriber(ctx, aps, 50*time.Millisecond)
	alert := func(p string) error { return c.Publish(ctx, "alerts", p).Err() }
	receiver.Await(t, 10*time.Second, "a-before", alert)

	ch := ps.Channel()
	first := labNode(t, l, c.pubsub.currentBroadcastNode())
	if _, err := l.ClusterFailover(ctx, first.Shard(), lab.FailoverGraceful); err != nil {
		t.Fatal(err)
	}
	// A replica gets every message too, so what arrives does not show the
	// move: the nodes' own subscriber counts do. The demoted node leaves
	// the map's masters at the next refresh (RefreshInterval, 1 s here).
	took := testkit.WaitFor(t, 10*time.Second, "the subscription to leave the demoted "+first.Name(), func() bool {
		return c.pubsub.currentBroadcastNode() != first.Addr()
	})
	moved := labNode(t, l, c.pubsub.currentBroadcastNode())
	waitSubscribers(t, ctx, moved, "NUMSUB", "news", 1)
	waitSubscribers(t, ctx, first, "NUMSUB", "news", 0)
	awaitPublished(t, ctx, ch, "after-failover", publishOn(ctx, otherShardMaster(t, ctx, l, moved.Shard()), "news"))
	t.Logf("after the failover of %s: moved to %s in %v", first.Name(), moved.Name(), took)

	if err := moved.Kill(); err != nil {
		t.Fatal(err)
	}
	took = testkit.WaitFor(t, 10*time.Second, "the subscription to leave the killed "+moved.Name(), func() bool {
		return c.pubsub.currentBroadcastNode() != moved.Addr()
	})
	now := labNode(t, l, c.pubsub.currentBroadcastNode())
	waitSubscribers(t, ctx, now, "NUMSUB", "news", 1)
	awaitPublished(t, ctx, ch, "after-kill", publishOn(ctx, otherShardMaster(t, ctx, l, moved.Shard()), "news"))
	t.Logf("after the kill of %s: moved to %s in %v", moved.Name(), now.Name(), took)
	receiver.Await(t, 10*time.Second, "a-after", alert)
	receiver.Finish(t, "a failover and a kill")
}

// publishOn publishes on n's own port.
func publishOn(ctx context.Context, n *lab.Node, channel string) func(string) error {
	return func(p string) error { return n.Do(ctx, "PUBLISH", channel, p).Err() }
}

// otherShardMaster is the master of a shard other than shard.
func otherShardMaster(t *testing.T, ctx context.Context, l *lab.Lab, shard int) *lab.Node {
	t.Helper()
	m, err := l.ShardMaster(ctx, (shard+1)%len(l.ShardIDs()))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// waitSubscribers waits until n counts want subscribers of channel
// (PUBSUB NUMSUB or SHARDNUMSUB: each node counts its own connections).
func waitSubscribers(t *testing.T, ctx context.Context, n *lab.Node, sub, channel string, want int64) {
	t.Helper()
	var got any
	for {
		v, err := n.Do(ctx, "PUBSUB", sub, channel).Slice()
		if err == nil && len(v) == 2 {
			if got = v[1]; got == want {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("PUBSUB %s %s on %s: %v (%v), want %d", sub, channel, n.Name(), got, err, want)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TestSSubscribeFollowsSlot subscribes to a shard channel and follows its
// slot: through a CLUSTER FAILOVER of its shard and a migration of the
// slot to another shard, an SPUBLISH on the slot's new master reaches it.
// The map is never read again on a timer (RefreshInterval an hour), and
// no command of the test's client touches the slot: the subscription must
// move on what its own connection tells.
func TestSSubscribeFollowsSlot(t *testing.T) {
	ctx := testkit.Context(t, 120*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	t.Logf("server %s", l.ServerVersion())
	c := newTestClient(t, l, func(o *Config) { o.RefreshInterval = time.Hour })
	const channel = "{room:7}:chat"
	slot := Slot(channel)
	ps := c.SSubscribe(ctx, channel, "{room:7}:typing")
	defer ps.Close()
	subscribed(t, ctx, ps)
	ch := ps.Channel()
	spublishOn := func(n *lab.Node) func(string) error {
		return func(p string) error { return n.Do(ctx, "SPUBLISH", channel, p).Err() }
	}
	owner, err := l.SlotOwner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	awaitPublished(t, ctx, ch, "stable", spublishOn(owner))

	promoted, err := l.ClusterFailover(ctx, owner.Shard(), lab.FailoverGraceful)
	if err != nil {
		t.Fatal(err)
	}
	// The shard's replicas get its messages too: the nodes' subscriber
	// counts show the move.
	took := time.Now()
	waitSubscribers(t, ctx, promoted, "SHARDNUMSUB", channel, 1)
	waitSubscribers(t, ctx, owner, "SHARDNUMSUB", channel, 0)
	awaitPublished(t, ctx, ch, "after-failover", spublishOn(promoted))
	t.Logf("failover %s -> %s: moved within %v", owner.Name(), promoted.Name(), time.Since(took))

	dest := (promoted.Shard() + 1) % 3
	if err := l.MigrateSlots(ctx, dest, slot); err != nil {
		t.Fatal(err)
	}
	newOwner, err := l.SlotOwner(ctx, slot)
	if err != nil || newOwner.Shard() != dest {
		t.Fatalf("slot %d after the migration: %v, %v", slot, newOwner, err)
	}
	took = time.Now()
	waitSubscribers(t, ctx, newOwner, "SHARDNUMSUB", channel, 1)
	waitSubscribers(t, ctx, promoted, "SHARDNUMSUB", channel, 0)
	awaitPublished(t, ctx, ch, "after-migration", spublishOn(newOwner))
	t.Logf("migration to %s: moved within %v", newOwner.Name(), time.Since(took))
	if m := c.topo.snap.Load().master(slot); m == nil || m.addr != newOwner.Addr() {
		t.Errorf("the map names %v for slot %d, want %s", m, slot, newOwner.Addr())
	}
}

// TestSSubscribeNoLoss publishes 2,000 shard messages through the client
// while the shard is stable: every one arrives, in order.
func TestSSubscribeNoLoss(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	c := newTestClient(t, l, nil)
	const channel, n = "orders", 2000
	ps := c.SSubscribe(ctx, channel)
	defer ps.Close()
	subscribed(t, ctx, ps)
	done := make(chan error, 1)
	go func() {
		for i := range n {
			if err := c.SPublish(ctx, channel, fmt.Sprint(i)).Err(); err != nil {
				done <- fmt.Errorf("SPUBLISH %d: %w", i, err)
				return
			}
		}
		done <- nil
	}()
	for i := range n {
		m, err := ps.ReceiveMessage(ctx)
		if err != nil {
			t.Fatalf("after %d messages: %v", i, err)
		}
		if m.Payload != fmt.Sprint(i) {
			t.Fatalf("message %d is %q", i, m.Payload)
		}
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if moved := c.Stats().Moved; moved != 0 {
		t.Errorf("%d MOVED: SPUBLISH was not routed by its channel", moved)
	}

	// Close ends the subscriptions waiting in Receive, promptly.
	bps := c.Subscribe(ctx, "news")
	defer bps.Close()
	subscribed(t, ctx, bps)
	ended := make(chan error, 2)
	for _, p := range []*redis.PubSub{ps, bps} {
		go func() {
			_, err := p.Receive(ctx)
			ended <- err
		}()
	}
	time.Sleep(50 * time.Millisecond) // both in Receive (an early Close fails them alike)
	began := time.Now()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case err := <-ended:
			if err == nil {
				t.Fatal("Receive returned no error after Close")
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("Receive still waiting %v after Close", time.Since(began))
		}
	}
	t.Logf("Receive ended %v after Close", time.Since(began))
}

// TestSSubscribeCrossSlot: channels in several slots, or none, are refused
// before anything is sent, with a typed error, on every Receive.
func TestSSubscribeCrossSlot(t *testing.T) {
	ctx := testkit.Context(t, 10*time.Second)
	c, err := NewClient(Config{Addrs: []string{"127.0.0.1:1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, channels := range [][]string{{"a", "b"}, nil} {
		ps := c.SSubscribe(ctx, channels...)
		for range 2 {
			_, err := ps.Receive(ctx)
			var ce *SubscribeCrossSlotError
			if !errors.As(err, &ce) {
				t.Fatalf("SSubscribe%q: Receive: %v, want a *SubscribeCrossSlotError", channels, err)
			}
			if len(channels) == 2 && (len(ce.Slots) != 2 || ce.Slots[0] != min(Slot("a"), Slot("b"))) {
				t.Fatalf("slots %v", ce.Slots)
			}
			if !strings.Contains(err.Error(), "nothing was sent") {
				t.Fatalf("error %q does not say nothing was sent", err)
			}
		}
		_ = ps.Close()
	}
	if len(c.pubsub.slots) != 0 {
		t.Fatalf("a refused SSubscribe made slot clients: %v", c.pubsub.slots)
	}
}

// TestPubSubScanSunsubscribe: the push is seen whole in one read, split
// across reads at any point, and across reads shorter than the word; not
// in a stream that lacks it.
func TestPubSubScanSunsubscribe(t *testing.T) {
	push := ">3\r\n$12\r\nsunsubscribe\r\n$4\r\nchan\r\n:0\r\n"
	type row struct {
		name   string
		reads  []string
		wantAt int // the read that completes the word; -1: none
	}
	rows := []row{
		{"whole", []string{push}, 0},
		{"absent", []string{">3\r\n$7\r\nmessage\r\n", "$4\r\nchan\r\n$12\r\nsubscribe... \r\n"}, -1},
		{"bytewise", strings.Split(push, ""), strings.Index(push, "sunsubscribe") + len("sunsubscribe") - 1},
	}
	for cut := 1; cut < len("sunsubscribe"); cut++ {
		i := strings.Index(push, "sunsubscribe") + cut
		rows = append(rows, row{fmt.Sprint("cut ", cut), []string{push[:i], push[i:]}, 1})
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			var c watchedConn
			at := -1
			for i, b := range r.reads {
				if c.scan([]byte(b)) && at < 0 {
					at = i
				}
			}
			if at != r.wantAt {
				t.Fatalf("found at read %d, want %d", at, r.wantAt)
			}
		})
	}
}
