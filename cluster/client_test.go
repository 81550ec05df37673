package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// newTestClient returns a client of l, closed with the test.
func newTestClient(t *testing.T, l *lab.Lab, mod func(*Config)) *Client {
	t.Helper()
	o := Config{Addrs: l.ClusterAddrs()[:1], Username: l.Config().Username, Password: l.Config().Password,
		TLSConfig: l.TLSConfig(), ReadTimeout: time.Second, FailoverPollInterval: 50 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	c, err := NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestRoutesBySlot writes keys (hash-tagged and not) through the client:
// each lands on the master that serves its slot, from one seed.
func TestRoutesBySlot(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, nil)
	const n = 300
	for i := range n {
		key := fmt.Sprint("k", i)
		if i%3 == 0 {
			key = fmt.Sprintf("{tag%d}:k%d", i%7, i)
		}
		if err := c.Set(ctx, key, i, 0).Err(); err != nil {
			t.Fatalf("SET %s: %v", key, err)
		}
		if i%25 == 0 {
			owner, err := l.SlotOwner(ctx, Slot(key))
			if err != nil {
				t.Fatal(err)
			}
			if v, err := owner.Do(ctx, "GET", key).Int(); err != nil || v != i {
				t.Fatalf("%s on its slot's master %s: %d, %v", key, owner.Name(), v, err)
			}
		}
	}
	total := 0
	for _, s := range l.ShardIDs() {
		m, _ := l.ShardMaster(ctx, s)
		k, err := m.Do(ctx, "DBSIZE").Int()
		if err != nil {
			t.Fatal(err)
		}
		if k == 0 {
			t.Errorf("shard %d holds no key", s)
		}
		total += k
	}
	if total != n {
		t.Fatalf("%d keys on the masters, want %d", total, n)
	}
	if st := c.Stats(); st.Moved != 0 || len(st.Masters) != 3 {
		t.Errorf("stats %+v: want 3 masters and no MOVED (the map was read first)", st)
	}
	if v, err := c.Get(ctx, "k1").Int(); err != nil || v != 1 {
		t.Fatalf("GET k1: %d, %v", v, err)
	}
	if err := c.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING (no key): %v", err)
	}
}

// TestFollowsMigration moves a slot step by step under the client: while
// it is mid-migration, reads and writes of its keys follow ASK (the moved
// key on the target, the others on the source, a new key on the target);
// after the migration, MOVED. No error reaches the caller and no INCR
// runs twice.
func TestFollowsMigration(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, nil)
	keys := []string{"{m}a", "{m}b"}
	for _, k := range keys {
		if err := c.Set(ctx, k, "v-"+k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	slot := Slot("{m}")
	src, err := l.SlotOwner(ctx, slot)
	if err != nil {
		t.Fatal(err)
	}
	m, err := l.BeginSlotMigration(ctx, (src.Shard()+1)%3, slot)
	if err != nil {
		t.Fatal(err)
	}
	if moved, err := m.MoveKeys(ctx, 1); err != nil || moved != 1 {
		t.Fatalf("MoveKeys: %d, %v", moved, err)
	}
	incrs := 0
	incr := func() {
		if err := c.Incr(ctx, "{m}n").Err(); err != nil {
			t.Fatalf("INCR mid-migration: %v", err)
		}
		incrs++
	}
	for _, k := range keys {
		if v, err := c.Get(ctx, k).Result(); err != nil || v != "v-"+k {
			t.Fatalf("GET %s mid-migration: %q, %v", k, v, err)
		}
	}
	incr()
	dc := m.Dest().NewClient()
	defer dc.Close()
	pipe := dc.Pipeline()
	pipe.Do(ctx, "ASKING")
	exists := pipe.Exists(ctx, "{m}n")
	if _, err := pipe.Exec(ctx); err != nil || exists.Val() != 1 {
		t.Errorf("a new key mid-migration is not on the target: %d, %v", exists.Val(), err)
	}
	if st := c.Stats(); st.Ask == 0 {
		t.Errorf("no ASK followed mid-migration: %+v", st)
	}
	if err := m.Finish(ctx); err != nil {
		t.Fatal(err)
	}
	incr()
	for _, k := range keys {
		if v, err := c.Get(ctx, k).Result(); err != nil || v != "v-"+k {
			t.Fatalf("GET %s after the migration: %q, %v", k, v, err)
		}
	}
	if st := c.Stats(); st.Moved == 0 {
		t.Errorf("no MOVED followed after the migration: %+v", st)
	}
	if v, err := m.Dest().Do(ctx, "GET", "{m}n").Int(); err != nil || v != incrs {
		t.Fatalf("{m}n = %d (%v) after %d INCRs: one ran twice or not at all", v, err, incrs)
	}
}

// TestTransactions: a transaction in one slot runs on its master; one
// whose keys span slots is refused before anything is sent; Watch works
// on one slot and refuses two.
func TestTransactions(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, nil)
	if _, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "{u1}:a", "1", 0)
		p.Incr(ctx, "{u1}:b")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, "{u1}:b").Int(); err != nil || v != 1 {
		t.Fatalf("after the transaction: %d, %v", v, err)
	}
	_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "x1", "1", 0)
		p.Set(ctx, "x2", "2", 0)
		return nil
	})
	var cse *CrossSlotError
	if !errors.As(err, &cse) || len(cse.Slots) != 2 {
		t.Fatalf("a transaction over two slots: %v, want a *CrossSlotError", err)
	}
	if n, _ := c.Exists(ctx, "x1").Result(); n != 0 {
		t.Fatalf("x1 exists: the refused transaction was sent")
	}
	if n, _ := c.Exists(ctx, "x2").Result(); n != 0 {
		t.Fatalf("x2 exists: the refused transaction was sent")
	}
	err = c.Watch(ctx, func(tx *redis.Tx) error {
		v, err := tx.Get(ctx, "{u1}:b").Int()
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, "{u1}:b", v+1, 0)
			return nil
		})
		return err
	}, "{u1}:b")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Watch(ctx, func(*redis.Tx) error { return nil }, "x1", "x2"); !errors.As(err, &cse) {
		t.Fatalf("Watch over two slots: %v", err)
	}
}

// TestPipelineAcrossShards: a pipeline of commands for every shard is split
// per master; every command gets its own reply, in order.
func TestPipelineAcrossShards(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, nil)
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 100 {
			p.Set(ctx, fmt.Sprint("p", i), i, 0)
			p.Get(ctx, fmt.Sprint("p", i))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		if v, err := cmds[2*i+1].(*redis.StringCmd).Int(); err != nil || v != i {
			t.Fatalf("GET p%d in the pipeline: %d, %v", i, v, err)
		}
	}
}

// ack is an acknowledged write: when it began and when it was
// acknowledged.
type ack struct{ began, at time.Time }

// failoverRun is what one client saw in failoverWorkload.
type failoverRun struct {
	acked, refused, otherErrs, lost, dups int
	// firstAfter is when the first write begun after the kill was
	// acknowledged (by the new master: the old one is dead), from the
	// kill; 0 when none was within the observation window.
	firstAfter time.Duration
}

// failoverWorkload writes unique ids to lists on every shard from 8
// goroutines through c, 1 ms apart, each with an 8 s deadline, through a
// graceful CLUSTER FAILOVER of shard 0 and then a SIGKILL of shard 2's
// master, and watches for up to window after the kill for a write begun
// after it to be acknowledged on shard 2. Then it reads every list back.
func failoverWorkload(ctx context.Context, t *testing.T, l *lab.Lab, c redis.UniversalClient, window time.Duration) failoverRun {
	t.Helper()
	lists := []string{"{a}ops", "{b}ops", "{c}ops", "{d}ops", "{e}ops", "{f}ops"}
	var (
		stop   atomic.Bool
		wg     sync.WaitGroup
		mu     sync.Mutex
		acked  = map[string]bool{}
		run    failoverRun
		lastOK sync.Map // list -> the last acknowledged write (an ack)
	)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				list := lists[(g+i)%len(lists)]
				id := fmt.Sprintf("%d:%d", g, i)
				// Long enough for a held write to outlast the cluster's own
				// failover (two to three seconds with a 1 s node timeout).
				wctx, cancel := context.WithTimeout(ctx, 8*time.Second)
				started := time.Now()
				err := c.RPush(wctx, list, id).Err()
				cancel()
				var mce *MasterChangedError
				mu.Lock()
				switch {
				case err == nil:
					acked[id] = true
					run.acked++
					if prev, ok := lastOK.Load(list); !ok || prev.(ack).began.Before(started) { //nolint:forcetypeassert // the test's own map
						lastOK.Store(list, ack{began: started, at: time.Now()})
					}
				case errors.As(err, &mce):
					run.refused++
				default:
					run.otherErrs++
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	next, killed, _ := failoverThenKill(ctx, t, l, 300*time.Millisecond)
	// A write to shard 2's lists begun after the kill can only have been
	// acknowledged by the new master.
	var shard2 []string
	for _, list := range lists {
		owner, err := l.SlotOwner(ctx, Slot(list))
		if err != nil {
			t.Fatal(err)
		}
		if owner == next {
			shard2 = append(shard2, list)
		}
	}
	if len(shard2) == 0 {
		t.Fatalf("none of the lists %v is on shard 2", lists)
	}
	for run.firstAfter == 0 && time.Since(killed) < window {
		for _, list := range shard2 {
			if v, ok := lastOK.Load(list); ok && v.(ack).began.After(killed) { //nolint:forcetypeassert // the test's own map
				run.firstAfter = v.(ack).at.Sub(killed) //nolint:forcetypeassert // the test's own map
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop.Store(true)
	wg.Wait()
	// Every list read from its current master.
	seen := readLists(ctx, t, l, lists)
	for _, n := range seen {
		if n > 1 {
			run.dups++
		}
	}
	for id := range acked {
		if seen[id] == 0 {
			run.lost++
		}
	}
	return run
}

// failoverThenKill makes a graceful CLUSTER FAILOVER of shard 0, waits
// settle, SIGKILLs shard 2's master and waits for its promoted replica,
// which it returns, with when the kill and the promotion happened.
func failoverThenKill(ctx context.Context, t *testing.T, l *lab.Lab, settle time.Duration) (next *lab.Node, killed, promoted time.Time) {
	t.Helper()
	began := time.Now()
	if _, err := l.ClusterFailover(ctx, 0, lab.FailoverGraceful); err != nil {
		t.Fatal(err)
	}
	t.Logf("graceful failover of shard 0 agreed in %v", time.Since(began))
	time.Sleep(settle)
	victim, err := l.ShardMaster(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	// From the process's death (Kill returns once it is reaped): a write
	// begun earlier may still have reached it.
	killed = time.Now()
	if next, err = l.WaitPromotion(ctx, 2, victim); err != nil {
		t.Fatal(err)
	}
	promoted = time.Now()
	t.Logf("killed %s; %s promoted, agreed %v after the kill", victim.Name(), next.Name(), promoted.Sub(killed))
	return next, killed, promoted
}

// TestFailoverUnderWrites runs failoverWorkload through this client and,
// in a lab of its own, through go-redis's NewClusterClient with its default
// options: this client writes no id twice and resumes on the promoted
// master; both are logged side by side.
func TestFailoverUnderWrites(t *testing.T) {
	ctx := testkit.Context(t, 180*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	c := newTestClient(t, l, nil)
	ours := failoverWorkload(ctx, t, l, c, 15*time.Second)

	gl := lab.New(t, lab.Cluster(3, 1))
	gc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: gl.ClusterAddrs()})
	defer gc.Close()
	theirs := failoverWorkload(ctx, t, gl, gc, 10*time.Second)
	for _, r := range []struct {
		name string
		run  failoverRun
	}{{"rediskit cluster.Client", ours}, {"go-redis NewClusterClient (defaults)", theirs}} {
		after := "none within the window"
		if r.run.firstAfter > 0 {
			after = r.run.firstAfter.Round(time.Millisecond).String()
		}
		t.Logf("%s: acknowledged %d, duplicates %d, acknowledged but lost %d, refused as may-have-executed %d, other errors %d, first write on the new master %s after the kill",
			r.name, r.run.acked, r.run.dups, r.run.lost, r.run.refused, r.run.otherErrs, after)
	}
	if ours.dups != 0 {
		t.Errorf("%d ids written twice", ours.dups)
	}
	if ours.acked == 0 || ours.firstAfter == 0 {
		t.Errorf("acknowledged %d; first write after the kill %v: writes did not resume on the new master", ours.acked, ours.firstAfter)
	}
	if ours.otherErrs != 0 {
		t.Errorf("%d errors other than MasterChangedError reached the callers", ours.otherErrs)
	}
}

// TestSecretsStayOut: the password is in no String, no error of a failed
// call, and no URL error.
func TestSecretsStayOut(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	const secret = "s3cret-Pa55"
	l := lab.New(t, lab.Config{Shards: 1, Password: secret})
	c := newTestClient(t, l, nil)
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	wrong := newTestClient(t, l, func(o *Config) { o.Password = secret + "-wrong" })
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err := wrong.Get(short, "k").Err()
	if err == nil {
		t.Fatal("a wrong password: no error")
	}
	uc, uerr := NewClientFromURL("redis://:"+secret+"@127.0.0.1:1?dial_timeout=soon", Config{})
	if uerr == nil {
		_ = uc.Close()
		t.Fatal("a URL with a bad dial_timeout: no error")
	}
	for _, s := range []string{c.String(), wrong.String(), err.Error(), fmt.Sprint(uerr)} {
		if strings.Contains(s, secret) {
			t.Errorf("the password appears in %q", s)
		}
	}
}

// TestForEach runs a command on every master and on every node.
func TestForEach(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Cluster(2, 1))
	c := newTestClient(t, l, nil)
	var masters, all atomic.Int32
	if err := c.ForEachMaster(ctx, func(ctx context.Context, rc *redis.Client) error {
		masters.Add(1)
		return rc.Ping(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.ForEachShard(ctx, func(ctx context.Context, rc *redis.Client) error {
		all.Add(1)
		return rc.Ping(ctx).Err()
	}); err != nil {
		t.Fatal(err)
	}
	if masters.Load() != 2 || all.Load() != 4 {
		t.Fatalf("ForEachMaster ran on %d nodes, ForEachShard on %d; want 2 and 4", masters.Load(), all.Load())
	}
}

// TestCloseEndsHeldWrites: a write held for a master that is gone (a
// one-shard cluster cannot fail over) returns soon after Close, not at the
// end of its hold.
func TestCloseEndsHeldWrites(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(1, 1))
	c, err := NewClient(Config{Addrs: l.ClusterAddrs(), ReadTimeout: time.Second, FailoverPollInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.ShardNodes(0)[0].Kill(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Set(ctx, "k", "w", 0).Err() }()
	time.Sleep(500 * time.Millisecond) // the write is sent, fails, and waits
	closed := time.Now()
	if err := c.Close(); err != nil {
		t.Logf("Close: %v", err)
	}
	select {
	case err := <-done:
		t.Logf("the held write returned %v after Close: %v", time.Since(closed), err)
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("the held write after Close: %v, want ErrClosed", err)
		}
	case <-time.After(DefaultWriteHoldTimeout / 2):
		t.Fatalf("the held write still waits %v after Close (hold %v)", DefaultWriteHoldTimeout/2, DefaultWriteHoldTimeout)
	}
}

// TestAutoPipeline: with Config.AutoPipeline, concurrent commands to the
// three masters share round trips and each gets its own reply; through
// AsyncAutoPipeline, one goroutine's commands run in submit order on each
// master.
func TestAutoPipeline(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, func(o *Config) { o.AutoPipeline = true })
	const goroutines, each = 32, 100
	errs := make(chan error, goroutines)
	for g := range goroutines {
		go func() {
			key := fmt.Sprint("n", g)
			for i := range each {
				if v, err := c.Incr(ctx, key).Result(); err != nil || v != int64(i+1) {
					errs <- fmt.Errorf("INCR %s #%d: %d, %v", key, i+1, v, err)
					return
				}
			}
			errs <- nil
		}()
	}
	for range goroutines {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	var batches, batched uint64
	for _, n := range c.nodes.all() {
		st := n.batch.Stats()
		batches, batched = batches+st.Batches, batched+st.Commands
	}
	t.Logf("%d commands in %d round trips", batched, batches)
	if batched != goroutines*each || batches*2 > batched {
		t.Errorf("%d commands in %d round trips; want %d in at most half as many", batched, batches, goroutines*each)
	}

	plain := newTestClient(t, l, nil)
	ap, err := plain.AsyncAutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	defer ap.Close()
	const n = 2000
	incrs := make([]*redis.IntCmd, n)
	for i := range n {
		_ = ap.RPush(ctx, fmt.Sprintf("{l%d}list", i%3), i)
		incrs[i] = ap.Incr(ctx, fmt.Sprintf("{l%d}count", i%3))
	}
	for i, cmd := range incrs {
		if v, err := cmd.Result(); err != nil || v != int64(i/3+1) {
			t.Fatalf("INCR %d: %d, %v; want %d (out of submit order)", i, v, err, i/3+1)
		}
	}
	for k := range 3 {
		got, err := plain.LRange(ctx, fmt.Sprintf("{l%d}list", k), 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range got {
			if v != fmt.Sprint(j*3+k) {
				t.Fatalf("{l%d}list[%d] = %s, want %d", k, j, v, j*3+k)
			}
		}
	}
}

// TestStalledMaster: a master's traffic (clients and cluster bus) is held
// for 2 s and then delivered, while writers with 500 ms deadlines keep
// writing unique ids to its shard: no id is written twice, every call
// returns by its deadline (with a margin from the calls' own latency
// before the stall), every failed write says whether it may have
// executed, and none that said it did not is in the list.
func TestStalledMaster(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	c := newTestClient(t, l, nil)
	const list = "{stall}ops"
	owner, err := l.SlotOwner(ctx, Slot(list))
	if err != nil {
		t.Fatal(err)
	}
	// The calls' own latency before the stall sets the margin.
	var slowest time.Duration
	for i := range 200 {
		began := time.Now()
		if err := c.RPush(ctx, "{stall}warm", i).Err(); err != nil {
			t.Fatal(err)
		}
		slowest = max(slowest, time.Since(began))
	}
	const deadline = 500 * time.Millisecond
	margin := max(100*time.Millisecond, 10*slowest)
	var (
		wg                sync.WaitGroup
		stop              atomic.Bool
		mu                sync.Mutex
		acked, ran, notRn int
		late              []time.Duration
		untyped           []error
		unsent            []string // ids whose write failed saying it did not run
	)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; !stop.Load(); i++ {
				wctx, cancel := context.WithTimeout(ctx, deadline)
				began := time.Now()
				id := fmt.Sprintf("%d:%d", g, i)
				err := c.RPush(wctx, list, id).Err()
				took := time.Since(began)
				cancel()
				mu.Lock()
				if took > deadline+margin {
					late = append(late, took)
				}
				// A *NoMasterError too: held while the stalled master
				// looked cut off, never sent.
				switch _, mayHaveRun, typed := typedOutcome(err); {
				case err == nil:
					acked++
				case typed && mayHaveRun:
					ran++
				case typed:
					notRn++
					unsent = append(unsent, id)
				default:
					untyped = append(untyped, err)
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	owner.SetLatency(4 * time.Second) // 2 s each way: held, then delivered
	time.Sleep(2 * time.Second)
	owner.SetLatency(0)
	time.Sleep(2 * time.Second)
	stop.Store(true)
	wg.Wait()
	t.Logf("acknowledged %d, failed and may have run %d, failed before running %d; margin %v (slowest call before %v)",
		acked, ran, notRn, margin, slowest)
	if len(late) > 0 {
		t.Errorf("%d calls returned past their %v deadline + %v: the slowest took %v", len(late), deadline, margin, slices.Max(late))
	}
	for _, err := range untyped {
		t.Errorf("a failed write says nothing of whether it ran: %v", err)
	}
	if err := l.ClusterReady(ctx); err != nil {
		t.Fatal(err)
	}
	ids, err := c.LRange(ctx, list, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, id := range ids {
		if seen[id] {
			t.Errorf("id %s written twice", id)
		}
		seen[id] = true
	}
	for _, id := range unsent {
		if seen[id] {
			t.Errorf("id %s is in the list, but its write failed saying it did not run", id)
		}
	}
	if acked == 0 {
		t.Fatal("no write acknowledged")
	}
}

// TestBlackHoledMaster: a master that swallows everything (clients and
// bus) is replaced by the cluster; writes held meanwhile go to the new
// master soon after the promotion, without waiting for the silent node's
// dial and read timeouts in every refresh.
func TestBlackHoledMaster(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Config{Shards: 3, Replicas: 1, Partitions: true})
	c := newTestClient(t, l, nil)
	const key = "{hole}k"
	old, err := l.SlotOwner(ctx, Slot(key))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, key, "before", 0).Err(); err != nil {
		t.Fatal(err)
	}
	// Silent to the client (its proxy swallows everything) and to the
	// other nodes (a partition: the node's own bus traffic, which its
	// proxy does not carry, must not reach them either).
	old.BlackHole()
	isolate(t, l, old)
	holed := time.Now()
	done := make(chan time.Time, 1)
	go func() {
		// The first write times out on the silent master (ReadTimeout),
		// marks it failing; this one is held until the promotion.
		_ = c.Set(ctx, key, "probe", 0).Err()
		for ctx.Err() == nil {
			if c.Set(ctx, key, "after", 0).Err() == nil {
				done <- time.Now()
				return
			}
		}
	}()
	next, err := l.WaitPromotion(ctx, old.Shard(), old)
	if err != nil {
		t.Fatal(err)
	}
	promoted := time.Now()
	var acked time.Time
	select {
	case acked = <-done:
	case <-ctx.Done():
		t.Fatal("no write acknowledged after the promotion")
	}
	gap := max(0, acked.Sub(promoted))
	t.Logf("black-holed %s; %s promoted %v later; a held write acknowledged %v after the promotion agreed",
		old.Name(), next.Name(), promoted.Sub(holed), gap)
	// A refresh that waited for the silent node would take its dial and
	// read timeouts.
	if bound := (c.opts.DialTimeout + c.opts.ReadTimeout) / 2; gap > bound {
		t.Errorf("the write waited %v after the promotion, more than %v", gap, bound)
	}
	old.Restore()
	if err := l.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := l.ClusterReady(ctx); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(ctx, key).Result(); err != nil || v != "after" {
		t.Fatalf("GET after: %q, %v", v, err)
	}
}

// OnNewNode hands over the client of every node, once each, and those
// clients carry the caller's commands: a hook added there sees each SET
// once, and none of the client's own slot-map reads.
func TestOnNewNode(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, func(o *Config) { o.RefreshInterval = 100 * time.Millisecond })
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	h := &testkit.CommandCounter{}
	var mu sync.Mutex
	given := map[string]int{}
	c.OnNewNode(func(rc *redis.Client) {
		mu.Lock()
		given[rc.Options().Addr]++
		mu.Unlock()
		rc.AddHook(h)
	})
	const keys = 30
	for i := range keys {
		if err := c.Set(ctx, fmt.Sprintf("k%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // slot-map reads, which the hook must not see
	got := h.Counts()
	delete(got, "hello") // go-redis's own, on each new connection, as on any client
	if got["set"] != keys || len(got) != 1 {
		t.Errorf("the hook saw %v, want %d SETs and nothing else", h.Counts(), keys)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, s := range l.ShardIDs() {
		m, err := l.ShardMaster(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if given[m.Addr()] != 1 {
			t.Errorf("master %s given %d times, want once (all: %v)", m.Addr(), given[m.Addr()], given)
		}
	}
}
