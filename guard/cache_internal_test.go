package guard

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rediskit/rediskit/lab"
)

// Concurrent misses of one key share one load; a JSON-coded value type.
func TestCacheConcurrentMissesShareOneLoad(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l := lab.New(t, lab.Standalone())
	g, err := Open(ClientConfig{Addr: l.Node(0).Addr(), KeyPrefix: "test", ReadTimeout: 2 * time.Second, CallLimit: 3 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	type product struct {
		SKU   string
		Price int
	}
	var calls atomic.Int64
	release := make(chan struct{})
	c, err := NewCache(g, CacheConfig[product]{Name: "product",
		Load: func(ctx context.Context, sku string) (product, error) {
			calls.Add(1)
			<-release
			return product{SKU: sku, Price: 1250}, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	const n = 10
	results := make(chan Result[product], n)
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			r, err := c.Lookup(ctx, "sku-7")
			if err != nil {
				t.Error(err)
			}
			results <- r
		})
	}
	// Every lookup has missed and joined the load before it is released.
	WaitFor(t, ctx, func() bool { return c.flight.waiting(c.Key("sku-7")) == n-1 })
	close(release)
	wg.Wait()
	close(results)
	var loaders, shared int
	for r := range results {
		if r.Value != (product{"sku-7", 1250}) {
			t.Errorf("value %+v", r.Value)
		}
		switch r.Source {
		case SourceLoader:
			loaders++
		case SourceShared:
			shared++
		}
	}
	if calls.Load() != 1 || loaders != 1 || shared != n-1 {
		t.Fatalf("loader calls %d, sources: %d loader, %d shared; want 1, 1, %d", calls.Load(), loaders, shared, n-1)
	}
	raw, err := l.Node(0).Do(ctx, "GET", c.Key("sku-7")).Text()
	if err != nil || raw != `{"SKU":"sku-7","Price":1250}` {
		t.Fatalf("stored %q, %v", raw, err)
	}
}
