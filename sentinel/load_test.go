package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/lab"
)

// loadConfig is the topology of the failover-under-load runs: 1 master,
// 2 replicas, 3 sentinels, every node 6 ms away (so 8 sequential writers
// make about 1,200 writes/s).
func loadConfig() lab.Config {
	return lab.Config{Replicas: 2, Sentinels: 3, Nodes: []lab.NodeConfig{
		{Latency: 6 * time.Millisecond}, {Latency: 6 * time.Millisecond}, {Latency: 6 * time.Millisecond},
	}}
}

type ackRecord struct {
	id string
	at time.Time
}

type failoverWindow struct {
	requested, agreed, settled time.Time
}

// loadReport is what one run measured.
type loadReport struct {
	name            string
	writes, reads   int64
	acked           int
	duplicates      int
	lost            int
	lostPerFailover []int
	writeErrs       map[string]int
	readErrs        map[string]int
	readErrsOutside int
	gaps            []time.Duration // per failover: longest span without a surviving ack
	windows         []failoverWindow
	writesPerSecond float64
}

func (r *loadReport) row() string {
	gaps := slices.Clone(r.gaps)
	slices.Sort(gaps)
	return fmt.Sprintf("| %s | %d | %d | %d | %v | %s | %s | %d | %v / %v |",
		r.name, r.acked, r.duplicates, r.lost, r.lostPerFailover, errSummary(r.writeErrs), errSummary(r.readErrs),
		r.readErrsOutside, gaps[len(gaps)/2].Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond))
}

func errSummary(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

func errKind(err error) string {
	var mce *MasterChangedError
	var nde *NotDurableError
	var ne net.Error
	switch {
	case errors.As(err, &mce):
		return "master changed"
	case errors.As(err, &nde):
		return "not durable"
	case errors.Is(err, ErrFailoverInProgress):
		return "failover in progress"
	case redis.IsReadOnlyError(err):
		return "READONLY"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case failure.Network(err):
		return "connection"
	}
	return strings.SplitN(err.Error(), " ", 2)[0]
}

// runFailoverLoad drives 8 writers (RPUSH of unique op ids) and 8 readers
// through the given number of failovers and checks the final master.
func runFailoverLoad(t *testing.T, name string, failovers int, newClient func(*lab.Lab, func(Event)) redis.UniversalClient) *loadReport {
	t.Helper()
	ctx := testCtx(t, 5*time.Minute)
	l := lab.New(t, loadConfig())
	events := &eventLog{}
	client := newClient(l, events.observe)
	defer client.Close()
	if err := client.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}

	rep := &loadReport{name: name, writeErrs: map[string]int{}, readErrs: map[string]int{}}
	var mu sync.Mutex
	var acks []ackRecord
	var readErrTimes []time.Time
	var writes, reads atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				id := fmt.Sprintf("%d-%d", w, i)
				octx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := client.RPush(octx, "ops", id).Err()
				cancel()
				writes.Add(1)
				mu.Lock()
				if err == nil {
					acks = append(acks, ackRecord{id: id, at: time.Now()})
				} else {
					rep.writeErrs[errKind(err)]++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				octx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := client.Get(octx, "probe").Err()
				cancel()
				reads.Add(1)
				if err != nil && !errors.Is(err, redis.Nil) {
					mu.Lock()
					rep.readErrs[errKind(err)]++
					readErrTimes = append(readErrTimes, time.Now())
					mu.Unlock()
					time.Sleep(5 * time.Millisecond)
				}
			}
		})
	}

	began := time.Now()
	time.Sleep(time.Second)
	for range failovers {
		res, err := l.Failover(ctx)
		if err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		if err := l.WaitSettled(ctx); err != nil {
			close(stop)
			wg.Wait()
			t.Fatal(err)
		}
		rep.windows = append(rep.windows, failoverWindow{requested: res.Requested, agreed: res.Agreed, settled: time.Now()})
		time.Sleep(time.Second)
	}
	close(stop)
	wg.Wait()
	elapsed := time.Since(began)

	if err := l.WaitSettled(ctx); err != nil {
		t.Fatal(err)
	}
	master, err := l.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	final, err := master.Do(ctx, "LRANGE", "ops", 0, -1).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	present := map[string]int{}
	for _, id := range final {
		present[id]++
	}
	for _, n := range present {
		if n > 1 {
			rep.duplicates += n - 1
		}
	}
	rep.writes, rep.reads, rep.acked = writes.Load(), reads.Load(), len(acks)
	rep.writesPerSecond = float64(rep.writes) / elapsed.Seconds()
	rep.lostPerFailover = make([]int, len(rep.windows))
	var surviving []time.Time
	for _, a := range acks {
		if present[a.id] > 0 {
			surviving = append(surviving, a.at)
			continue
		}
		rep.lost++
		for k, w := range rep.windows {
			if !a.at.Before(w.requested) && a.at.Before(w.settled.Add(time.Second)) {
				rep.lostPerFailover[k]++
				break
			}
		}
	}
	slices.SortFunc(surviving, func(a, b time.Time) int { return a.Compare(b) })
	for _, w := range rep.windows {
		rep.gaps = append(rep.gaps, longestGap(surviving, w.requested, w.settled.Add(time.Second)))
	}
	for _, at := range readErrTimes {
		inside := false
		for _, w := range rep.windows {
			if !at.Before(w.requested.Add(-50*time.Millisecond)) && at.Before(w.settled.Add(time.Second)) {
				inside = true
			}
		}
		if !inside {
			rep.readErrsOutside++
		}
	}
	t.Logf("%s: %d writes (%.0f/s), %d reads, %d acknowledged, %d duplicates, %d acknowledged but lost %v; write errors: %s; read errors: %s (%d outside failover windows); write gap per failover %v",
		name, rep.writes, rep.writesPerSecond, rep.reads, rep.acked, rep.duplicates, rep.lost, rep.lostPerFailover,
		errSummary(rep.writeErrs), errSummary(rep.readErrs), rep.readErrsOutside, rep.gaps)
	// When the client reported them: the hold on the leader's announcement,
	// and the switch, relative to each failover command.
	for k, w := range rep.windows {
		var held, switched time.Duration = -1, -1
		for _, ev := range events.all() {
			if ev.Time.Before(w.requested) || !ev.Time.Before(w.settled) {
				continue
			}
			if ev.Kind == EventFailoverStarted && held < 0 {
				held = ev.Time.Sub(w.requested)
			}
			if ev.Kind == EventMasterChanged && switched < 0 {
				switched = ev.Time.Sub(w.requested)
			}
		}
		if held >= 0 || switched >= 0 {
			t.Logf("%s failover %d: writes held at %v, switched at %v after the command (-1: not seen); sentinels agreed at %v",
				name, k+1, held, switched, w.agreed.Sub(w.requested))
		}
	}
	return rep
}

// longestGap is the longest span inside [from, to] with no time in ts
// (sorted): the write unavailability, counting only writes that survived.
func longestGap(ts []time.Time, from, to time.Time) time.Duration {
	longest, last := time.Duration(0), from
	for _, at := range ts {
		if at.Before(from) {
			continue
		}
		if at.After(to) {
			break
		}
		longest = max(longest, at.Sub(last))
		last = at
	}
	return max(longest, to.Sub(last))
}

// TestFailoverUnderLoad runs the same load through 5 failovers with
// rediskit (default and durable) and go-redis's NewFailoverClient (default
// options), each on its own lab, and compares them.
func TestFailoverUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("about a minute and a half of failovers")
	}
	const failovers = 5
	ours := func(durable bool) func(*lab.Lab, func(Event)) redis.UniversalClient {
		return func(l *lab.Lab, observe func(Event)) redis.UniversalClient {
			c, err := NewClient(Options{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), Durable: durable, Observer: observe})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
	}
	goRedis := func(l *lab.Lab, _ func(Event)) redis.UniversalClient {
		return redis.NewFailoverClient(&redis.FailoverOptions{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs()})
	}

	def := runFailoverLoad(t, "rediskit (default)", failovers, ours(false))
	dur := runFailoverLoad(t, "rediskit (durable)", failovers, ours(true))
	gor := runFailoverLoad(t, "go-redis NewFailoverClient", failovers, goRedis)

	t.Log("| client | acknowledged | duplicates | acknowledged but lost | lost per failover | write errors | read errors | read errors outside failovers | write gap median / max |")
	for _, r := range []*loadReport{def, dur, gor} {
		t.Log(r.row())
	}

	for _, r := range []*loadReport{def, dur} {
		if r.duplicates != 0 {
			t.Errorf("%s: %d duplicate op ids", r.name, r.duplicates)
		}
		if r.readErrsOutside != 0 {
			t.Errorf("%s: %d read errors outside the failover windows", r.name, r.readErrsOutside)
		}
	}
	if dur.lost != 0 {
		t.Errorf("durable mode: %d acknowledged op ids missing from the final master", dur.lost)
	}
	if gor.lost > 0 && def.lost*4 > gor.lost {
		t.Errorf("default mode lost %d acknowledged writes, go-redis %d: want at most a quarter", def.lost, gor.lost)
	}
	if gor.lost == 0 && def.lost > 0 {
		t.Errorf("default mode lost %d acknowledged writes where go-redis lost none", def.lost)
	}
}
