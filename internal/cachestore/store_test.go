package cachestore

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"
	"unsafe"
)

var t0 = time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)

// TestStoreReads is the life of one entry, step by step: each row a
// sequence of operations on one node and key, and what a Get then finds;
// every row twice, reserving with Reserve and with GetOrReserve's miss.
func TestStoreReads(t *testing.T) {
	type step func(s *Store, n *Node, tk **Ticket)
	viaGet := false
	reserve := func(s *Store, n *Node, tk **Ticket) {
		if !viaGet {
			*tk = s.Reserve(n, "k", "GET")
			return
		}
		var got Ticket
		if v, hit := s.GetOrReserve(n, "k", "GET", t0, &got); hit {
			t.Fatalf("GetOrReserve found %v where every row reserves a key it does not serve", v)
		}
		*tk = &got
	}
	fill := func(ttl time.Duration) step {
		return func(s *Store, n *Node, tk **Ticket) { s.Fill(*tk, "v", 1, ttl, t0) }
	}
	invalidate := func(s *Store, n *Node, _ **Ticket) { s.Invalidate(n, "k") }
	flush := func(s *Store, n *Node, _ **Ticket) { n.Flush(t0) }
	purge := func(s *Store, n *Node, _ **Ticket) { s.Purge(n) }
	abandon := func(s *Store, n *Node, tk **Ticket) { s.Abandon(*tk) }
	for _, tc := range []struct {
		name  string
		steps []step
		at    time.Duration // after t0
		want  bool
	}{
		{"filled", []step{reserve, fill(time.Minute)}, time.Second, true},
		{"never filled", []step{reserve}, 0, false},
		{"abandoned", []step{reserve, abandon}, 0, false},
		{"invalidated in flight", []step{reserve, invalidate, fill(time.Minute)}, 0, false},
		{"invalidated after the fill", []step{reserve, fill(time.Minute), invalidate}, 0, false},
		{"flushed in flight", []step{reserve, flush, fill(time.Minute)}, 0, false},
		{"flushed after the fill", []step{reserve, fill(time.Minute), flush}, 0, false},
		{"purged after the fill", []step{reserve, fill(time.Minute), purge}, 0, false},
		{"purged in flight", []step{reserve, purge, fill(time.Minute)}, 0, false},
		{"expired", []step{reserve, fill(time.Second)}, time.Second, false},
		{"just before expiry", []step{reserve, fill(time.Second)}, time.Second - 1, true},
		{"capped by MaxTTL", []step{reserve, fill(time.Hour)}, 10 * time.Minute, false},
		{"no TTL means MaxTTL", []step{reserve, fill(0)}, 10*time.Minute - 1, true},
		{"refilled after an invalidation", []step{reserve, fill(time.Minute), invalidate, reserve, fill(time.Minute)}, 0, true},
		{"filled twice by one ticket", []step{reserve, fill(time.Minute), invalidate, fill(time.Minute)}, 0, false},
	} {
		for _, viaGet = range []bool{false, true} {
			name := tc.name
			if viaGet {
				name += " (GetOrReserve)"
			}
			t.Run(name, func(t *testing.T) {
				s := NewStore(1<<20, 10*time.Minute)
				n := liveNode("127.0.0.1:6379")
				var tk *Ticket
				for _, st := range tc.steps {
					st(s, n, &tk)
				}
				v, ok := s.Get(n, "k", "GET", t0.Add(tc.at))
				if ok != tc.want || (ok && v != "v") {
					t.Fatalf("Get: %v %v, want found=%v", v, ok, tc.want)
				}
				if !ok && s.Entries() == 0 && s.Bytes() != 0 {
					t.Fatalf("no entries but %d bytes", s.Bytes())
				}
			})
		}
	}
}

// TestStoreKeepsNothingIdle: reads that end without an entry leave no
// state behind, whatever their order.
func TestStoreKeepsNothingIdle(t *testing.T) {
	s := NewStore(1<<20, time.Minute)
	n := liveNode("a")
	a, b := s.Reserve(n, "k", "GET"), s.Reserve(n, "k", "STRLEN")
	s.Invalidate(n, "k")
	c := s.Reserve(n, "k", "GET")
	s.Abandon(a)
	s.Fill(b, 3, 8, 0, t0)
	s.Abandon(c)
	s.Abandon(c)
	for i := range s.shards {
		if len(s.shards[i].keys) != 0 {
			t.Fatalf("shard %d keeps %d keys", i, len(s.shards[i].keys))
		}
	}
	if s.Bytes() != 0 {
		t.Fatalf("%d bytes held", s.Bytes())
	}
}

// TestStoreSeparatesNodesAndShapes: the same key on two nodes, and two
// commands of one key, are separate entries; invalidating the key on one
// node removes both of its shapes and leaves the other node's.
func TestStoreSeparatesNodesAndShapes(t *testing.T) {
	s := NewStore(1<<20, time.Minute)
	a, b := liveNode("a"), liveNode("b")
	for _, f := range []struct {
		n        *Node
		sub, val string
	}{{a, "GET", "a-get"}, {a, "STRLEN", "a-len"}, {b, "GET", "b-get"}} {
		s.Fill(s.Reserve(f.n, "k", f.sub), f.val, 5, 0, t0)
	}
	for _, c := range []struct {
		n        *Node
		sub, val string
	}{{a, "GET", "a-get"}, {a, "STRLEN", "a-len"}, {b, "GET", "b-get"}} {
		if v, ok := s.Get(c.n, "k", c.sub, t0); !ok || v != c.val {
			t.Fatalf("%s %s: %v %v, want %s", c.n.Addr(), c.sub, v, ok, c.val)
		}
	}
	s.Invalidate(a, "k")
	if _, ok := s.Get(a, "k", "GET", t0); ok {
		t.Fatal("a's GET served after its invalidation")
	}
	if _, ok := s.Get(a, "k", "STRLEN", t0); ok {
		t.Fatal("a's STRLEN served after its invalidation")
	}
	if v, ok := s.Get(b, "k", "GET", t0); !ok || v != "b-get" {
		t.Fatalf("b's GET: %v %v after a's invalidation", v, ok)
	}
}

// TestStoreBound: the store holds at most its bound, evicting the least
// recently used first; a reply larger than a shard's share is not cached.
func TestStoreBound(t *testing.T) {
	const max = numShards * 1000
	s := NewStore(max, time.Hour)
	n := liveNode("a")
	for i := range 10_000 {
		s.Fill(s.Reserve(n, fmt.Sprint("key:", i), "GET"), i, 200, 0, t0)
		if s.Bytes() > max {
			t.Fatalf("after %d fills: %d bytes, bound %d", i+1, s.Bytes(), max)
		}
	}
	if got := s.Counts().Evictions.Load(); got == 0 {
		t.Fatal("no evictions past the bound")
	}
	if s.Fill(s.Reserve(n, "huge", "GET"), "x", 2000, 0, t0) {
		t.Fatal("a reply above a shard's share was cached")
	}
	if got := s.Counts().TooLarge.Load(); got != 1 {
		t.Fatalf("TooLarge %d, want 1", got)
	}

	// Recency: in one shard, touch the oldest, then push one more: the
	// second oldest goes.
	s = NewStore(numShards*3*(entryOverhead+100), time.Hour)
	var same []string
	for i := 0; len(same) < 4; i++ {
		k := fmt.Sprint("r", i)
		if sh, _ := s.locate(n, k); sh == &s.shards[0] {
			same = append(same, k)
		}
	}
	for _, k := range same[:3] {
		s.Fill(s.Reserve(n, k, "G"), k, 100-int64(len(k))-1, 0, t0)
	}
	if _, ok := s.Get(n, same[0], "G", t0); !ok {
		t.Fatal("the first entry is gone before the bound was reached")
	}
	s.Fill(s.Reserve(n, same[3], "G"), same[3], 100-int64(len(same[3]))-1, 0, t0)
	if _, ok := s.Get(n, same[1], "G", t0); ok {
		t.Fatal("the least recently used entry was kept")
	}
	for _, k := range []string{same[0], same[2], same[3]} {
		if _, ok := s.Get(n, k, "G", t0); !ok {
			t.Fatalf("%s evicted; want only %s gone", k, same[1])
		}
	}
}

// TestStoreStale: a flushed node's entries are served by GetStale only
// within maxStale of the flush, and never by Get.
func TestStoreStale(t *testing.T) {
	s := NewStore(1<<20, time.Second)
	n := liveNode("a")
	s.Fill(s.Reserve(n, "k", "GET"), "v", 1, 0, t0)
	if v, age, ok := s.GetStale(n, "k", "GET", t0.Add(time.Hour), time.Second); !ok || v != "v" || age != 0 {
		t.Fatalf("current epoch, past its TTL: %v %v %v, want v, age 0", v, age, ok)
	}
	flushedAt := t0.Add(2 * time.Second)
	n.Flush(flushedAt)
	if _, ok := s.Get(n, "k", "GET", flushedAt); ok {
		t.Fatal("Get served an entry of an ended epoch")
	}
	for _, c := range []struct {
		after time.Duration
		want  bool
	}{{0, true}, {500 * time.Millisecond, true}, {time.Second, true}, {time.Second + 1, false}} {
		v, age, ok := s.GetStale(n, "k", "GET", flushedAt.Add(c.after), time.Second)
		if ok != c.want || (ok && (v != "v" || age != c.after)) {
			t.Fatalf("%v after the flush: %v age %v %v, want found=%v", c.after, v, age, ok, c.want)
		}
	}
	if _, _, ok := s.GetStale(n, "k", "GET", flushedAt, 0); ok {
		t.Fatal("GetStale with no MaxStale served")
	}
	for i := range epochsKept {
		n.Flush(flushedAt.Add(time.Duration(i) * time.Millisecond))
	}
	if _, _, ok := s.GetStale(n, "k", "GET", flushedAt, time.Hour); ok {
		t.Fatalf("an entry %d epochs old was served", epochsKept+1)
	}
}

// TestStoreConcurrent runs readers, fillers, invalidations and flushes at
// once (for -race), then checks the byte count against the entries.
func TestStoreConcurrent(t *testing.T) {
	s := NewStore(numShards*4096, time.Minute)
	nodes := []*Node{liveNode("a"), liveNode("b")}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 5000 {
				n := nodes[(g+i)%2]
				k := fmt.Sprint("k", i%97)
				switch i % 7 {
				case 0:
					s.Invalidate(n, k)
				case 1:
					if i%70 == 1 {
						n.Flush(t0)
					}
				case 2:
					s.Abandon(s.Reserve(n, k, "GET"))
				default:
					if _, ok := s.Get(n, k, "GET", t0); !ok {
						s.Fill(s.Reserve(n, k, "GET"), k, int64(i%300), 0, t0)
					}
				}
			}
		})
	}
	wg.Wait()
	checkAccounting(t, s)
}

// checkAccounting: the bytes counted are the entries' sizes, per shard
// and in all, each within its bound; every listed entry is its key's, and
// no key state is idle.
func checkAccounting(t *testing.T, s *Store) {
	t.Helper()
	var total int64
	for i := range s.shards {
		sh := &s.shards[i]
		var listed, mapped int64
		if sh.head.next != nil {
			for e := sh.head.next; e != &sh.head; e = e.next {
				listed += int64(e.size)
				ks := e.ks
				if ks.gone || sh.find(ks.h, ks.nk.node, ks.nk.key) != ks || ks.get(e.sub) != e {
					t.Fatalf("shard %d lists an entry its key does not hold", i)
				}
			}
		}
		for h, head := range sh.keys {
			for ks := head; ks != nil; ks = ks.chain {
				if ks.h != h || ks.gone {
					t.Fatalf("shard %d maps a key state under another hash, or one it dropped", i)
				}
				if ks.pending == 0 && ks.count() == 0 {
					t.Fatalf("shard %d keeps an idle key", i)
				}
				if ks.pending < 0 {
					t.Fatalf("shard %d: %d reads pending", i, ks.pending)
				}
				ks.each(func(e *entry) { mapped += int64(e.size) })
			}
		}
		if listed != sh.bytes || mapped != sh.bytes || sh.bytes > s.shardMax {
			t.Fatalf("shard %d: %d bytes counted, %d listed, %d mapped, bound %d", i, sh.bytes, listed, mapped, s.shardMax)
		}
		total += sh.bytes
	}
	if total != s.Bytes() {
		t.Fatalf("shards hold %d bytes, the store counts %d", total, s.Bytes())
	}
}

// liveNode is a node whose tracking is known alive for the tests' times.
func liveNode(addr string) *Node {
	n := NewNode(addr)
	n.confirm(t0.Add(24 * time.Hour))
	return n
}

// TestStoreServesOnlyWhileConfirmed: a node whose tracking is not known
// alive serves no hit; GetStale counts the entry's age from the end of
// the confirmation.
func TestStoreServesOnlyWhileConfirmed(t *testing.T) {
	s := NewStore(1<<20, time.Hour)
	n := NewNode("a")
	if s.Fill(s.Reserve(n, "k", "GET"), "v", 1, 0, t0) {
		t.Fatal("a read reserved with no tracking was filled")
	}
	n.confirm(t0.Add(time.Second))
	s.Fill(s.Reserve(n, "k", "GET"), "v", 1, 0, t0)
	if _, ok := s.Get(n, "k", "GET", t0.Add(time.Second-1)); !ok {
		t.Fatal("not served while confirmed")
	}
	if _, ok := s.Get(n, "k", "GET", t0.Add(time.Second)); ok {
		t.Fatal("served once the confirmation ran out")
	}
	if _, age, ok := s.GetStale(n, "k", "GET", t0.Add(3*time.Second), 5*time.Second); !ok || age != 2*time.Second {
		t.Fatalf("GetStale: age %v %v, want 2s", age, ok)
	}
}

// TestRedialWait: the wait doubles with each failure in a row, up to
// maxRedialWait.
func TestRedialWait(t *testing.T) {
	for _, c := range []struct {
		failures int
		want     time.Duration
	}{{1, 100 * time.Millisecond}, {2, 200 * time.Millisecond}, {3, 400 * time.Millisecond}, {6, 3200 * time.Millisecond}, {7, maxRedialWait}, {1000, maxRedialWait}} {
		if got := redialWait(100*time.Millisecond, c.failures); got != c.want {
			t.Errorf("after %d failures: %v, want %v", c.failures, got, c.want)
		}
	}
}

// BenchmarkStoreMiss is the store's part of a cached read that misses
// once the store is full: reserve a key never read before, fill it, and
// evict the oldest entry (go test -bench StoreMiss ./internal/cachestore/).
// The sizes are the sentinel throughput benchmark's: a nil reply, a
// 10-byte key, 64 MiB of them.
func BenchmarkStoreMiss(b *testing.B) {
	s := NewStore(64<<20, time.Minute)
	node := NewNode("127.0.0.1:6379")
	node.confirm(time.Now().Add(time.Hour))
	keys := make([]string, 1<<20)
	for i := range keys {
		keys[i] = "cold:" + strconv.Itoa(i)
	}
	now := time.Now()
	var tk Ticket
	for i := 0; s.Bytes() < 64<<20-4096; i++ { // fill it
		s.GetOrReserve(node, keys[i%len(keys)]+"w", "", now, &tk)
		s.Fill(&tk, nil, 0, 0, now)
	}
	before := s.Counts().Evictions.Load()
	readInParallel(b, s, node, keys, now, func(tk *Ticket) { s.Fill(tk, nil, 0, 0, now) })
	b.ReportMetric(float64(s.Counts().Evictions.Load()-before)/float64(b.N), "evictions/op")
}

// BenchmarkStoreHit is the store's part of a cached read that hits: 64
// keys, each read served from its entry.
func BenchmarkStoreHit(b *testing.B) {
	s := NewStore(64<<20, time.Minute)
	node := NewNode("127.0.0.1:6379")
	node.confirm(time.Now().Add(time.Hour))
	keys := make([]string, 64)
	now := time.Now()
	for i := range keys {
		keys[i] = "key:" + strconv.Itoa(i)
		s.Fill(s.Reserve(node, keys[i], ""), keys[i], 16, 0, now)
	}
	readInParallel(b, s, node, keys, now, func(*Ticket) { b.Fatal("a miss") })
}

// readInParallel reads keys through s from b's goroutines, each from an
// offset of its own, and calls miss with the ticket of each miss.
func readInParallel(b *testing.B, s *Store, node *Node, keys []string, now time.Time, miss func(*Ticket)) {
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		var tk Ticket
		i := rand.IntN(len(keys))
		for pb.Next() {
			i++
			if _, ok := s.GetOrReserve(node, keys[i%len(keys)], "", now, &tk); !ok {
				miss(&tk)
			}
		}
	})
}

// TestShardSize: shards fill whole cache lines, the Store's first field,
// so that no two share a line (see shard).
func TestShardSize(t *testing.T) {
	var s Store
	if size, off := unsafe.Sizeof(shard{}), unsafe.Offsetof(s.shards); size%64 != 0 || off != 0 {
		t.Fatalf("a shard is %d bytes at offset %d: want a multiple of 64 at 0", size, off)
	}
}
