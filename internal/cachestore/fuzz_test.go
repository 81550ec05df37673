package cachestore

import (
	"testing"
	"time"
)

// FuzzStore runs a sequence of operations decoded from the input against
// a store with a small bound, and a model that knows, for every node, key
// and command shape, the value a read may be served: the one filled by a
// read reserved after the key's last invalidation and the node's last
// flush. The store may forget (evict) but never serve what the model
// does not hold, and its accounting holds after every step.
func FuzzStore(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0, 0, 1, 0, 2, 0, 3, 0, 4, 0, 5, 0})
	f.Add([]byte{16, 32, 48, 64, 80, 96, 112, 128, 1, 17, 33, 49})
	f.Fuzz(func(t *testing.T, ops []byte) {
		s := NewStore(numShards*600, time.Minute)
		// The third node has the first one's address: its keys hash as
		// the first's do, so that their states share the map's chains.
		nodes := []*Node{liveNode("a"), liveNode("b"), liveNode("a")}
		keys := []string{"k0", "k1", "k2"}
		subs := []string{"GET", "STRLEN"}
		type mk struct {
			n   int
			key string
			sub string
		}
		type ticket struct {
			tk      *Ticket
			at      mk
			version int
			epoch   int
		}
		version := map[[2]any]int{} // (node, key) → invalidations and purges
		epoch := make([]int, len(nodes))
		valid := map[mk]int{} // what may be served
		var tickets []ticket
		now := t0
		for i, op := range ops {
			n, key, sub := int(op>>3)%len(nodes), keys[int(op>>4)%len(keys)], subs[int(op>>6)%len(subs)]
			at := mk{n, key, sub}
			vk := [2]any{n, key}
			switch op % 8 {
			case 0, 1:
				tickets = append(tickets, ticket{s.Reserve(nodes[n], key, sub), at, version[vk], epoch[n]})
			case 2, 3:
				if len(tickets) == 0 {
					continue
				}
				tk := tickets[0]
				tickets = tickets[1:]
				size := int64(op) * 2
				ok := s.Fill(tk.tk, i, size, 0, now)
				current := tk.version == version[[2]any{tk.at.n, tk.at.key}] && tk.epoch == epoch[tk.at.n]
				if ok && !current {
					t.Fatalf("step %d: a fill raced by an invalidation or a flush was stored", i)
				}
				if ok {
					valid[tk.at] = i
				}
			case 4:
				s.Invalidate(nodes[n], key)
				version[vk]++
				for _, sb := range subs {
					delete(valid, mk{n, key, sb})
				}
			case 5:
				if op&0x80 != 0 {
					s.Purge(nodes[n])
					for _, k := range keys {
						version[[2]any{n, k}]++
					}
				} else {
					nodes[n].Flush(now)
				}
				epoch[n]++
				for m := range valid {
					if m.n == n {
						delete(valid, m)
					}
				}
			case 6:
				if len(tickets) > 0 {
					s.Abandon(tickets[len(tickets)-1].tk)
					tickets = tickets[:len(tickets)-1]
				}
			case 7:
				now = now.Add(time.Second)
			}
			v, ok := s.Get(nodes[n], key, sub, now)
			if ok {
				if want, held := valid[at]; !held || v != want {
					t.Fatalf("step %d: served %v for %v; the model holds %v (%v)", i, v, at, want, held)
				}
			}
			checkAccounting(t, s)
		}
		for _, tk := range tickets {
			s.Abandon(tk.tk)
		}
		checkAccounting(t, s)
	})
}
