package multidb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// fast are short settings for tests; the defaults stay the documented
// constants (TestKillActiveUnderLoad runs with them).
func fast(cfg Config) Config {
	set := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	set(&cfg.HealthCheckInterval, 100*time.Millisecond)
	set(&cfg.ProbeDelay, 10*time.Millisecond)
	set(&cfg.ProbeTimeout, 300*time.Millisecond)
	set(&cfg.GracePeriod, 300*time.Millisecond)
	set(&cfg.FailoverDelay, 200*time.Millisecond)
	set(&cfg.FailbackInterval, 50*time.Millisecond)
	set(&cfg.FailbackDwell, 500*time.Millisecond)
	return cfg
}

// eventLog collects a client's events for assertions.
type eventLog struct {
	mu     sync.Mutex
	events []Event
}

func (e *eventLog) observe(ev Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

func (e *eventLog) all() []Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.events...)
}

func (e *eventLog) of(kind EventKind) []Event {
	var out []Event
	for _, ev := range e.all() {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// eventMarker is the kind of the events flush sends: no client event has
// it.
const eventMarker EventKind = -1

// flush waits until every event c emitted before the call has been
// delivered: events go to the Observer in order, from one goroutine, so
// once a marker emitted now arrives, nothing emitted earlier is still on
// its way.
func (e *eventLog) flush(t *testing.T, c *Client) {
	t.Helper()
	n := len(e.of(eventMarker))
	c.events.emit(Event{Kind: eventMarker})
	testkit.WaitFor(t, 2*time.Second, "the events emitted so far", func() bool { return len(e.of(eventMarker)) > n })
}

// switches are the active-database changes (start-up's first choice is
// EventActivated, not one of them).
func (e *eventLog) switches() []Event { return e.of(EventActiveChanged) }

// await waits (events are delivered by the client's own goroutine) until
// at least n events of kind arrived, and returns those of that kind.
func (e *eventLog) await(t *testing.T, kind EventKind, n int) []Event {
	t.Helper()
	testkit.WaitFor(t, 2*time.Second, fmt.Sprintf("%d %s events", n, kind), func() bool { return len(e.of(kind)) >= n })
	return e.of(kind)
}

// awaitSwitches waits until at least n switches arrived, and returns
// them all.
func (e *eventLog) awaitSwitches(t *testing.T, n int) []Event {
	t.Helper()
	e.await(t, EventActiveChanged, n)
	return e.switches()
}

// standalone starts n independent standalone servers (extra: redis.conf
// lines for every one).
func standalone(t *testing.T, n int, cfg lab.Config) []*lab.Node {
	t.Helper()
	nodes := make([]*lab.Node, n)
	for i := range nodes {
		nodes[i] = lab.New(t, cfg).Node(0)
	}
	return nodes
}

// opts are go-redis options for a database client of n, as a service
// would set them.
func opts(n *lab.Node) *redis.Options {
	o := n.Options()
	o.DialTimeout = 500 * time.Millisecond
	o.ReadTimeout = 500 * time.Millisecond
	o.WriteTimeout = 500 * time.Millisecond
	return o
}

// newClient returns a client over the nodes, named db0, db1, ... with the
// given weights, closed when the test ends.
func newClient(t *testing.T, cfg Config, nodes []*lab.Node, weights ...float64) (*Client, *eventLog) {
	t.Helper()
	log := &eventLog{}
	if cfg.Observer == nil {
		cfg.Observer = log.observe
	}
	for i, n := range nodes {
		cfg.Databases = append(cfg.Databases, Database{Name: "db" + strconv.Itoa(i), Weight: weights[i], Options: opts(n)})
	}
	c, err := NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c, log
}

// stateOf is a database's stats.
func stateOf(c *Client, name string) DatabaseStats {
	for _, d := range c.Stats().Databases {
		if d.Name == name {
			return d
		}
	}
	return DatabaseStats{}
}

// nameNodes sets key "who" on each node to the database name newClient
// gives it (db0, db1, ...), so a read says which database served it.
func nameNodes(t *testing.T, nodes []*lab.Node) {
	t.Helper()
	for i, n := range nodes {
		if err := n.Do(context.Background(), "SET", "who", "db"+strconv.Itoa(i)).Err(); err != nil {
			t.Fatal(err)
		}
	}
}

// get reads key directly on the node's own port (past the client).
func get(t *testing.T, n *lab.Node, key string) string {
	t.Helper()
	v, err := n.Do(context.Background(), "GET", key).Text()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return v
}

// numsub is PUBSUB NUMSUB of channel on the node's own port.
func numsub(t *testing.T, n *lab.Node, channel string) int64 {
	t.Helper()
	v, err := n.Do(context.Background(), "PUBSUB", "NUMSUB", channel).Slice()
	if err != nil || len(v) != 2 {
		t.Fatalf("PUBSUB NUMSUB %s on %s: %v, %v", channel, n.Name(), v, err)
	}
	return v[1].(int64)
}
