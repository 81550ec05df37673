package cluster

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestSlotMatchesServer compares Slot with CLUSTER KEYSLOT on a real node
// for many keys, tags included.
func TestSlotMatchesServer(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Cluster(1, 0))
	rc := l.Node(0).NewClient()
	defer rc.Close()
	var keys []string
	for i := range 500 {
		keys = append(keys, fmt.Sprint("key:", i), fmt.Sprintf("{t%d}x", i%37), fmt.Sprintf("a{%d}{b}", i), fmt.Sprintf("{}%d", i), fmt.Sprintf("\xff%d{", i))
	}
	pipe := rc.Pipeline()
	cmds := make([]interface{ Val() int64 }, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.ClusterKeySlot(context.Background(), k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	for i, k := range keys {
		if got, want := Slot(k), int(cmds[i].Val()); got != want {
			t.Errorf("Slot(%q) = %d, CLUSTER KEYSLOT %d", k, got, want)
		}
	}
}

func FuzzSlot(f *testing.F) {
	for _, s := range []string{"", "{", "}", "{}", "{a}", "a{b}c", "\x00\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		s := Slot(key)
		if s < 0 || s >= Slots {
			t.Fatalf("Slot(%q) = %d", key, s)
		}
	})
}

func BenchmarkSlot(b *testing.B) {
	for b.Loop() {
		_ = Slot("{user:1000}:cart")
	}
}
