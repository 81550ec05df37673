package sentinel

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// Consumers blocked in BLPOP 0 on the master when it is replaced: each
// call waiting on the old master is ended (CLIENT UNBLOCK ... ERROR) as the
// client switches, and sent again to the new master, so the consumers take
// the producer's next elements within half a second of the switch (they
// idled 3.3-3.9 s, until Sentinel demoted the old master), and no element
// is lost or popped twice.
func TestBlockedCallsFollowTheSwitch(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Sentinel(2))
	c, events := newTestClient(t, l, func(o *Config) { o.ReadTimeout = 500 * time.Millisecond })
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	popped := map[string]int{}
	var poppedAt []time.Time
	var consumerErrs []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				v, err := c.BLPop(ctx, 0, "queue").Result()
				mu.Lock()
				if err == nil {
					popped[v[1]]++
					poppedAt = append(poppedAt, time.Now())
				} else if !errors.Is(err, context.Canceled) {
					consumerErrs = append(consumerErrs, err)
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(10 * time.Millisecond)
				}
			}
		})
	}
	// A producer writes through its own client straight to whichever node
	// is master, so it is never held by rediskit's failover handling.
	var produced atomic.Int64
	push := func(n int) {
		for range n {
			id := fmt.Sprintf("item-%d", produced.Add(1))
			for {
				m, err := l.Master(ctx)
				if err == nil && m.Do(ctx, "RPUSH", "queue", id).Err() == nil {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	push(20)
	testkit.WaitFor(t, 10*time.Second, "the first elements consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(popped) == 20
	})
	old := l.Node(0)
	blockedOn := func(n *lab.Node) int {
		list, err := n.Do(ctx, "CLIENT", "LIST").Text()
		if err != nil {
			return -1
		}
		return strings.Count(list, "cmd=blpop")
	}
	testkit.WaitFor(t, 5*time.Second, "every consumer blocked on the master", func() bool { return blockedOn(old) == 4 })
	// When the calls waiting on the old master end: by the client, at the
	// switch, or (without it) when Sentinel demotes the old master.
	ended := make(chan time.Time, 1)
	go func() {
		for ctx.Err() == nil {
			if blockedOn(old) == 0 {
				ended <- time.Now()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	res, err := l.Failover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var switched time.Time
	for _, ev := range events.all() {
		if ev.Kind == EventMasterChanged && ev.Master == res.NewMaster.Addr() {
			switched = ev.Time
		}
	}
	if switched.IsZero() {
		t.Fatalf("no switch to %s (events %v)", res.NewMaster.Addr(), events.all())
	}
	var unblocked time.Time
	select {
	case unblocked = <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the consumers never left the old master")
	}
	testkit.WaitFor(t, 5*time.Second, "every consumer blocked on the new master", func() bool { return blockedOn(res.NewMaster) == 4 })
	pushed := time.Now()
	push(20)
	testkit.WaitFor(t, 15*time.Second, "the elements pushed after the failover consumed", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(popped) == 40
	})
	mu.Lock()
	firstAfter := time.Duration(-1)
	for _, at := range poppedAt {
		if at.After(pushed) {
			firstAfter = at.Sub(pushed)
			break
		}
	}
	mu.Unlock()
	close(stop)
	// The consumers blocked at the end are ended by Close (the test's
	// cleanup); give them one more element each to return now.
	push(4)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	for id, n := range popped {
		if n != 1 {
			t.Errorf("%s popped %d times", id, n)
		}
	}
	if int64(len(popped)) != produced.Load() {
		t.Errorf("%d of %d elements popped", len(popped), produced.Load())
	}
	t.Logf("switched %v after the failover command; the calls waiting on the old master ended %v after the switch; the first element pushed after the failover was popped %v after being pushed; consumer errors: %v",
		switched.Sub(res.Requested).Round(time.Millisecond), unblocked.Sub(switched).Round(time.Millisecond), firstAfter.Round(time.Millisecond), consumerErrs)
	if d := unblocked.Sub(switched); d > 500*time.Millisecond {
		t.Errorf("the calls waiting on the old master ended %v after the switch, want within 500 ms", d)
	}
	if firstAfter < 0 || firstAfter > 500*time.Millisecond {
		t.Errorf("the first element pushed after the failover waited %v for a consumer, want under 500 ms", firstAfter)
	}
	if n := c.Stats().WritesRerun; n < 1 {
		t.Errorf("no blocked call was sent again to the new master (stats %+v)", c.Stats())
	}
}
