package cluster

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestScriptsOnEveryMaster: SCRIPT LOAD reaches every master, so EVALSHA
// runs for a key of any shard; SCRIPT EXISTS is true only where every
// master has it; SCRIPT FLUSH empties every master.
func TestScriptsOnEveryMaster(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, nil)
	const script = "return redis.call('SET', KEYS[1], ARGV[1])"
	sha, err := c.ScriptLoad(ctx, script).Result()
	if err != nil {
		t.Fatal(err)
	}
	owners := map[string]bool{}
	for i := 0; len(owners) < 3 && i < 1000; i++ {
		k := fmt.Sprint("script-key-", i)
		o, err := l.SlotOwner(ctx, Slot(k))
		if err != nil {
			t.Fatal(err)
		}
		if owners[o.Addr()] {
			continue
		}
		owners[o.Addr()] = true
		if err := c.EvalSha(ctx, sha, []string{k}, "v").Err(); err != nil {
			t.Fatalf("EVALSHA for %s (on %s): %v", k, o.Name(), err)
		}
	}
	if len(owners) != 3 {
		t.Fatalf("keys found on %d masters, want 3", len(owners))
	}
	if got, err := c.ScriptExists(ctx, sha, "0000000000000000000000000000000000000000").Result(); err != nil || !slices.Equal(got, []bool{true, false}) {
		t.Fatalf("SCRIPT EXISTS = %v, %v; want [true false]", got, err)
	}
	// One master's cache emptied behind the client's back: not on every master.
	if err := l.ShardNodes(0)[0].Do(ctx, "SCRIPT", "FLUSH").Err(); err != nil {
		t.Fatal(err)
	}
	if got, err := c.ScriptExists(ctx, sha).Result(); err != nil || !slices.Equal(got, []bool{false}) {
		t.Fatalf("SCRIPT EXISTS after one master's flush = %v, %v; want [false]", got, err)
	}
	if err := c.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	for _, n := range l.Nodes() {
		got, err := n.Do(ctx, "SCRIPT", "EXISTS", sha).Slice()
		if err != nil || len(got) != 1 || got[0] != int64(0) {
			t.Fatalf("%s after SCRIPT FLUSH: %v, %v", n.Name(), got, err)
		}
	}
}
