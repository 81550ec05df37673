package cluster

// Reading from replicas: the read preference, the per-shard replica
// selectors the topology goroutine keeps, the READONLY connections to
// replicas, and the routing of reads (single commands and read-only
// pipeline groups) to them. See "Reading from replicas" in doc.go.

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/cachestore"
	"github.com/rediskit/rediskit/internal/callopt"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/replica"
)

// ReadFrom says where read-only commands run.
type ReadFrom = redisurl.ReadFrom

// The read preferences.
const (
	// Master sends every command to its slot's master (the default).
	Master = redisurl.Master
	// Replica sends read-only commands to a replica of their slot's shard,
	// never to the master: when no replica of the shard may serve the read
	// (none healthy, or every one unreachable, link-down or stale), it
	// fails with a *NoReplicaError (ErrNoReplica) that says why for each.
	Replica = redisurl.Replica
	// ReplicaPreferred sends read-only commands to the shard's elected
	// replicas, or to its master when none is elected.
	ReplicaPreferred = redisurl.ReplicaPreferred
	// Nearest sends read-only commands to the shard's elected replicas, or
	// to its master when the master is nearer than every one of them by
	// more than the latency window, when none is elected, and before the
	// first probe round.
	Nearest = redisurl.Nearest
)

// WithReadFrom overrides Config.ReadFrom for the calls made with the
// returned context: WithReadFrom(ctx, Master) for a read that must see
// the caller's own write. It is the same option as rediskit.WithReadFrom
// and sentinel.WithReadFrom: any of them sets it for every client.
func WithReadFrom(ctx context.Context, rf ReadFrom) context.Context {
	return callopt.WithReadFrom(ctx, rf)
}

// readFrom is the call's read preference.
func (c *Client) readFrom(ctx context.Context) ReadFrom {
	return callopt.ReadFrom(ctx, c.opts.ReadFrom)
}

// checkReadFrom fills in and validates ReadFrom and Replica.
func (o *Config) checkReadFrom() error {
	if o.ReadFrom == "" {
		o.ReadFrom = Master
	}
	switch o.ReadFrom {
	case Master, Replica, ReplicaPreferred, Nearest:
	default:
		return configError("ReadFrom", fmt.Sprintf("%q is unknown (want master, replica, replicaPreferred or nearest)", o.ReadFrom))
	}
	sel, err := replica.NewSelector(o.Replica) // validates the Config; does nothing until bound
	if err != nil {
		return fmt.Errorf("cluster: Config.Replica: %w", err) // a *replica.ConfigError
	}
	return sel.Close()
}

// ErrNoReplica matches a *NoReplicaError.
var ErrNoReplica error = routing.NewTransient("cluster: no replica may serve the read (ReadFrom is replica only)", time.Second, false)

// NoReplicaError reports that a read under ReadFrom Replica found no
// replica of its slot's shard that may serve it, and why for each replica
// the client knows. ReadFrom Replica never reads the master
// (ReplicaPreferred would have). It matches ErrNoReplica. Nothing was
// sent: running the read again is safe.
type NoReplicaError struct {
	// Slot is the read's slot; Master the address of its shard's master,
	// which was not read.
	Slot   int
	Master string
	// Replicas are the shard's replicas the map has (healthy in CLUSTER
	// SHARDS: not failed, not loading), each with why it was not used.
	// Empty: the map has no replica for the shard.
	Replicas []ReplicaExclusion
}

// ReplicaExclusion is a replica a read under ReadFrom Replica did not use,
// and why: its Reason is the election's exclusion in a word
// (replica.ExcludedStale, ...), or "" when it gave none (a replica leaving
// the shard), its Why a sentence.
type ReplicaExclusion = replica.Unused

func (e *NoReplicaError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster: no replica of slot %d's shard may serve the read (ReadFrom is replica only: the master", e.Slot)
	if e.Master != "" {
		fmt.Fprintf(&b, " %s", e.Master)
	}
	b.WriteString(" is not read)")
	replica.WriteUnused(&b, e.Replicas, "the cluster reports no healthy replica for the shard")
	b.WriteString("; the read was not sent: run it again later, or with ReplicaPreferred")
	return b.String()
}

// Is makes errors.Is(err, ErrNoReplica) true.
func (e *NoReplicaError) Is(target error) bool { return target == ErrNoReplica }

// reader is a node's client for the reads sent to it as a replica: its
// connections send READONLY when they open, so the replica serves its
// shard's slots instead of answering MOVED. It is apart from the node's
// client, which serves the node as a master: a master demoted to a
// replica must answer a stale map's commands with MOVED, not serve them.
// When the election drops the replica, or it leaves its shard, the reader
// is retired: it takes no new reads and closes its pool once the reads in
// flight return, so idle connections close at once, busy ones when
// released; the next read makes a fresh one.
type reader struct {
	client   *redis.Client
	batch    *routing.Batcher
	inflight atomic.Int64
	retired  atomic.Bool
	once     sync.Once
	owner    *callerClients // forgets client when it closes
	// cache is the replica node's part of the client-side cache (its
	// node's: the node's tracker outlives the reader), or nil.
	cache *cachestore.NodeCache
}

func (r *reader) release() {
	if r.inflight.Add(-1) == 0 && r.retired.Load() {
		r.close()
	}
}

func (r *reader) retire() {
	r.retired.Store(true)
	if r.inflight.Load() == 0 {
		r.close()
	}
}

func (r *reader) close() {
	r.once.Do(func() {
		r.owner.forget(r.client)
		_ = r.client.Close()
	})
}

// newReader makes addr's replica-read client; a closed one once the node
// set is closed (its calls fail with redis.ErrClosed).
func (ns *nodeSet) newReader(addr string) *reader {
	o := ns.opts.nodeOptions(addr)
	o.OnConnect = func(ctx context.Context, cn *redis.Conn) error { return cn.ReadOnly(ctx).Err() }
	r := &reader{client: ns.clients.made(redis.NewClient(o)), owner: &ns.clients}
	r.batch = routing.NewBatcher(r.client, routing.BatchConfig{MaxBatch: ns.opts.AutoPipelineMaxBatch, MaxInflight: ns.opts.AutoPipelineInflight,
		Wire: &ns.wire, Blocking: ns.blocking})
	ns.mu.Lock()
	closed := ns.closed
	ns.mu.Unlock()
	if closed {
		r.close()
	}
	return r
}

// acquireReader returns n's replica-read client, made on first use, with
// one read counted in flight: the caller releases it.
func (ns *nodeSet) acquireReader(n *node) *reader {
	for {
		r := n.rd.Load()
		if r == nil {
			r = ns.newReader(n.addr)
			r.cache = n.cache
			if !n.rd.CompareAndSwap(nil, r) {
				r.close()
				continue
			}
		}
		r.inflight.Add(1)
		if !r.retired.Load() {
			return r
		}
		r.release() // evicted meanwhile: take the next one
	}
}

// evictReader retires addr's replica-read client (replica.Env.Evict).
func (ns *nodeSet) evictReader(addr string) {
	ns.mu.Lock()
	n := ns.live[addr]
	ns.mu.Unlock()
	if n != nil {
		n.evictReader()
	}
}

func (n *node) evictReader() {
	if r := n.rd.Swap(nil); r != nil {
		r.retire()
	}
}

// shardSelectors are the replica selectors of the shards, one per shard,
// all bound to one deployment key (the cluster's sorted seeds), so that
// one prober per cluster and process times every node once per interval.
// Owned by the topology goroutine: assign gives each new snapshot's
// shards their selector before it is published, so readers find it in
// the (immutable) shard.
type shardSelectors struct {
	cfg replica.Config
	env replica.Env
	log *slog.Logger
	wg  *sync.WaitGroup // counts the closing of selectors left over

	byMaster map[*node]*shardSelector
	serving  map[*node]bool // the replicas of the last map's shards
}

type shardSelector struct {
	sel  *replica.Selector
	topo replica.Topology
}

func newShardSelectors(opts *Config, nodes *nodeSet, wg *sync.WaitGroup) *shardSelectors {
	seeds := slices.Clone(opts.Addrs)
	slices.Sort(seeds)
	seeds = slices.Compact(seeds)
	return &shardSelectors{cfg: opts.Replica, log: opts.Logger, wg: wg,
		byMaster: map[*node]*shardSelector{}, serving: map[*node]bool{},
		env: replica.Env{
			MasterName:  "cluster:" + strings.Join(seeds, ","),
			NodeOptions: opts.nodeOptions,
			Evict:       nodes.evictReader,
			Logger:      opts.Logger,
			// The master's INFO replication says how each of its replicas
			// is doing: no INFO per replica per round.
			ReplicaStateFromMaster: true,
		}}
}

// assign gives next's shards their selectors: a shard keeps its master's
// selector; a shard whose master was a replica of another (a failover)
// takes that shard's, whose election then runs against the new master and
// evicts the replicas it dropped; a new shard gets a new one. Selectors
// left over are closed (off this goroutine). The replica-read clients of
// nodes that are no longer a replica of any shard are evicted.
func (ss *shardSelectors) assign(next *snapshot) {
	old := ss.byMaster
	ss.byMaster = make(map[*node]*shardSelector, len(next.masters))
	taken := map[*shardSelector]bool{}
	serving := map[*node]bool{}
	for _, sh := range next.masters {
		top := replica.Topology{Master: sh.master.addr}
		for _, r := range sh.replicas {
			top.Replicas = append(top.Replicas, r.addr)
			serving[r] = true
		}
		s := old[sh.master]
		if s == nil || taken[s] {
			s = nil
			for _, o := range sortedSelectors(old) {
				if !taken[o] && slices.Contains(o.topo.Replicas, top.Master) {
					s = o
					break
				}
			}
		}
		if s == nil {
			sel, err := replica.NewSelector(ss.cfg)
			if err != nil { // validated by NewClient
				ss.log.Error("cluster: replica selector", "err", err)
				continue
			}
			sel.Bind(ss.env)
			s = &shardSelector{sel: sel}
		}
		taken[s] = true
		if s.topo.Master != top.Master || !slices.Equal(s.topo.Replicas, top.Replicas) {
			s.sel.UpdateTopology(top)
			s.topo = top
		}
		sh.sel = s.sel
		ss.byMaster[sh.master] = s
	}
	for _, o := range old {
		if !taken[o] {
			safe.Go(ss.wg, func(error) {}, func() { _ = o.sel.Close() })
		}
	}
	for n := range ss.serving {
		if !serving[n] {
			n.evictReader()
		}
	}
	ss.serving = serving
}

// sortedSelectors are m's selectors by master address: assign's choice
// must not depend on map order.
func sortedSelectors(m map[*node]*shardSelector) []*shardSelector {
	out := make([]*shardSelector, 0, len(m))
	for _, s := range m {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *shardSelector) int { return compareStrings(a.topo.Master, b.topo.Master) })
	return out
}

// close closes every selector; the topology goroutine has stopped.
func (ss *shardSelectors) close() {
	for _, s := range ss.byMaster {
		_ = s.sel.Close()
	}
	ss.byMaster = map[*node]*shardSelector{}
}

// replicaRead chooses the replica a single read goes to under its read
// preference, and sets a.rd (its replica-read client, in flight) and
// a.done. It returns nil for the master; again when the map changed and
// the call should look again; or a *NoReplicaError under Replica.
func (c *Client) replicaRead(ctx context.Context, snap *snapshot, a *attempt) (n *node, again bool, err error) {
	if a.write || a.slot < 0 {
		return nil, false, nil // keyless commands go to a master
	}
	rf := c.readFrom(ctx)
	if rf == Master {
		return nil, false, nil
	}
	sh := snap.slots[a.slot]
	if sh == nil {
		return nil, false, nil // no master either: pick waits for the map
	}
	if sh.sel == nil && rf == Replica {
		// A shard a MOVED named before the refresh that reads its
		// replicas: wait for that refresh, within ReadTimeout.
		if c.waitChange(ctx, snap, time.Now().Add(c.opts.ReadTimeout)) == nil {
			return nil, true, nil
		}
		return nil, false, c.noReplica(a.slot, sh, nil)
	}
	n, done, err := c.electedReplica(ctx, a.slot, sh, rf, a.avoid)
	if n != nil {
		a.rd, a.done = c.nodes.acquireReader(n), done
	}
	return n, false, err
}

// electedReplica asks sh's selector for a replica under rf (never avoid):
// the replica's node and the done of its Pick, nil for the master, or,
// under Replica, a *NoReplicaError, after waiting (within ReadTimeout) for
// the probe rounds that vet replicas not probed yet.
func (c *Client) electedReplica(ctx context.Context, slot int, sh *shard, rf ReadFrom, avoid *node) (*node, func(), error) {
	if sh.sel == nil {
		return nil, nil, nil
	}
	if n, done := pickReplica(sh, rf, avoid); n != nil {
		return n, done, nil
	}
	if rf != Replica {
		return nil, nil, nil
	}
	if replica.AwaitingProbe(sh.sel.Table()) {
		wctx, cancel := context.WithTimeout(ctx, c.opts.ReadTimeout)
		defer cancel()
		stop := context.AfterFunc(c.topo.ctx, cancel)
		defer stop()
		for sh.sel.WaitRound(wctx, sh.sel.Rounds()+1) == nil {
			if n, done := pickReplica(sh, rf, avoid); n != nil {
				return n, done, nil
			}
			if !replica.AwaitingProbe(sh.sel.Table()) {
				break
			}
		}
	}
	return nil, nil, c.noReplica(slot, sh, avoid)
}

// pickReplica is the replica sh's selector hands out, nil for none (or
// only avoid). The selector learns a shard's topology just before its
// snapshot is published, so a read holding an older one may be named a
// replica its shard does not have: that one is not used, and the selector
// is asked once more.
func pickReplica(sh *shard, rf ReadFrom, avoid *node) (*node, func()) {
	for range 2 {
		addr, done := sh.sel.Pick(rf)
		if addr == "" {
			return nil, nil
		}
		if i := slices.IndexFunc(sh.replicas, func(n *node) bool { return n.addr == addr }); i >= 0 && sh.replicas[i] != avoid {
			return sh.replicas[i], done
		}
		if done != nil {
			done()
		}
	}
	return nil, nil
}

// noReplica is the error of a read under Replica that no replica of sh
// may serve: each replica the client knows, and why it was not used.
func (c *Client) noReplica(slot int, sh *shard, avoid *node) *NoReplicaError {
	var table []replica.NodeStatus
	if sh.sel != nil {
		table = sh.sel.Table()
	}
	current := make([]string, len(sh.replicas))
	for i, n := range sh.replicas {
		current[i] = n.addr
	}
	e := &NoReplicaError{Slot: slot, Master: sh.master.addr, Replicas: replica.ExplainUnused(table, current, replica.UnusedWhy{
		Gone:     "no longer among the shard's healthy replicas",
		Changing: "not handed out for this read: the election was changing",
		Untabled: "the map has just learned of it; not elected yet",
	})}
	for i := range e.Replicas {
		if avoid != nil && e.Replicas[i].Addr == avoid.addr {
			e.Replicas[i].Why = "it did not answer this read"
		}
	}
	return e
}

// sendAttempt sends one try of a command: to the replica replicaRead
// chose (a.rd), else as send does. A replica that gives no answer (or
// cannot be dialled) is avoided by the read's next try.
func (c *Client) sendAttempt(ctx context.Context, n *node, cmd redis.Cmder, a *attempt) error {
	rd, done := a.rd, a.done
	if rd == nil {
		return c.send(ctx, n, cmd, a.asking, a.write)
	}
	a.rd, a.done = nil, nil
	var err error
	if ttl, ok := rd.cache.Asked(ctx); ok {
		err = rd.cache.Do(cmd, ttl, func() error {
			n.count(false)
			return c.sendOn(ctx, rd.client, rd.batch, cmd)
		})
	} else {
		n.count(false)
		err = c.sendOn(ctx, rd.client, rd.batch, cmd)
	}
	rd.release()
	if done != nil {
		done()
	}
	if err != nil && !failure.Reply(err) {
		a.avoid = n
	}
	return err
}

// routeReadGroups sends the read-only groups of a pipeline (one master's
// commands, none a write or a SCAN page) to a replica of the master's
// shard when the call's read preference and the shard's election say so,
// whole: a group is not split over replicas. Under Replica, a group whose
// shard has no replica to hand out gets a *NoReplicaError on each of its
// commands and is not sent. It returns the groups to send and a release
// to call once they ran.
func (c *Client) routeReadGroups(ctx context.Context, snap *snapshot, groups []group) ([]group, func()) {
	rf := c.readFrom(ctx)
	if rf == Master {
		return groups, func() {}
	}
	var picked []func()
	out := groups[:0]
	for _, g := range groups {
		sh := shardOf(snap, g.n)
		if g.writes > 0 || sh == nil || slices.ContainsFunc(g.cmds, isScanPage) {
			out = append(out, g)
			continue
		}
		n, done, err := c.electedReplica(ctx, c.slotOf(g.cmds[0]), sh, rf, nil)
		switch {
		case err != nil:
			routing.SetErrs(nil, g.cmds, err)
			continue
		case n != nil:
			g.n, g.rd = n, c.nodes.acquireReader(n)
			rd := g.rd
			picked = append(picked, func() {
				rd.release()
				if done != nil {
					done()
				}
			})
		}
		out = append(out, g)
	}
	return out, func() {
		for _, f := range picked {
			f()
		}
	}
}

// isScanPage: q is a SCAN-family page, which runs where its cursor was issued.
func isScanPage(q redis.Cmder) bool { _, ok := routing.FindScan(q); return ok }

// shardOf is the shard n masters in snap, nil when none.
func shardOf(snap *snapshot, n *node) *shard {
	for _, sh := range snap.masters {
		if sh.master == n {
			return sh
		}
	}
	return nil
}

// target is what a group's commands are sent on: its replica-read client
// when it goes to a replica, else the node's client.
func (g group) target() *redis.Client {
	if g.rd != nil {
		return g.rd.client
	}
	return g.n.client
}

// ReplicaTables returns each shard's replica election table (see
// replica.Selector.Table: the master first, then its replicas, with
// RTTs, health, lag and why each replica is or is not elected), by the
// shard master's address. Before the first probe round, which the first
// read under a ReadFrom other than Master starts, the rows have no RTT.
func (c *Client) ReplicaTables() map[string][]replica.NodeStatus {
	out := map[string][]replica.NodeStatus{}
	for _, sh := range c.topo.snap.Load().masters {
		if sh.sel != nil {
			out[sh.master.addr] = sh.sel.Table()
		}
	}
	return out
}
