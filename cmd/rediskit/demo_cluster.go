package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
)

// Cluster step settings: every master 6 ms away and its replica 1 ms, so
// that Nearest reads each shard's replica; replicas probed every 200 ms.
const (
	demoClusterMasterRTT  = 6 * time.Millisecond
	demoClusterReplicaRTT = 1 * time.Millisecond
	demoClusterWriters    = 4
)

// clusterTour starts a 3 × 1 Redis Cluster and shows rediskit's cluster
// client on it: Nearest reads land on each shard's near replica; then
// shard 0's master is killed under a write load: the writes in flight on
// it wait for its replica's promotion and are refused as may-have-executed
// (never re-run), a write sent during the failover is held and runs once
// on the promoted replica, and every other write is acknowledged once. The writers append
// to lists, so the lists afterwards show duplicates (none) and losses (the
// writes the killed master acknowledged and had not replicated).
func (d *demo) clusterTour(ctx context.Context) error {
	began := time.Now()
	l, err := lab.Start(ctx, lab.Cluster(3, 1))
	if err != nil {
		return err
	}
	defer func() { _ = l.Close() }()
	fmt.Fprintf(d.out, "started a 3-shard cluster, one replica each, in %v\n", time.Since(began).Round(time.Millisecond))
	for _, n := range l.Nodes() {
		n.SetLatency(demoClusterReplicaRTT)
	}
	masters := map[string]bool{}
	for _, id := range l.ShardIDs() {
		m, err := l.ShardMaster(ctx, id)
		if err != nil {
			return err
		}
		m.SetLatency(demoClusterMasterRTT)
		masters[m.Addr()] = true
	}
	var mu sync.Mutex
	var events []cluster.Event
	var elections electionTimes
	c, err := cluster.NewClient(cluster.Config{Addrs: l.ClusterAddrs(), ReadFrom: cluster.Nearest,
		Replica:  replica.Config{ProbeInterval: 200 * time.Millisecond, Observer: elections.observe},
		Observer: func(ev cluster.Event) { mu.Lock(); events = append(events, ev); mu.Unlock() }})
	if err != nil {
		return err
	}
	defer c.Close()
	if err := d.clusterReads(ctx, c, masters, &elections); err != nil {
		return err
	}
	shard0, err := l.ShardMaster(ctx, 0)
	if err != nil {
		return err
	}
	tag, err := shardTag(ctx, l, shard0)
	if err != nil {
		return err
	}
	run := &clusterWrites{key: func(g int) string { return fmt.Sprintf("{%s}w%d", tag, g) }}
	wctx, stop := context.WithCancel(ctx)
	done := run.start(wctx, c)
	time.Sleep(300 * time.Millisecond)
	killed := time.Now()
	if err := shard0.Kill(); err != nil {
		stop()
		<-done
		return err
	}
	// A write sent during the failover, after the client saw the master
	// fail: held until the promotion, then run once on the new master.
	held := make(chan error, 1)
	var heldFor time.Duration
	go func() {
		time.Sleep(100 * time.Millisecond)
		began := time.Now()
		err := c.Set(ctx, fmt.Sprintf("{%s}held", tag), "once", 0).Err()
		heldFor = time.Since(began)
		held <- err
	}()
	next, err := l.WaitPromotion(ctx, 0, shard0)
	if err != nil {
		stop()
		<-done
		return err
	}
	promoted := time.Now()
	if err := <-held; err != nil {
		fmt.Fprintf(d.out, "the write sent 100 ms after the kill failed after %v: %s\n", heldFor.Round(time.Millisecond), clusterErrKind(err))
	} else {
		v, _ := next.Do(ctx, "GET", fmt.Sprintf("{%s}held", tag)).Text()
		fmt.Fprintf(d.out, "the write sent 100 ms after the kill was held %v and ran on %s (GET there: %q)\n", heldFor.Round(time.Millisecond), next.Name(), v)
	}
	time.Sleep(500 * time.Millisecond)
	stop()
	<-done
	fmt.Fprintf(d.out, "killed shard 0's master %s; its replica %s took over %v later\n",
		shard0.Name(), next.Name(), promoted.Sub(killed).Round(time.Millisecond))
	mu.Lock()
	for _, ev := range events {
		if ev.Kind == cluster.EventMasterChanged || ev.Kind == cluster.EventMasterFailing {
			fmt.Fprintf(d.out, "  +%v %s\n", ev.Time.Sub(killed).Round(time.Millisecond), ev)
		}
	}
	mu.Unlock()
	return run.report(ctx, d, c)
}

// shardTag is a hash tag whose slot the node serves.
func shardTag(ctx context.Context, l *lab.Lab, n *lab.Node) (string, error) {
	for i := range 1000 {
		tag := fmt.Sprint("demo-", i)
		o, err := l.SlotOwner(ctx, cluster.Slot(tag))
		if err != nil {
			return "", err
		}
		if o == n {
			return tag, nil
		}
	}
	return "", fmt.Errorf("no hash tag of 1000 tried lands on %s", n.Name())
}

// electionTimes records when the replica elections changed (every shard's
// selector reports to it).
type electionTimes struct {
	mu    sync.Mutex
	times []time.Time
}

func (e *electionTimes) observe(ev replica.Event) {
	e.mu.Lock()
	e.times = append(e.times, ev.Time)
	e.mu.Unlock()
}

// changedSince reports whether an election changed at or after t.
func (e *electionTimes) changedSince(t time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.ContainsFunc(e.times, func(at time.Time) bool { return !at.Before(t) })
}

// clusterReads reads 300 keys (600 GETs) with Nearest after the first probe
// round and prints where they went, per shard. The election follows the
// round trips the prober measures: on a busy machine a probe can find a
// replica slower than its master, and Nearest then rightly reads the
// master until the next round. Reads during such a change are read again
// (at most 5 times), and the output says so.
func (d *demo) clusterReads(ctx context.Context, c *cluster.Client, masters map[string]bool, elections *electionTimes) error {
	if err := c.Get(ctx, "warm").Err(); err != nil && !errors.Is(err, redis.Nil) {
		return err
	}
	for deadline := time.Now().Add(5 * time.Second); len(c.ReplicaTables()) < 3 || !allProbed(c); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			return errors.New("the replica prober did not finish its first round within 5 s")
		}
	}
	var onReplicas, all uint64
	for try := 1; ; try++ {
		start, before := time.Now(), nodeReads(c)
		for i := range 600 {
			if err := c.Get(ctx, fmt.Sprint("r", i%300)).Err(); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
		}
		onReplicas, all = 0, 0
		for addr, n := range nodeReads(c) {
			n -= before[addr]
			all += n
			if !masters[addr] {
				onReplicas += n
			}
		}
		if !elections.changedSince(start) || try == 5 {
			break
		}
		fmt.Fprintf(d.out, "Nearest: %d of %d reads on the replicas, but the election changed meanwhile (a probe measured a replica slower than its master: a busy machine); reading again\n", onReplicas, all)
	}
	fmt.Fprintf(d.out, "Nearest: %d of %d reads on the shards' replicas (1 ms away; masters 6 ms)\n", onReplicas, all)
	return nil
}

func allProbed(c *cluster.Client) bool {
	for _, table := range c.ReplicaTables() {
		for _, st := range table {
			if st.Role == replica.RoleReplica && st.Excluded == replica.ExcludedUnprobed {
				return false
			}
		}
	}
	return true
}

func nodeReads(c *cluster.Client) map[string]uint64 {
	out := map[string]uint64{}
	for _, n := range c.Stats().Nodes {
		out[n.Addr] = n.Reads
	}
	return out
}

// clusterWrites is the write load of the cluster step: each writer RPUSHes
// its sequence numbers to its own list of shard 0.
type clusterWrites struct {
	key     func(writer int) string
	mu      sync.Mutex
	acked   [demoClusterWriters][]int
	errs    map[string]int
	maxWait time.Duration // the longest acknowledged write: the hold
}

func (w *clusterWrites) start(ctx context.Context, c *cluster.Client) <-chan struct{} {
	w.errs = map[string]int{}
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range demoClusterWriters {
		wg.Go(func() {
			for i := 0; ctx.Err() == nil; i++ {
				began := time.Now()
				err := c.RPush(ctx, w.key(g), i).Err()
				w.mu.Lock()
				if err == nil {
					w.acked[g] = append(w.acked[g], i)
					w.maxWait = max(w.maxWait, time.Since(began))
				} else if ctx.Err() == nil {
					w.errs[clusterErrKind(err)]++
				}
				w.mu.Unlock()
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	return done
}

// report reads the lists back and prints the outcome.
func (w *clusterWrites) report(ctx context.Context, d *demo, c *cluster.Client) error {
	var acked, lost, dup int
	for g := range demoClusterWriters {
		got, err := c.LRange(ctx, w.key(g), 0, -1).Result()
		if err != nil {
			return err
		}
		seen := map[string]int{}
		for _, v := range got {
			seen[v]++
		}
		for _, n := range seen {
			dup += n - 1
		}
		for _, i := range w.acked[g] {
			acked++
			if seen[fmt.Sprint(i)] == 0 {
				lost++
			}
		}
	}
	var kinds []string
	for k, n := range w.errs {
		kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
	}
	slices.Sort(kinds)
	if len(kinds) == 0 {
		kinds = []string{"none"}
	}
	fmt.Fprintf(d.out, "writes: %d acknowledged, %d duplicated, %d lost (acknowledged by the killed master, not yet replicated); longest held write %v\n",
		acked, dup, lost, w.maxWait.Round(time.Millisecond))
	fmt.Fprintf(d.out, "errors: %s (may-have-executed writes are refused, never re-run)\n", strings.Join(kinds, ", "))
	st := c.Stats()
	fmt.Fprintf(d.out, "client: %d master changes, %d writes held, %d map reads\n", st.MasterChanges, st.WritesHeld, st.Refreshes)
	return nil
}

// clusterErrKind names a cluster client's error for the step's tally.
func clusterErrKind(err error) string {
	var mce *cluster.MasterChangedError
	var ne *cluster.NodeError
	switch {
	case errors.As(err, &mce) && mce.MayHaveExecuted:
		return "master changed, may have executed"
	case errors.As(err, &mce):
		return "master changed, not executed"
	case errors.As(err, &ne) && ne.MayHaveExecuted:
		return "node error, may have executed"
	case errors.As(err, &ne):
		return "node error, not executed"
	}
	return errKind(err)
}
