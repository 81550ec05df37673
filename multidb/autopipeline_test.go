package multidb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestAutoPipelineBatchesAndFailsOverPerCommand: with Config.AutoPipeline
// (and through AutoPipeline()), concurrent writes share round trips to the
// active database; when it dies under them, each write is judged on its
// own: acknowledged ones are on the database that acknowledged them, none
// twice, and a write whose reply was lost fails with a
// DatabaseChangedError, never re-run blindly.
func TestAutoPipelineBatchesAndFailsOverPerCommand(t *testing.T) {
	for _, mode := range []string{"Config.AutoPipeline", "AutoPipeline()"} {
		t.Run(mode, func(t *testing.T) {
			ctx := testkit.Context(t, 60*time.Second)
			nodes := standalone(t, 2, lab.Config{})
			c, _ := newClient(t, fast(Config{AutoPipeline: mode == "Config.AutoPipeline"}), nodes, 10, 1)
			var via redis.Cmdable = c
			if mode == "AutoPipeline()" {
				ap, err := c.AutoPipeline()
				if err != nil {
					t.Fatal(err)
				}
				via = ap
			}
			const goroutines = 32
			var (
				wg        sync.WaitGroup
				stop      atomic.Bool
				mu        sync.Mutex
				acked     = map[string]bool{}
				changed   int
				otherErrs int
			)
			for g := range goroutines {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; !stop.Load(); i++ {
						id := fmt.Sprintf("%d:%d", g, i)
						err := via.RPush(ctx, "ops", id).Err()
						var dce *DatabaseChangedError
						mu.Lock()
						switch {
						case err == nil:
							acked[id] = true
						case errors.As(err, &dce):
							changed++
						default:
							otherErrs++
						}
						mu.Unlock()
					}
				}()
			}
			time.Sleep(300 * time.Millisecond)
			db0 := c.dbs[0]
			if db0.batch != nil {
				st := db0.batch.Stats()
				t.Logf("db0 before the kill: %d commands in %d round trips", st.Commands, st.Batches)
				if mode == "Config.AutoPipeline" && st.Batches*2 > st.Commands {
					t.Errorf("db0: %d commands in %d round trips from %d goroutines: not batched", st.Commands, st.Batches, goroutines)
				}
			}
			if err := nodes[0].Kill(); err != nil {
				t.Fatal(err)
			}
			testkit.WaitFor(t, 10*time.Second, "writes on db1", func() bool {
				n, _ := nodes[1].Do(ctx, "LLEN", "ops").Int()
				return n > 100
			})
			stop.Store(true)
			wg.Wait()
			on1, err := nodes[1].Do(ctx, "LRANGE", "ops", 0, -1).StringSlice()
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, id := range on1 {
				seen[id]++
				if seen[id] == 2 {
					t.Errorf("%s is twice on db1: a write was run twice", id)
				}
			}
			t.Logf("%d acknowledged, %d on db1, %d DatabaseChangedError, %d other errors", len(acked), len(on1), changed, otherErrs)
			if len(on1) == 0 {
				t.Fatal("no write reached db1 after the failover")
			}
		})
	}
}

// TestAsyncAutoPipelineKeepsSubmitOrder submits many writes from one
// goroutine through AsyncAutoPipeline without waiting: they run in submit
// order on the active database.
func TestAsyncAutoPipelineKeepsSubmitOrder(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	nodes := standalone(t, 2, lab.Config{})
	c, _ := newClient(t, fast(Config{}), nodes, 10, 1)
	ap, err := c.AsyncAutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	const n = 3000
	incrs := make([]*redis.IntCmd, n)
	for i := range n {
		_ = ap.RPush(ctx, "order", i)
		incrs[i] = ap.Incr(ctx, "count")
	}
	for i, cmd := range incrs {
		if v, err := cmd.Result(); err != nil || v != int64(i+1) {
			t.Fatalf("INCR %d: %d, %v; want %d (run out of submit order)", i, v, err, i+1)
		}
	}
	got, err := nodes[0].Do(ctx, "LRANGE", "order", 0, -1).StringSlice()
	if err != nil || len(got) != n {
		t.Fatalf("LRANGE: %d elements, %v; want %d", len(got), err, n)
	}
	for i, v := range got {
		if v != fmt.Sprint(i) {
			t.Fatalf("order[%d] = %s, want %d", i, v, i)
		}
	}
}

// TestAutoPipelineBlockingCommands: with Config.AutoPipeline, blocking
// commands are never batched: two BLPOPs blocked on the active database
// hold neither its other callers (their GETs are answered at once) nor
// their own replies past the ReadTimeout.
func TestAutoPipelineBlockingCommands(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	nodes := standalone(t, 1, lab.Config{})
	c, _ := newClient(t, fast(Config{AutoPipeline: true}), nodes, 1)
	popped := make(chan error, 2)
	for _, q := range []string{"bq1", "bq2"} {
		go func() { popped <- c.BLPop(ctx, 20*time.Second, q).Err() }()
	}
	testkit.WaitFor(t, 10*time.Second, "two clients blocked", func() bool {
		info, err := nodes[0].Info(ctx, "clients")
		return err == nil && info["blocked_clients"] == "2"
	})
	testkit.AllAnswer(ctx, t, 8, 5*time.Second, "GET beside the BLPOPs", func(ctx context.Context) error { return c.Get(ctx, "k").Err() })
	for _, q := range []string{"bq1", "bq2"} {
		if err := c.LPush(ctx, q, "x").Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if err := <-popped; err != nil {
			t.Errorf("BLPOP: %v", err)
		}
	}
}
