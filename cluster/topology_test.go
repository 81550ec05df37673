package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// refusedCommand is the error reply of a server without a subcommand.
type refusedCommand string

func (e refusedCommand) Error() string { return string(e) }
func (refusedCommand) RedisError()     {}

// refuseHook makes the client's server look like one without the named
// subcommands of CLUSTER: their replies are replaced by the error reply a
// server that lacks them sends.
type refuseHook []string

func (h refuseHook) refuse(cmds ...redis.Cmder) {
	for _, q := range cmds {
		if a := q.Args(); len(a) == 2 && strings.EqualFold(a[0].(string), "cluster") && slices.Contains(h, strings.ToLower(a[1].(string))) {
			q.SetErr(refusedCommand("ERR unknown subcommand '" + a[1].(string) + "'. Try CLUSTER HELP."))
		}
	}
}

func (h refuseHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h refuseHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		h.refuse(cmd)
		return errors.Join(err, cmd.Err())
	}
}
func (h refuseHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.refuse(cmds...)
		return err
	}
}

// TestMapFromEachSource reads a real cluster's map from CLUSTER NODES with
// CLUSTER SHARDS, from CLUSTER SHARDS alone (a server that refuses CLUSTER
// NODES) and from CLUSTER SLOTS alone (one that refuses both): the same
// owner and replicas for every slot; offsets from CLUSTER SHARDS for every
// node where it answers.
func TestMapFromEachSource(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	c := newTestClient(t, l, nil)
	tls := l.TLSConfig() != nil
	type result struct {
		owners   [Slots]string
		replicas map[string][]string
		offsets  int
	}
	read := func(refuse refuseHook) result {
		t.Helper()
		n := c.seed()
		ctl := redis.NewClient(n.ctl.Options())
		defer func() { _ = ctl.Close() }()
		ctl.AddHook(refuse)
		lines, err := readMap(ctx, ctl, tls)
		if err != nil {
			t.Fatalf("refusing %v: %v", refuse, err)
		}
		m := mergeViews([][]nodeLine{lines})
		var r result
		r.replicas = map[string][]string{}
		for s := range Slots {
			r.owners[s] = m.addr[m.owner[s]]
		}
		for id, reps := range m.replicas {
			for _, rid := range reps {
				r.replicas[m.addr[id]] = append(r.replicas[m.addr[id]], m.addr[rid])
			}
		}
		for _, off := range m.offset {
			if off > 0 {
				r.offsets++
			}
		}
		return r
	}
	// Other nodes' offsets come by gossip: after a write on every shard
	// the seed hears a non-zero offset from each node within a few pings.
	for i := range 30 {
		if err := c.Set(ctx, fmt.Sprint("offset", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var full result
	for full = read(nil); full.offsets != 6; full = read(nil) {
		select {
		case <-ctx.Done():
			t.Fatalf("CLUSTER NODES with SHARDS: %d nodes with an offset, want 6", full.offsets)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if len(full.replicas) != 3 {
		t.Fatalf("replicas by master %v, want 3 masters with one each", full.replicas)
	}
	for _, tc := range []struct {
		refuse  refuseHook
		offsets int
	}{{refuseHook{"nodes"}, 6}, {refuseHook{"nodes", "shards"}, 0}} {
		got := read(tc.refuse)
		if got.owners != full.owners {
			for s := range Slots {
				if got.owners[s] != full.owners[s] {
					t.Fatalf("refusing %v: slot %d on %q, CLUSTER NODES says %q", tc.refuse, s, got.owners[s], full.owners[s])
				}
			}
		}
		for m, reps := range full.replicas {
			if !slices.Equal(got.replicas[m], reps) {
				t.Errorf("refusing %v: replicas of %s %v, want %v", tc.refuse, m, got.replicas[m], reps)
			}
		}
		if got.offsets != tc.offsets {
			t.Errorf("refusing %v: %d nodes with an offset, want %d", tc.refuse, got.offsets, tc.offsets)
		}
	}
	// The client's own map has them too, from its next refresh.
	for {
		snap := c.topo.snap.Load()
		ok := len(snap.masters) == 3
		for _, sh := range snap.masters {
			ok = ok && len(sh.replicas) == 1 && sh.offsets[sh.master] > 0 && sh.offsets[sh.replicas[0]] > 0
		}
		if ok {
			break
		}
		c.topo.kick(RefreshPeriodic)
		select {
		case <-snap.next:
		case <-ctx.Done():
			t.Fatalf("the client's map: %d masters, shards %+v", len(snap.masters), snap.masters)
		}
	}
}

// eventLog collects a client's events.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
	ch  chan struct{} // signalled on each event
}

func newEventLog() *eventLog { return &eventLog{ch: make(chan struct{}, 1)} }

func (e *eventLog) observe(ev Event) {
	e.mu.Lock()
	e.evs = append(e.evs, ev)
	e.mu.Unlock()
	select {
	case e.ch <- struct{}{}:
	default:
	}
}

// wait returns the first event that match accepts, waiting for it within ctx.
func (e *eventLog) wait(ctx context.Context, t *testing.T, what string, match func(Event) bool) Event {
	t.Helper()
	for {
		e.mu.Lock()
		i := slices.IndexFunc(e.evs, match)
		var ev Event
		if i >= 0 {
			ev = e.evs[i]
		}
		e.mu.Unlock()
		if i >= 0 {
			return ev
		}
		select {
		case <-e.ch:
		case <-ctx.Done():
			e.mu.Lock()
			defer e.mu.Unlock()
			t.Fatalf("no %s event; events: %v", what, e.evs)
		}
	}
}

// TestObserverSeesFailovers: a planned failover and a SIGKILL of a master
// reach the Observer as EventMasterChanged (old and new master, the
// shard's slot count), the kill first as EventMasterFailing; Stats count
// them and the refreshes by cause.
func TestObserverSeesFailovers(t *testing.T) {
	ctx := testkit.Context(t, 90*time.Second)
	l := lab.New(t, lab.Cluster(3, 1))
	log := newEventLog()
	c := newTestClient(t, l, func(o *Config) { o.Observer = log.observe })
	// A key on every shard, written until the test ends, so that the
	// client meets each change.
	keys := map[int]string{}
	for i := 0; len(keys) < 3; i++ {
		k := "ev" + string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		owner, err := l.SlotOwner(ctx, Slot(k))
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := keys[owner.Shard()]; !ok {
			keys[owner.Shard()] = k
		}
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, k := range keys {
		wg.Go(func() {
			for wctx.Err() == nil {
				_ = c.Incr(wctx, k).Err()
				time.Sleep(5 * time.Millisecond)
			}
		})
	}
	defer func() { stop(); wg.Wait() }()

	old0, err := l.ShardMaster(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	new0, err := l.ClusterFailover(ctx, 0, lab.FailoverGraceful)
	if err != nil {
		t.Fatal(err)
	}
	ev := log.wait(ctx, t, "master changed (graceful)", func(e Event) bool {
		return e.Kind == EventMasterChanged && e.OldMaster == old0.Addr()
	})
	if ev.Master != new0.Addr() || ev.Slots <= 0 {
		t.Errorf("graceful failover: %v, want master %s", ev, new0.Addr())
	}

	victim, err := l.ShardMaster(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := victim.Kill(); err != nil {
		t.Fatal(err)
	}
	log.wait(ctx, t, "master failing", func(e Event) bool { return e.Kind == EventMasterFailing && e.Master == victim.Addr() })
	next, err := l.WaitPromotion(ctx, 1, victim)
	if err != nil {
		t.Fatal(err)
	}
	ev = log.wait(ctx, t, "master changed (kill)", func(e Event) bool {
		return e.Kind == EventMasterChanged && e.OldMaster == victim.Addr()
	})
	if ev.Master != next.Addr() || ev.Slots <= 0 {
		t.Errorf("after the kill: %v, want master %s", ev, next.Addr())
	}
	stop()
	wg.Wait()
	st := c.Stats()
	t.Logf("stats: refreshes %d %v, moved %d, retries %d, writes held %d, master changes %d", st.Refreshes, st.RefreshesByCause,
		st.Moved, st.Retries, st.WritesHeld, st.MasterChanges)
	if st.MasterChanges < 2 || st.RefreshesByCause[RefreshStart] != 1 || st.RefreshesByCause[RefreshNodeFailed] == 0 ||
		st.RefreshesByCause[RefreshFailoverPoll] == 0 || st.EventsDropped != 0 {
		t.Errorf("stats %+v", st)
	}
	var sum uint64
	for _, n := range st.RefreshesByCause {
		sum += n
	}
	if sum != st.Refreshes || len(st.RefreshesByCause) != int(numRefreshCauses) {
		t.Errorf("refreshes %d, by cause %v", st.Refreshes, st.RefreshesByCause)
	}
	var writes uint64
	for _, n := range st.Nodes {
		writes += n.Writes
	}
	if writes == 0 || slices.Contains(st.Masters, victim.Addr()) {
		t.Errorf("nodes %+v, masters %v", st.Nodes, st.Masters)
	}
}
