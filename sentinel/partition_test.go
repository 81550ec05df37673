//go:build unix

package sentinel

import (
	"context"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// partitionRun is one client's writes through a partition: what it was
// told was acknowledged, and what the final master has.
type partitionRun struct {
	name       string
	acked      []string
	errs       map[string]int
	lost, dups int
	lastLost   time.Duration // the last lost write's acknowledgement, after the cut
}

// pacedWriter RPUSHes unique ids to key through c at about rate per
// second until stop, recording what was acknowledged.
func pacedWriter(ctx context.Context, c redis.UniversalClient, key string, rate int, stop <-chan struct{}, run *partitionRun, mu *sync.Mutex, ackedAt map[string]time.Time) {
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		id := fmt.Sprintf("%s-%d", key, i)
		octx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := c.RPush(octx, key, id).Err()
		cancel()
		mu.Lock()
		if err == nil {
			run.acked = append(run.acked, id)
			ackedAt[id] = time.Now()
		} else {
			run.errs[errKind(err)]++
		}
		mu.Unlock()
	}
}

// The master cut off from the sentinels and the replicas while the
// applications still reach it: Sentinel promotes a replica, and whatever
// the old master acknowledged meanwhile is lost when the partition heals.
// Three clients write at the same pace through the same partition: go-redis
// NewFailoverClient, rediskit in its default mode and in durable mode.
// rediskit holds writes once a sentinel cannot reach the master and the
// master cannot reach its replicas; durable mode must lose nothing, the
// default mode at most a quarter of what go-redis loses, and neither may
// duplicate a write.
func TestPartitionedMasterLosesFewWrites(t *testing.T) {
	for _, mode := range []lab.CutMode{lab.Drop, lab.Refuse} {
		t.Run(mode.String(), func(t *testing.T) { testPartitionedMaster(t, mode) })
	}
}

func testPartitionedMaster(t *testing.T, mode lab.CutMode) {
	ctx := testkit.Context(t, 2*time.Minute)
	l := lab.New(t, lab.Config{Replicas: 2, Sentinels: 3, Partitions: true})
	oldMaster := l.Node(0)
	events := &eventLog{}
	ours := func(durable bool, observe func(Event)) *Client {
		c, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
			Durable: durable, Observer: observe})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	def, dur := ours(false, events.observe), ours(true, nil)
	gor := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
		Dialer: (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 5 * time.Minute}).DialContext})
	t.Cleanup(func() { _ = gor.Close() })
	clients := []struct {
		name string
		c    redis.UniversalClient
	}{{"go-redis NewFailoverClient", gor}, {"rediskit (default)", def}, {"rediskit (durable)", dur}}
	for _, c := range clients {
		if err := c.c.Ping(ctx).Err(); err != nil {
			t.Fatal(err)
		}
	}
	testkit.WaitFor(t, 10*time.Second, "both replicas counted for durable writes", func() bool { return len(dur.Stats().DurableReplicas) == 2 })

	runs := make([]*partitionRun, len(clients))
	var mu sync.Mutex
	ackedAt := map[string]time.Time{}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	const writers, rate = 4, 250 // per client: about 1,000 writes/s
	for i, c := range clients {
		runs[i] = &partitionRun{name: c.name, errs: map[string]int{}}
		for w := range writers {
			wg.Go(func() { pacedWriter(ctx, c.c, fmt.Sprintf("ops%d:%d", i, w), rate, stop, runs[i], &mu, ackedAt) })
		}
	}
	time.Sleep(time.Second)

	others := []lab.Endpoint{}
	for _, n := range l.Nodes()[1:] {
		others = append(others, n)
	}
	for _, s := range l.Sentinels() {
		others = append(others, s)
	}
	cut := time.Now()
	if err := l.Partition(mode, []lab.Endpoint{oldMaster}, others); err != nil {
		t.Fatal(err)
	}
	var newMaster *lab.Node
	testkit.WaitFor(t, 40*time.Second, "the sentinels to name a new master", func() bool {
		names := map[string]bool{}
		for _, s := range l.Sentinels() {
			addr, err := s.MasterAddr(ctx)
			if err != nil {
				return false
			}
			names[addr] = true
		}
		if len(names) != 1 {
			return false
		}
		for addr := range names {
			newMaster = l.NodeByAddr(addr)
		}
		return newMaster != nil && newMaster != oldMaster
	})
	failedOver := time.Since(cut)
	time.Sleep(2 * time.Second) // every client on the new master
	close(stop)
	wg.Wait()
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}

	for i, run := range runs {
		present := map[string]int{}
		for w := range writers {
			ids, err := newMaster.Do(ctx, "LRANGE", fmt.Sprintf("ops%d:%d", i, w), 0, -1).StringSlice()
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range ids {
				present[id]++
			}
		}
		for _, n := range present {
			run.dups += n - 1
		}
		for _, id := range run.acked {
			if present[id] == 0 {
				run.lost++
				run.lastLost = max(run.lastLost, ackedAt[id].Sub(cut))
			}
		}
		t.Logf("%s: %d acknowledged, %d lost (the last acknowledged %v after the cut), %d duplicates; errors: %s",
			run.name, len(run.acked), run.lost, run.lastLost.Round(time.Millisecond), run.dups, errSummary(run.errs))
	}
	var held time.Duration = -1
	for _, ev := range events.all() {
		if ev.Time.After(cut) && (ev.Kind == EventMasterIsolated || ev.Kind == EventFailoverStarted) {
			held = ev.Time.Sub(cut)
			t.Logf("rediskit (default): %v", ev)
			break
		}
	}
	t.Logf("%s partition: the sentinels named a new master %v after the cut; rediskit held writes %v after it",
		mode, failedOver.Round(time.Millisecond), held.Round(time.Millisecond))
	gr, d, du := runs[0], runs[1], runs[2]
	for _, r := range []*partitionRun{d, du} {
		if r.dups != 0 {
			t.Errorf("%s: %d duplicated writes", r.name, r.dups)
		}
	}
	if du.lost != 0 {
		t.Errorf("durable mode: %d acknowledged writes lost", du.lost)
	}
	if gr.lost == 0 {
		t.Fatalf("go-redis lost no write: the partition did not cut the master off")
	}
	if d.lost*4 > gr.lost {
		t.Errorf("default mode lost %d acknowledged writes, go-redis %d: want at most a quarter", d.lost, gr.lost)
	}
}

// Partitions that cost no write if Sentinel acts on them hold writes at
// most briefly, and fail none: the replicas cut from the master while
// every sentinel still reaches it (no failover comes; the hold on
// suspicion ends once the sentinels have vouched for the master), and one
// sentinel cut from the master (the replicas still confirm its writes).
func TestPartitionsThatLoseNoWriteHoldLittle(t *testing.T) {
	tests := []struct {
		name string
		// cut returns the groups to partition.
		cut func(l *lab.Lab) [][]lab.Endpoint
		// maxHeld bounds the writes' hold (0: none allowed).
		maxHeld time.Duration
	}{
		{"the replicas cut from the master, the sentinels reaching all", func(l *lab.Lab) [][]lab.Endpoint {
			return [][]lab.Endpoint{{l.Node(0)}, {l.Node(1), l.Node(2)}}
		}, 3 * time.Second},
		{"one sentinel cut from the master", func(l *lab.Lab) [][]lab.Endpoint {
			return [][]lab.Endpoint{{l.Node(0)}, {l.Sentinels()[0]}}
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := testkit.Context(t, time.Minute)
			// down-after 30 s: whatever the sentinels see, no failover.
			l := lab.New(t, lab.Config{Replicas: 2, Sentinels: 3, Partitions: true, DownAfter: 30 * time.Second})
			c, events := newTestClient(t, l, func(o *Config) { o.RefreshInterval = 0 })
			if err := c.Ping(ctx).Err(); err != nil {
				t.Fatal(err)
			}
			testkit.WaitFor(t, 10*time.Second, "both replicas seen", func() bool { return len(c.Stats().Replicas) == 2 })
			stop := make(chan struct{})
			var mu sync.Mutex
			var slowest time.Duration
			var failed []error
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Go(func() {
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						began := time.Now()
						err := c.Set(ctx, fmt.Sprintf("k%d", w), i, 0).Err()
						mu.Lock()
						slowest = max(slowest, time.Since(began))
						if err != nil {
							failed = append(failed, err)
						}
						mu.Unlock()
						time.Sleep(4 * time.Millisecond)
					}
				})
			}
			time.Sleep(500 * time.Millisecond)
			cut := time.Now()
			if err := l.Partition(lab.Drop, tt.cut(l)...); err != nil {
				t.Fatal(err)
			}
			time.Sleep(5 * time.Second)
			close(stop)
			wg.Wait()
			var held time.Duration
			isolated, ended := 0, 0
			for _, ev := range events.all() {
				if ev.Time.Before(cut) {
					continue
				}
				switch ev.Kind {
				case EventMasterIsolated:
					isolated++
					t.Logf("%v after the cut: %v", ev.Time.Sub(cut).Round(time.Millisecond), ev)
				case EventIsolationEnded:
					ended++
					held += ev.Duration
					t.Logf("%v after the cut: %v", ev.Time.Sub(cut).Round(time.Millisecond), ev)
				case EventMasterChanged, EventFailoverStarted:
					t.Errorf("%v", ev)
				}
			}
			t.Logf("writes held %d times for %v in all; the slowest write took %v", isolated, held, slowest.Round(time.Millisecond))
			if len(failed) > 0 {
				t.Errorf("%d writes failed, the first: %v", len(failed), failed[0])
			}
			if isolated != ended {
				t.Errorf("%d holds started, %d ended", isolated, ended)
			}
			if held > tt.maxHeld {
				t.Errorf("writes held %v in all, want at most %v", held, tt.maxHeld)
			}
			if tt.maxHeld > 0 && isolated > 1 {
				t.Errorf("writes held %d times for one partition, want once (the sentinels vouched for the master)", isolated)
			}
		})
	}
}
