package hashring

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// FuzzContainsPaths checks that the node's two ways of answering Contains
// agree: the scan of its own ranges (used up to scanRanges of them) and
// the binary search of the whole ring (used beyond), for rings of 1 to 40
// nodes with 1 to 100 replicas each, the node's own count included, at
// random points and at every range boundary.
func FuzzContainsPaths(f *testing.F) {
	f.Add(uint64(1), uint8(10), uint8(16), uint8(16))
	f.Add(uint64(2), uint8(1), uint8(1), uint8(1))
	f.Add(uint64(3), uint8(40), uint8(100), uint8(3))
	f.Add(uint64(4), uint8(5), uint8(2), uint8(100))
	f.Fuzz(func(t *testing.T, seed uint64, nodes, replicas, own uint8) {
		nodes, replicas, own = 1+nodes%40, 1+replicas%100, 1+own%100
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
		defer c.Close()
		n, err := NewNode(c, "fuzz", Config{Hostname: "node-0", PID: 1, Replicas: int(own)})
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		var es []entry
		for _, m := range n.names {
			es = append(es, entry{member: m, score: timeScore(now)})
		}
		for i := 1; i < int(nodes); i++ {
			for j := range int(replicas) {
				m := Member{Start: rng.Uint32(), Hostname: "node-" + strconv.Itoa(i), PID: "1", ID: fmt.Sprintf("%08x", j)}
				es = append(es, entry{member: m.String(), score: timeScore(now)})
			}
		}
		snap := buildSnapshot("fuzz", XXHash, now, timeScore(now.Add(-time.Minute)), es, nil)
		n.publish(&run{deadline: now.Add(time.Hour)}, snap)
		defer n.timer.Stop()
		v := n.view.Load()
		check := func(p uint32) {
			scan := false
			for _, r := range v.ranges {
				if r.Start <= uint64(p) && uint64(p) < r.End {
					scan = true
				}
			}
			if search := v.mine[snap.index(p)]; scan != search || v.contains(p) != search || n.ContainsPoint(p) != search {
				t.Fatalf("point %d: scan %v, search %v, contains %v (%d ranges)", p, scan, search, v.contains(p), len(v.ranges))
			}
		}
		for _, r := range v.ranges {
			for _, q := range []uint64{r.Start, r.End - 1, r.End, r.Start - 1} {
				check(uint32(q)) //nolint:gosec // wraps on purpose: 0-1 and 2^32 are points too
			}
		}
		for range 256 {
			check(rng.Uint32())
		}
	})
}

// TestContainsAfterTheDeadline: a key the node owns is contained until the
// ownership deadline, and not after it, though the view is unchanged
// (Contains checks the deadline only for a yes).
func TestContainsAfterTheDeadline(t *testing.T) {
	n, snap, ks := benchRing(t)
	var mine string
	for _, k := range ks {
		if n.Contains(k) {
			mine = k
			break
		}
	}
	if mine == "" {
		t.Fatal("the node owns none of the keys")
	}
	n.publish(&run{deadline: time.Now().Add(-time.Millisecond)}, snap)
	if n.Contains(mine) || n.ContainsPoint(XXHash.Point(mine)) {
		t.Errorf("key %q is contained after the ownership deadline", mine)
	}
}
