package hashring

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// benchRing is a node in a ring of 100 nodes × 16 replicas, with its view
// published as if read from Redis (no Redis involved: ownership is pure
// computation on the snapshot).
func benchRing(tb testing.TB) (*Node, *Snapshot, []string) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	tb.Cleanup(func() { _ = c.Close() })
	n, err := NewNode(c, "bench", Config{Hostname: "node-0", PID: 1})
	if err != nil {
		tb.Fatal(err)
	}
	now := time.Now()
	rng := rand.New(rand.NewPCG(7, 8))
	var es []entry
	for _, m := range n.names {
		es = append(es, entry{member: m, score: timeScore(now)})
	}
	for i := 1; i < 100; i++ {
		for j := range 16 {
			m := Member{Start: rng.Uint32(), Hostname: "node-" + strconv.Itoa(i), PID: "1", ID: fmt.Sprintf("%08x", j)}
			es = append(es, entry{member: m.String(), score: timeScore(now)})
		}
	}
	snap := buildSnapshot("bench", XXHash, now, timeScore(now.Add(-time.Minute)), es, nil)
	if snap.NodeCount() != 100 || len(snap.replicas) != 1600 {
		tb.Fatalf("ring of %d nodes, %d replicas", snap.NodeCount(), len(snap.replicas))
	}
	n.publish(&run{deadline: now.Add(time.Hour)}, snap)
	tb.Cleanup(func() { n.timer.Stop() })
	return n, snap, keys(1024)
}

func BenchmarkOwner100x16(b *testing.B) {
	_, snap, ks := benchRing(b)
	i := 0
	for b.Loop() {
		if _, ok := snap.Owner(ks[i&1023]); !ok {
			b.Fatal("no owner")
		}
		i++
	}
}

func BenchmarkOwnerNode100x16(b *testing.B) {
	n, _, ks := benchRing(b)
	i := 0
	for b.Loop() {
		if _, ok := n.Owner(ks[i&1023]); !ok {
			b.Fatal("no owner")
		}
		i++
	}
}

func BenchmarkContains100x16(b *testing.B) {
	n, _, ks := benchRing(b)
	i, owned := 0, 0
	for b.Loop() {
		if n.Contains(ks[i&1023]) {
			owned++
		}
		i++
	}
	_ = owned
}

// BenchmarkContainsOwned100x16 is Contains for keys the node owns: the
// answer yes needs the ownership deadline checked (a clock read), which
// a no does not.
func BenchmarkContainsOwned100x16(b *testing.B) {
	n, _, ks := benchRing(b)
	var mine []string
	for _, k := range keys(100000) {
		if n.Contains(k) {
			mine = append(mine, k)
		}
	}
	if len(mine) < 64 {
		b.Fatalf("the node owns %d of 100,000 keys", len(mine))
	}
	_ = ks
	i := 0
	for b.Loop() {
		if !n.Contains(mine[i%len(mine)]) {
			b.Fatal("an owned key is not contained")
		}
		i++
	}
}

func BenchmarkRanges100x16(b *testing.B) {
	n, _, _ := benchRing(b)
	var sum uint64
	for b.Loop() {
		for _, r := range n.Ranges() {
			sum += r.Len()
		}
	}
	if sum == 0 {
		b.Fatal("the node owns nothing")
	}
}

func BenchmarkNodeCount100x16(b *testing.B) {
	n, _, _ := benchRing(b)
	for b.Loop() {
		if n.NodeCount() != 100 {
			b.Fatal("wrong node count")
		}
	}
}

// The baseline: redis-hashring's contains(), a linear scan of the node's
// ranges, ported to Go on the same ring (and without the clock check).
func BenchmarkContainsPythonScan100x16(b *testing.B) {
	n, _, ks := benchRing(b)
	ranges := n.Ranges()
	i, owned := 0, 0
	for b.Loop() {
		p := uint64(XXHash.Point(ks[i&1023]))
		for _, r := range ranges {
			if r.Start <= p && p < r.End {
				owned++
				break
			}
		}
		i++
	}
}

func BenchmarkPoint(b *testing.B) {
	for _, h := range []Hash{XXHash, CRC32} {
		b.Run(h.String(), func(b *testing.B) {
			var sink uint32
			for b.Loop() {
				sink += h.Point("account-12345")
			}
			_ = sink
		})
	}
}

func TestOwnershipDoesNotAllocate(t *testing.T) {
	n, snap, ks := benchRing(t)
	i := 0
	for name, f := range map[string]func(){
		"Snapshot.Owner": func() { snap.Owner(ks[i&1023]); i++ },
		"Node.Owner":     func() { n.Owner(ks[i&1023]); i++ },
		"Node.Contains":  func() { n.Contains(ks[i&1023]); i++ },
		"Node.NodeCount": func() { n.NodeCount() },
		"Node.Ranges":    func() { n.Ranges() },
		"CRC32.Point":    func() { CRC32.Point(ks[i&1023]); i++ },
	} {
		if a := testing.AllocsPerRun(1000, f); a != 0 {
			t.Errorf("%s: %v allocations per call", name, a)
		}
	}
	// The node's answers agree with the snapshot's.
	for _, k := range ks {
		o, _ := snap.Owner(k)
		if n.Contains(k) != (o == n.ID()) {
			t.Fatalf("%s: Contains %v, owner %s", k, n.Contains(k), o)
		}
	}
}
