package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// replicaFlood is a fake sentinel naming a real master and listing n
// replicas flagged flags, at addresses where nothing listens (127.1.x.y:1,
// refused at once on loopback).
func replicaFlood(t *testing.T, masterAddr string, n int, flags string) *testkit.FakeServer {
	t.Helper()
	host, port, _ := net.SplitHostPort(masterAddr)
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", n)
	for i := range n {
		ip := fmt.Sprintf("127.1.%d.%d", i/250, i%250+1)
		b.WriteString(respFields("name", ip+":1", "ip", ip, "port", "1", "flags", flags))
	}
	replicas := b.String()
	return newFakeServer(t, func(args []string) string {
		if !strings.EqualFold(args[0], "SENTINEL") || len(args) < 2 {
			return "-ERR no\r\n"
		}
		switch strings.ToUpper(args[1]) {
		case "MASTER":
			return masterFields(host, port)
		case "GET-MASTER-ADDR-BY-NAME":
			return respFields(host, port)
		case "REPLICAS":
			return replicas
		case "SENTINELS":
			return "*0\r\n"
		}
		return "-ERR no\r\n"
	})
}

// peakHeap samples the heap in use until stop is closed, and returns a
// function that waits for the sampler and returns the highest sample.
func peakHeap(stop <-chan struct{}) func() uint64 {
	var peak uint64
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			peak = max(peak, m.HeapInuse)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	return func() uint64 { wg.Wait(); return peak }
}

// awaitPoolDialers waits for go-redis's background dialers of the closed
// pools to end: a pool whose dials failed PoolSize times dials again every
// second from a goroutine of its own (ConnPool.tryDial), which ends at its
// next wake-up once the pool is closed.
func awaitPoolDialers(t *testing.T) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "go-redis's pool dialers to end", func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:runtime.Stack(buf, true)]), "(*ConnPool).tryDial")
	})
}

// A sentinel listing 50,000 replicas costs the client at most MaxReplicas
// addresses dialled, not one for each: the client dialled 2,724-6,581 of
// them, a SET missed its 2 s deadline, Close took 9.9-10.2 s and the heap
// peaked at 0.7-1.1 GB (since the refresh ROLE-checks every replica any
// sentinel lists, disconnected ones included, and the poll every
// promotable one; 3,887 dials, SET past 2 s, Close 2.6 s and 608 MiB here
// at load 18 before the bound). The replicas look healthy ("slave") or
// disconnected; either way the client keeps DefaultMaxReplicas of them,
// reports it once, and refuses durable writes.
//
// What remains is reading the reply (3.5 MB for 50,000), which no bound
// on replicas saves: the test measures it (read) and allows for it, so
// that a slow machine's parsing, not the client, sets the margins. make
// test lists 5,000 replicas (20 times the bound; with -race at load 20,
// 50,000 take 8 s to read each refresh); REDISKIT_REPLICA_FLOOD=50000 runs
// the count.
func TestReplicaFloodIsBounded(t *testing.T) {
	listed := 5_000
	if s := os.Getenv("REDISKIT_REPLICA_FLOOD"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= DefaultMaxReplicas {
			t.Fatalf("REDISKIT_REPLICA_FLOOD=%q: want a count above %d", s, DefaultMaxReplicas)
		}
		listed = n
	}
	ctx := testkit.Context(t, 120*time.Second)
	l := lab.New(t, lab.Config{})
	master := l.Node(0).Addr()
	for _, flags := range []string{"slave", "slave,disconnected"} {
		t.Run(flags, func(t *testing.T) {
			flood := replicaFlood(t, master, listed, flags)

			// The cost of reading the list once, as the client's
			// sentinel connections read it.
			rc := redis.NewClient(respguard.Guard(redisopt.Inner(&redis.Options{Addr: flood.Addr(), ReadTimeout: time.Minute})))
			began := time.Now()
			rows, err := redisinfo.ParseTable(rc.Do(ctx, "SENTINEL", "REPLICAS", "mymaster"))
			read := time.Since(began)
			_ = rc.Close()
			if err != nil || len(rows) != listed {
				t.Fatalf("SENTINEL REPLICAS: %d rows, %v", len(rows), err)
			}

			var mu sync.Mutex
			dialled := map[string]int{}
			log := &eventLog{}
			runtime.GC()
			var before runtime.MemStats
			runtime.ReadMemStats(&before)
			stop := make(chan struct{})
			peak := peakHeap(stop)
			c, err := NewClient(Config{MasterName: "mymaster", SentinelAddrs: []string{flood.Addr()},
				// Room for reading the list on a loaded machine: a
				// timeout would leave the replicas unread, and the bound
				// untested.
				SentinelTimeout: 10*read + time.Second,
				RefreshInterval: 500 * time.Millisecond,
				Observer:        log.observe,
				NodeOptions: func(o *redis.Options) {
					next := o.Dialer
					o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
						mu.Lock()
						dialled[addr]++
						mu.Unlock()
						return next(ctx, network, addr)
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			closed := false
			defer func() {
				if !closed {
					_ = c.Close()
				}
			}()
			log.flush = func() {
				fctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				_ = c.observer.Flush(fctx)
			}

			// The 2 s, and the reading the client cannot avoid.
			deadline := 2*time.Second + 2*read
			sctx, cancel := context.WithTimeout(ctx, deadline)
			began = time.Now()
			err = c.Set(sctx, "k", "v", 0).Err()
			took := time.Since(began)
			cancel()
			if err != nil {
				t.Fatalf("SET: %v after %v (deadline %v; reading the list takes %v)", err, took, deadline, read)
			}
			refreshes := c.Stats().Resolutions
			testkit.WaitFor(t, 30*time.Second+10*read, "three more refreshes", func() bool { return c.Stats().Resolutions >= refreshes+3 })

			// Refused unsent: for the replicas left out (MaxReplicas), or,
			// when every replica listed is disconnected, for want of one
			// to confirm it.
			derr := c.Set(WithDurable(ctx, true), "k", "v", 0).Err()
			var nde *NotDurableError
			if !errors.As(derr, &nde) || !nde.NotSent || (flags == "slave" && !strings.Contains(fmt.Sprint(nde.Unconfirmable), "MaxReplicas")) {
				t.Errorf("a durable SET with replicas left out: %v; want a NotDurableError, not sent (naming MaxReplicas)", derr)
			}
			if n := log.count(EventReplicasLimited); n != 1 {
				t.Errorf("%d EventReplicasLimited after %d refreshes, want 1", n, c.Stats().Resolutions)
			}
			for _, ev := range log.all() {
				if ev.Kind == EventReplicasLimited && (ev.Sentinel != flood.Addr() || len(ev.Replicas) != DefaultMaxReplicas || !strings.Contains(ev.Reason, strconv.Itoa(listed))) {
					t.Errorf("EventReplicasLimited: sentinel %s, %d replicas, %q", ev.Sentinel, len(ev.Replicas), ev.Reason)
				}
			}

			began = time.Now()
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			closing := time.Since(began)
			closed = true
			close(stop)
			grew := int64(peak()) - int64(before.HeapInuse)
			mu.Lock()
			addrs, dials := len(dialled), 0
			for _, n := range dialled {
				dials += n
			}
			mu.Unlock()
			t.Logf("%d replicas %q: reading the list %v; SET in %v, Close in %v; %d dials to %d addresses; heap peak +%d MiB",
				listed, flags, read.Round(time.Millisecond), took.Round(time.Millisecond), closing.Round(time.Millisecond), dials, addrs, grew>>20)
			// The master, and at most MaxReplicas replicas.
			if addrs > 1+DefaultMaxReplicas {
				t.Errorf("%d addresses dialled, past MaxReplicas %d and the master", addrs, DefaultMaxReplicas)
			}
			// Close waits for a refresh under way: its ROLE checks
			// (ProbeTimeout) after its reading of the list.
			if bound := DefaultProbeTimeout + 2*read; closing > bound {
				t.Errorf("Close took %v, past %v", closing, bound)
			}
			// A refresh's list within respguard's bound, the one before
			// it not yet collected, and the clients of MaxReplicas nodes.
			if bound := int64(3 * (respguard.DefaultMaxReplyBytes + 64*respguard.DefaultMaxReplyElements)); grew > bound {
				t.Errorf("the heap grew by %d MiB, past %d MiB", grew>>20, bound>>20)
			}
			awaitPoolDialers(t)

			// Diagnose considers the replicas as a refresh does, and says
			// so.
			d, err := Diagnose(ctx, Config{MasterName: "mymaster", SentinelAddrs: []string{flood.Addr()}, SentinelTimeout: 10*read + time.Second})
			if err != nil {
				t.Fatalf("Diagnose: %v\n%s", err, d)
			}
			if last := d.Steps[len(d.Steps)-1]; last.Stage != StageReplica || !strings.Contains(last.Detail, "MaxReplicas") {
				t.Errorf("Diagnose's last step does not report the cut:\n%s", d)
			} else {
				t.Logf("Diagnose: %s", last)
			}
			awaitPoolDialers(t)
		})
	}
}

// replicaRow is a SENTINEL REPLICAS row for addr ("host:port"), refused
// (refusedField) when refused.
func replicaRow(addr string, refused bool) map[string]string {
	host, port, _ := net.SplitHostPort(addr)
	r := map[string]string{"ip": host, "port": port, "flags": "slave"}
	if refused {
		r[refusedField] = "1"
	}
	return r
}

func viewOf(sentinel string, addrs ...string) sentinelView {
	v := sentinelView{sentinel: sentinel}
	for _, a := range addrs {
		refused := strings.HasPrefix(a, "!")
		v.rows = append(v.rows, replicaRow(strings.TrimPrefix(a, "!"), refused))
	}
	return v
}

func rowAddrs(v sentinelView) []string {
	var out []string
	for _, r := range v.rows {
		out = append(out, redisinfo.Addr(r))
	}
	return out
}

func TestKeepReplicas(t *testing.T) {
	tests := []struct {
		name          string
		views         []sentinelView
		max           int
		want          [][]string // each view's rows after
		listed, dropp int
	}{
		{"under the cap", []sentinelView{viewOf("s1", "a:1", "b:1"), viewOf("s2", "b:1", "c:1")}, 3,
			[][]string{{"a:1", "b:1"}, {"b:1", "c:1"}}, 3, 0},
		{"the first listed among equals", []sentinelView{viewOf("s1", "a:1", "b:1", "c:1", "d:1")}, 2,
			[][]string{{"a:1", "b:1"}}, 4, 2},
		{"listed by more sentinels first", []sentinelView{viewOf("s1", "x:1", "y:1", "z:1", "a:1"), viewOf("s2", "a:1"), viewOf("s3", "a:1", "z:1")}, 2,
			[][]string{{"z:1", "a:1"}, {"a:1"}, {"a:1", "z:1"}}, 4, 2},
		{"a sentinel listing one address twice counts once", []sentinelView{viewOf("s1", "x:1", "x:1", "a:1"), viewOf("s2", "a:1")}, 1,
			[][]string{{"a:1"}, {"a:1"}}, 2, 1},
		{"refused addresses last", []sentinelView{viewOf("s1", "!bad:1", "!bad2:1", "a:1"), viewOf("s2", "!bad:1")}, 2,
			[][]string{{"!bad:1", "a:1"}, {"!bad:1"}}, 3, 1},
		{"an address refused by one sentinel and not another is not refused", []sentinelView{viewOf("s1", "!m:1", "x:1"), viewOf("s2", "m:1")}, 1,
			[][]string{{"!m:1"}, {"m:1"}}, 2, 1},
		{"a failed view counts for nothing", []sentinelView{{sentinel: "s0", err: errors.New("down")}, viewOf("s1", "a:1", "b:1")}, 1,
			[][]string{nil, {"a:1"}}, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			listed, dropped := keepReplicas(tt.views, tt.max)
			if listed != tt.listed || dropped != tt.dropp {
				t.Errorf("listed %d, dropped %d; want %d, %d", listed, dropped, tt.listed, tt.dropp)
			}
			for i, v := range tt.views {
				var want []string
				for _, a := range tt.want[i] {
					want = append(want, strings.TrimPrefix(a, "!"))
				}
				if got := rowAddrs(v); !slices.Equal(got, want) {
					t.Errorf("view %s keeps %v, want %v", v.sentinel, got, want)
				}
			}
		})
	}
}

// FuzzKeepReplicas: whatever the sentinels list, at most max addresses
// are kept, each dropped one listed by no more sentinels than any kept
// one of its kind, and no refused address kept while a valid one is
// dropped.
func FuzzKeepReplicas(f *testing.F) {
	f.Add([]byte{1, 2, 3, 0, 3, 4, 0, 0x81, 2}, uint8(2))
	f.Add([]byte{1, 1, 1, 1}, uint8(0))
	f.Fuzz(func(t *testing.T, spec []byte, max uint8) {
		// Each byte is a row (low 4 bits: the address, 0x80: refused);
		// 0 starts the next sentinel's view.
		views := []sentinelView{{sentinel: "s0"}}
		for _, b := range spec {
			if b == 0 {
				views = append(views, sentinelView{sentinel: fmt.Sprintf("s%d", len(views))})
				continue
			}
			v := &views[len(views)-1]
			v.rows = append(v.rows, replicaRow(fmt.Sprintf("10.0.0.%d:1", b&0x0f), b&0x80 != 0))
		}
		count := map[string]int{}
		refused := map[string]bool{}
		for _, v := range views {
			seen := map[string]bool{}
			for _, r := range v.rows {
				a := redisinfo.Addr(r)
				if _, ok := refused[a]; !ok {
					refused[a] = true
				}
				if !refusedRow(r) {
					refused[a] = false
				}
				if !seen[a] {
					seen[a] = true
					count[a]++
				}
			}
		}
		listed, dropped := keepReplicas(views, int(max))
		if listed != len(count) || dropped != len(count)-min(len(count), int(max)) {
			t.Fatalf("listed %d, dropped %d of %d addresses, max %d", listed, dropped, len(count), max)
		}
		kept := map[string]bool{}
		for _, v := range views {
			for _, r := range v.rows {
				kept[redisinfo.Addr(r)] = true
			}
		}
		if len(kept) != len(count)-dropped {
			t.Fatalf("%d addresses kept, want %d", len(kept), len(count)-dropped)
		}
		for d := range count {
			if kept[d] {
				continue
			}
			for k := range kept {
				if refused[k] && !refused[d] {
					t.Fatalf("refused %s kept, valid %s dropped", k, d)
				}
				if refused[k] == refused[d] && count[k] < count[d] {
					t.Fatalf("%s (listed by %d) kept, %s (listed by %d) dropped", k, count[k], d, count[d])
				}
			}
		}
	})
}
