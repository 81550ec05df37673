package multidb

import (
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
)

// TestSubscriberFollowsSwitches subscribes through the client and keeps
// publishing through it: the subscriber keeps receiving after a manual
// switch and after the active database is killed.
func TestSubscriberFollowsSwitches(t *testing.T) {
	nodes := standalone(t, 3, lab.Standalone())
	c, _ := newClient(t, fast(Config{}), nodes, 10, 5, 1)
	ctx := testCtx(t, 30*time.Second)

	ps := c.Subscribe(ctx, "news")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription confirmation
		t.Fatal(err)
	}
	msgs := ps.Channel()

	// expect publishes until a message published on want's database
	// arrives (messages published during the switch may be lost).
	expect := func(step, want string) {
		t.Helper()
		deadline := time.After(10 * time.Second)
		for i := 0; ; i++ {
			payload := fmt.Sprintf("%s-%d", step, i)
			if err := c.Publish(ctx, "news", payload).Err(); err != nil && c.Active() == want {
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
	expect("before", "db0")
	if err := c.SetActive(ctx, "db1"); err != nil {
		t.Fatal(err)
	}
	expect("after SetActive", "db1")
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
	waitFor(t, 5*time.Second, "failover away from db1", func() bool { _ = c.Ping(ctx); return c.Active() == "db0" })
	expect("after the kill", "db0")
}
