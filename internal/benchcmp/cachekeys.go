package benchcmp

import (
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// CacheOps are the workloads of the cached-read comparisons: "hits" reads
// the keys given (after the first round every cached read is a hit),
// "hits90" makes every tenth read one of a key never read before (a miss,
// filled, and in time evicted), "misses" makes every read one.
var CacheOps = []string{"hits", "hits90", "misses"}

// ColdKeys picks the key of a client's next read under one of CacheOps.
// Each client has its own: it counts that client's reads. Keys never read
// before are "cold:<n>", which no benchmark writes (their reads are nil
// replies, which the caches cache too).
type ColdKeys struct{ n atomic.Uint64 }

// Pick returns key, or a key never read before (see CacheOps).
func (c *ColdKeys) Pick(op, key string) string {
	n := c.n.Add(1)
	if op == "misses" || op == "hits90" && n%10 == 0 {
		return "cold:" + strconv.FormatUint(n, 10)
	}
	return key
}

// RunCached is a cached-read comparison: it warms every client's cache
// (and tracking) with a "hits" read of each key, then runs CacheOps from
// 1, 8, 64 and 256 goroutines, 3 rounds of 1 s per client, ratios to
// base and to versus (see Comparison), and returns the table.
func RunCached(b *testing.B, tag string, keys []string, clients []Client, base, versus string) string {
	b.Helper()
	for _, c := range clients {
		for _, k := range keys {
			if err := c.Do(b.Context(), "hits", k); err != nil {
				b.Fatalf("%s: %v", c.Name, err)
			}
		}
	}
	time.Sleep(100 * time.Millisecond) // the trackers' first confirmations
	return Comparison{
		Rounds: 3, Turn: time.Second, Ops: CacheOps, Goroutines: []int{1, 8, 64, 256},
		Keys: keys, Clients: clients, Tag: tag, Base: base, Versus: []string{versus},
	}.Run(b)
}
