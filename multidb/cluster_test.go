package multidb

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestClusterDatabases runs two lab clusters as the databases, each given
// as a rediskit cluster.Client, under continuous reads and writes, with a
// subscriber: the client loses every node of the first cluster (their
// client ports black-holed; the clusters themselves stay whole), traffic
// moves to the second; no write ran twice, counted by unique op ids on
// both clusters; the subscription moves to the second cluster; and
// OnNewNode, AddHook and InternalHook reach the clusters' node clients.
func TestClusterDatabases(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	labs := []*lab.Lab{lab.New(t, lab.Cluster(3, 0)), lab.New(t, lab.Cluster(3, 0))}
	t.Logf("server: %v", labs[0].ServerVersion())
	var dbs []Database
	dbOf := map[string]string{} // node address → database
	for i, l := range labs {
		name := "db" + strconv.Itoa(i)
		o := l.ClusterOptions()
		cc, err := cluster.NewClient(cluster.Config{Addrs: o.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
			DialTimeout: 500 * time.Millisecond, ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
			WriteHoldTimeout: 500 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cc.Close() })
		if err := cc.Set(ctx, "who", name, 0).Err(); err != nil {
			t.Fatal(err)
		}
		for _, a := range o.Addrs {
			dbOf[a] = name
		}
		dbs = append(dbs, Database{Name: name, Weight: float64(10 - 5*i), Client: cc})
	}
	log := &eventLog{}
	// No failback: the first cluster comes back before the counts.
	var internalCalls testkit.CommandCounter
	c, err := NewClient(fast(Config{Databases: dbs, Observer: log.observe, FailbackInterval: -1, InternalHook: &internalCalls}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var mu sync.Mutex
	nodeCounters := map[string]*testkit.CommandCounter{} // by node address
	c.OnNewNode(func(rc *redis.Client) {
		mu.Lock()
		defer mu.Unlock()
		h := nodeCounters[rc.Options().Addr]
		if h == nil {
			h = &testkit.CommandCounter{}
			nodeCounters[rc.Options().Addr] = h
		}
		rc.AddHook(h)
	})
	var userCalls testkit.CommandCounter
	c.AddHook(&userCalls)
	testkit.WaitFor(t, 10*time.Second, "the first health checks", func() bool {
		return stateOf(c, "db0").ChecksPassed > 0 && stateOf(c, "db1").ChecksPassed > 0
	})

	ps := c.Subscribe(ctx, "news")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	msgs := ps.Channel()
	expectDelivery(t, c, msgs, "news", "before the fault", "db0")

	var cut time.Time
	ops := underLoad(ctx, c, 500*time.Millisecond, func() {
		cut = time.Now()
		for _, n := range labs[0].Nodes() {
			n.Proxy().BlackHole()
		}
	}, func() bool { return c.Active() == "db1" }, time.Second)
	if c.Active() != "db1" {
		t.Fatalf("active %q after the first cluster was cut off, want db1", c.Active())
	}
	expectDelivery(t, c, msgs, "news", "after the failover", "db1")
	subscribers := func(l *lab.Lab) (n int64) {
		for _, node := range l.Nodes() {
			n += numsub(t, node, "news")
		}
		return n
	}
	if got := subscribers(labs[1]); got != 1 {
		t.Fatalf("%d subscriptions to news on the second cluster, want 1", got)
	}
	for _, n := range labs[0].Nodes() {
		n.Proxy().Restore()
	}
	testkit.WaitFor(t, 5*time.Second, "the subscription on the first cluster to end", func() bool { return subscribers(labs[0]) == 0 })

	// No write ran twice; every acknowledged write ran exactly once.
	keys := writeKeys(ops)
	counts := make([]map[string]int, len(labs))
	for i, l := range labs {
		cl := redis.NewClusterClient(l.ClusterOptions())
		counts[i] = countKeysOn(t, ctx, cl, keys)
		_ = cl.Close()
	}
	var acked, changed, onDB1 int
	var firstOnDB1 time.Time
	otherErrs := map[string]int{}
	for _, o := range ops {
		if !o.write {
			if o.err == nil && o.val == "db1" && (firstOnDB1.IsZero() || o.end.Before(firstOnDB1)) {
				firstOnDB1 = o.end
			}
			continue
		}
		n := counts[0][o.key] + counts[1][o.key]
		switch {
		case n > 1:
			t.Errorf("%s ran %d times (db0 %d, db1 %d): %v", o.key, n, counts[0][o.key], counts[1][o.key], o.err)
		case o.err == nil && n != 1:
			t.Errorf("%s was acknowledged but ran %d times", o.key, n)
		}
		switch {
		case o.err == nil:
			acked++
			if counts[1][o.key] == 1 {
				onDB1++
				if firstOnDB1.IsZero() || o.end.Before(firstOnDB1) {
					firstOnDB1 = o.end
				}
			}
		case errors.Is(o.err, ErrDatabaseChanged):
			changed++
		default:
			otherErrs[o.err.Error()]++
		}
	}
	if onDB1 == 0 {
		t.Fatal("no write was acknowledged by the second cluster")
	}
	st := c.Stats()
	t.Logf("cut-off → first success on db1: %v; %d ops: %d writes acknowledged (%d by db1), %d refused as DatabaseChanged, %d other write errors; reads retried %d, writes re-run %d, writes refused %d",
		firstOnDB1.Sub(cut).Round(time.Millisecond), len(ops), acked, onDB1, changed, len(otherErrs), st.ReadsRetried, st.WritesRerun, st.WritesRefused)
	if len(otherErrs) > 0 {
		t.Logf("other write errors: %v", otherErrs)
	}
	sw := log.awaitSwitches(t, 1)
	if len(sw) != 1 || sw[0].Old != "db0" || sw[0].New != "db1" || sw[0].Reason != ReasonAutomatic {
		t.Fatalf("switches %v, want one automatic db0 → db1", sw)
	}

	// The hooks reached the clusters' node clients: the caller's writes
	// were seen on nodes of both clusters.
	incrs := map[string]int{}
	mu.Lock()
	for addr, h := range nodeCounters {
		incrs[dbOf[addr]] += h.Counts()["incr"]
	}
	mu.Unlock()
	if incrs["db0"] == 0 || incrs["db1"] == 0 {
		t.Errorf("OnNewNode's hooks saw INCR %v times by database, want some on both", incrs)
	}
	if got := userCalls.Counts()["incr"]; got < acked {
		t.Errorf("AddHook's hook saw %d INCR, fewer than the %d acknowledged", got, acked)
	}
	// The health checks (PING) are the InternalHook's, not AddHook's.
	if user, internal := userCalls.Counts()["ping"], internalCalls.Counts()["ping"]; user != 0 || internal == 0 {
		t.Errorf("PING seen %d times by AddHook's hook and %d times by InternalHook, want 0 and some", user, internal)
	}
}

// countKeysOn returns the value of each key that exists, read through cl.
func countKeysOn(t *testing.T, ctx context.Context, cl redis.Cmdable, keys []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	for chunk := range slices.Chunk(keys, 500) {
		cmds, err := cl.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, k := range chunk {
				p.Get(ctx, k)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			t.Fatal(err)
		}
		for i, cmd := range cmds {
			if v, err := cmd.(*redis.StringCmd).Int(); err == nil {
				out[chunk[i]] = v
			}
		}
	}
	return out
}
