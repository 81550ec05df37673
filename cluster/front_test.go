package cluster

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestFrontMethods: every exported method of *redis.Client is either the
// client's own or knowingly routed through the front.
func TestFrontMethods(t *testing.T) {
	testkit.CheckFrontMethods(t, reflect.TypeFor[*Client]())
}

// TestFrontMethodsOnACluster: the methods go-redis's ClusterClient users
// call work on a real cluster: WithTimeout routes by slot and bounds each
// call (a stalled node's command fails within the timeout, not the
// client's), PoolStats counts the nodes' connections and hits, Conn talks
// to a master, Wait is refused with a typed error.
func TestFrontMethodsOnACluster(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, nil)
	wt := c.WithTimeout(time.Second)
	defer wt.Close()
	for i := range 65 {
		key := "k" + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if err := wt.Set(ctx, key, "v", 0).Err(); err != nil {
			t.Fatalf("WithTimeout(1s).Set(%s): %v", key, err)
		}
	}
	st := c.PoolStats()
	if st.TotalConns < 3 || st.Hits+st.Misses < 65 {
		t.Fatalf("PoolStats after 65 commands on 3 masters: %+v", st)
	}
	// A command on a stalled node fails within WithTimeout's bound.
	owner, err := l.SlotOwner(ctx, Slot("stalled"))
	if err != nil {
		t.Fatal(err)
	}
	// The margin: what the machine itself takes now, not a guess.
	margin := max(200*time.Millisecond, 20*slowestPing(ctx, t, owner))
	if err := owner.Pause(); err != nil {
		t.Fatal(err)
	}
	short := c.WithTimeout(300 * time.Millisecond)
	defer short.Close()
	began := time.Now()
	err = short.Get(ctx, "stalled").Err()
	took := time.Since(began)
	_ = owner.Resume()
	var ne *NodeError
	var nm *NoMasterError
	if err == nil || !errors.As(err, &ne) && !errors.As(err, &nm) {
		t.Fatalf("a GET on a paused node through WithTimeout(300ms): %v", err)
	}
	if took > 300*time.Millisecond+margin {
		t.Fatalf("WithTimeout(300ms) call took %v (margin %v)", took, margin)
	}
	if pong, err := c.Conn().Ping(ctx).Result(); err != nil || pong != "PONG" || c.NodeAddress() == "" {
		t.Fatalf("Conn().Ping: %q, %v; NodeAddress %q", pong, err, c.NodeAddress())
	}
	if err := c.Wait(ctx, 1, time.Second).Err(); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Wait: %v, want ErrUnsupported", err)
	}
}
