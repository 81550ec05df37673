package sentinel

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/safe"
)

// The client is split in two, along the line grpc-go draws between a
// balancer and its picker:
//
//   - topology (this file, with discovery.go, poll.go and watch.go) owns
//     what the client knows of the deployment: the sentinel set and the
//     node set, the sentinel watch (watch.go), discovery and the replica
//     scan (discovery.go), the sentinel poll (poll.go), the failover and
//     isolation holds, and the one goroutine (run) that alone changes
//     them. That goroutine never touches the network: workers do, and post
//     their results back to it. What it decides it publishes as an
//     immutable snapshot behind an atomic pointer (load), and it reports
//     events through the client's emit.
//   - Client (client.go, durable.go, blocking.go, scan.go, pubsub.go,
//     front.go) routes each call on the current snapshot, through the
//     never-dialling front (internal/routing). It asks the topology only
//     for the snapshot (load), for a refresh (kick, requestResolve) and
//     for a replica's eviction (evict), and learns of each new snapshot
//     through installed, to retire what it holds on nodes the snapshot
//     dropped.
//
// A client for another topology (Redis Cluster) reuses the same split:
// its own topology type behind the same kind of snapshot, and a routing
// client on top.
type topology struct {
	opts     *Config
	log      *slog.Logger
	emit     func(Event)
	stats    *counters
	selector ReplicaSelector
	// installed is called by the topology goroutine after each new
	// snapshot, with the one it replaced and the addresses it keeps: the
	// client retires its own per-node state (blocking connections,
	// subscriptions) there.
	installed func(cur, next *snapshot, keep map[string]bool)

	snap      atomic.Pointer[snapshot]
	nodes     *nodeSet
	sentinels *sentinelSet

	// lastFailure holds the attempts of the last discovery round that
	// found no master (nil after a success), for callers who time out
	// waiting.
	lastFailure atomic.Pointer[DiscoveryError]

	state         topoState // owned by the topology goroutine
	events        chan sentinelEvent
	kickCh        chan struct{}
	evictSig      chan struct{} // capacity 1: evictions are waiting
	refreshDone   chan refreshResult
	switchDone    chan switchResult
	promotionDone chan promotionResult
	pollDone      chan pollResult

	// evicts are the replicas to evict, drained by the topology goroutine
	// (evictSig wakes it).
	evictMu sync.Mutex
	evicts  map[string]struct{}

	mu           sync.Mutex
	pendingRound chan struct{}
	watchers     []*redis.PubSub
	closed       bool

	// ctx is the client's: it ends when the client closes.
	ctx context.Context
	wg  sync.WaitGroup
}

// newTopology returns the topology of the master opts names; start starts
// it. ctx ends when the client closes.
func newTopology(ctx context.Context, opts *Config, log *slog.Logger, emit func(Event), stats *counters) *topology {
	t := &topology{
		opts:          opts,
		log:           log,
		emit:          emit,
		stats:         stats,
		events:        make(chan sentinelEvent, 256),
		kickCh:        make(chan struct{}, 1),
		evictSig:      make(chan struct{}, 1),
		refreshDone:   make(chan refreshResult),
		switchDone:    make(chan switchResult),
		promotionDone: make(chan promotionResult),
		pollDone:      make(chan pollResult),
		state:         newTopoState(),
		ctx:           ctx,
	}
	t.nodes = newNodeSet(opts)
	t.nodes.withCache()
	t.sentinels = newSentinelSet(opts)
	t.snap.Store(&snapshot{superseded: make(chan struct{})})
	return t
}

// start subscribes to every configured sentinel and starts the topology
// goroutine, whose first act is a discovery.
func (t *topology) start() {
	for _, addr := range t.sentinels.list() {
		t.startWatcher(addr)
	}
	t.wg.Add(1)
	go t.run()
}

// close closes the sentinel subscriptions and every connection the
// topology made (the sentinels', the nodes'), which unblocks workers
// waiting on the network, and waits for its goroutines. The client's
// context has ended already.
func (t *topology) close() {
	t.mu.Lock()
	t.closed = true
	watchers := t.watchers
	t.watchers = nil
	t.mu.Unlock()
	for _, ps := range watchers {
		_ = ps.Close()
	}
	t.nodes.closeAll()
	t.sentinels.close()
	t.wg.Wait()
}

// load returns the current snapshot.
func (t *topology) load() *snapshot { return t.snap.Load() }

// snapshot is an immutable routing table: the master's client, the healthy
// replicas' clients, and whether writes are held for a failover. Topology
// changes build a new snapshot and swap it in atomically; the per-command
// path only loads the current one.
type snapshot struct {
	gen      uint64
	master   *node // nil until the first discovery succeeds
	sentinel string

	replicas     []*node
	replicaAddrs []string
	byAddr       map[string]*node

	// durable lists the replicas a durable write must be confirmed by (see
	// durableSet), sorted; never modified in place.
	durable []string
	// unconfirmable lists the counted replicas the master's ROLE did not
	// list as connected at the last refresh (nil: not known, as after a
	// promotion): WAIT cannot count them, so a durable write is refused
	// before it is sent rather than run without confirmation.
	unconfirmable []string

	// promotable lists the replicas Sentinel could promote, as far as the
	// last refresh saw (durableSet with DurablePromotable, whatever the
	// client's scope): the replication probe asks the master to reach
	// them all.
	promotable []string

	// failoverHeld: writes are held for a failover under way (to
	// candidate); they wait for a newer snapshot.
	failoverHeld bool
	candidate    string
	// isolated, when not empty, says why writes are held for a master cut
	// off from the sentinels (see isolationDecision); writes wait for a
	// newer snapshot.
	isolated string

	// superseded is closed when a newer snapshot replaces this one.
	superseded chan struct{}
}

func (s *snapshot) replica(addr string) *node { return s.byAddr[addr] }

// held reports whether writes wait for a newer snapshot.
func (s *snapshot) held() bool { return s.failoverHeld || s.isolated != "" }

func (s *snapshot) masterAddr() string {
	if s.master == nil {
		return ""
	}
	return s.master.addr
}

// with returns a copy of the snapshot for the next install.
func (s *snapshot) with() *snapshot {
	n := *s
	n.replicas = slices.Clone(s.replicas)
	return &n
}

// failoverState is what the topology goroutine knows about the failover
// it holds writes for.
type failoverState struct {
	candidate string
	sentinel  string
	since     time.Time
	aborted   bool
}

// topoState is owned by the topology goroutine: only run and the methods
// it calls read or write it. Workers get copies.
type topoState struct {
	knownEpoch int64
	// masterEpoch is the newest config epoch at which a sentinel named the
	// current master (-1: none). It is what formerMasters records when the
	// client leaves that master, so it follows every answer that names the
	// master again, not only the one that installed it: a master promoted
	// on its own ROLE during a failover starts at the epoch before that
	// failover, and the failover's epoch comes with the next refresh.
	masterEpoch   int64
	formerMasters map[string]formerMaster // masters the client left
	// awaitingDemotion holds the masters the client left that no refresh
	// has seen as a replica since, each until when: such a node answering
	// ROLE master is expected (Sentinel demotes it seconds later) and holds
	// no writes. Once it has been seen as a replica it leaves this set, so
	// its promotion later holds writes as any replica's does.
	awaitingDemotion map[string]time.Time
	// unconfirmed holds replicas that answered ROLE master without any
	// sentinel naming them (until when the client ignores that).
	unconfirmed  map[string]time.Time
	failoverHold *failoverState

	// holdEndErr is why the hold being lifted by the next install ended
	// without a new master (set by expireFailoverHold, consumed by install).
	holdEndErr error

	refreshing  bool
	wantRefresh bool
	checking    bool // a promotion check is running
	polling     bool // a sentinel poll is running
	// poll is what the sentinel poll keeps between rounds, the hold of
	// writes for an isolated master included.
	poll pollState
	// rtt holds the smallest recent round trips the client measured to
	// the master, to each replica and to each sentinel: the poll bounds
	// the round trips it expects between them with these (see
	// pollPingSlack).
	rtt rttEstimates
	// replicasLimited: the last refresh kept Config.MaxReplicas of more
	// replicas listed (reported once, until the lists fit again).
	replicasLimited bool
}

// formerMaster is a master the client left: at which config epoch, and
// when. A sentinel naming it again at that epoch or an older one is stale
// (it has not heard of the failover yet), for formerMasterGrace: past that,
// a failover that never completed is over, and the sentinels' answer
// stands.
type formerMaster struct {
	epoch int64
	left  time.Time
}

func newTopoState() topoState {
	return topoState{knownEpoch: -1, masterEpoch: -1, formerMasters: map[string]formerMaster{},
		awaitingDemotion: map[string]time.Time{}, unconfirmed: map[string]time.Time{},
		rtt: rttEstimates{}}
}

// masterNamed records that a sentinel named the current master at epoch.
func (st *topoState) masterNamed(epoch int64) { st.masterEpoch = max(st.masterEpoch, epoch) }

// masterMoved records that the client leaves old (none: "") for a master
// named at epoch.
func (st *topoState) masterMoved(old string, epoch int64, now time.Time) {
	if old != "" {
		st.formerMasters[old] = formerMaster{epoch: st.masterEpoch, left: now}
		st.awaitingDemotion[old] = now.Add(formerMasterGrace)
	}
	st.masterEpoch = epoch
}

// replicasSeen records the replicas a refresh verified with ROLE: a former
// master among them has been demoted.
func (st *topoState) replicasSeen(verified []string) {
	for _, addr := range verified {
		delete(st.awaitingDemotion, addr)
	}
}

// expectedMaster reports whether addr answering ROLE master is expected: a
// master the client left that has not been seen as a replica since, within
// formerMasterGrace of leaving it.
func (st *topoState) expectedMaster(addr string, now time.Time) bool {
	until, ok := st.awaitingDemotion[addr]
	return ok && now.Before(until)
}

// formerMasterGrace is how long a master the client left is treated as
// stale when sentinels still name it at its old epoch. Sentinel converts
// a demoted master within seconds; 30 s covers production timings.
const formerMasterGrace = 30 * time.Second

// splitBrainQuiet is how long the client ignores a replica that answered
// ROLE master, held writes for FailoverHold, and was never named by a
// sentinel (an operator's REPLICAOF NO ONE, a node restarted without its
// replicaof line): Sentinel converts such a node back within seconds.
const splitBrainQuiet = 30 * time.Second

// The results workers post back to the topology goroutine.
type (
	refreshResult struct {
		took        time.Duration
		startMaster string // the master when the refresh started
		rep         masterReport
		err         error
		scan        replicaScan
		round       chan struct{}
	}
	switchResult struct {
		addr, sentinel string
		epoch          int64
		err            error
	}
	promotionResult struct {
		candidate string
		isMaster  bool
	}
)

// recovered reports a panic recovered from the client's own work (what
// went wrong, by what) and returns it as the error of that work, which then
// counts as failed: a server sent a reply the parsing code could not
// handle, or there is a bug. nil stays nil.
func (t *topology) recovered(what string, err error) error {
	if err == nil {
		return nil
	}
	var pe *safe.PanicError
	if errors.As(err, &pe) {
		t.log.Error("internal panic recovered", "in", what, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
	return fmt.Errorf("sentinel: %s failed: %w", what, err)
}

// run is the topology goroutine. It alone changes the routing snapshot; it
// never waits on the network itself: refreshes, +switch-master checks and
// promotion polls run in worker goroutines that post their results back,
// so a black-holed node cannot stall the reaction to a failover. A panic
// in it (a bug) is reported and the loop goes on.
func (t *topology) run() {
	defer t.wg.Done()
	for t.ctx.Err() == nil {
		_ = t.recovered("the topology goroutine", safe.Call(t.loop))
	}
}

// loop is the topology goroutine's loop; it returns when the client
// closes.
func (t *topology) loop() {
	refresh := time.NewTicker(t.opts.RefreshInterval)
	defer refresh.Stop()
	promotion := time.NewTicker(time.Hour)
	promotion.Stop()
	defer promotion.Stop()
	soon := time.NewTimer(time.Hour)
	soon.Stop()
	defer soon.Stop()
	var pollTick <-chan time.Time                                                // nil: polling is off
	if t.opts.SentinelPollInterval > 0 && !t.opts.deaf && t.opts.Primary == "" { // a standalone primary has no sentinel to ask
		poll := time.NewTicker(t.opts.SentinelPollInterval)
		defer poll.Stop()
		pollTick = poll.C
	}

	st := &t.state
	st.wantRefresh = true // the first discovery, at once
	for {
		t.startRefreshIfWanted()
		if st.failoverHold != nil {
			promotion.Reset(25 * time.Millisecond)
		} else {
			promotion.Stop()
		}
		select {
		case <-t.ctx.Done():
			return
		case <-t.kickCh:
			st.wantRefresh = true
		case ev := <-t.events:
			if t.handleEvent(ev) {
				soon.Reset(100 * time.Millisecond)
			}
		case <-soon.C:
			st.wantRefresh = true
		case <-refresh.C:
			st.wantRefresh = true
		case res := <-t.refreshDone:
			st.refreshing = false
			t.applyRefresh(res)
			if res.round != nil {
				close(res.round)
			}
		case res := <-t.switchDone:
			t.applySwitch(res)
		case <-t.evictSig:
			for _, addr := range t.takeEvicts() {
				t.applyEvict(addr)
			}
		case <-pollTick:
			t.startPoll()
		case res := <-t.pollDone:
			t.applyPoll(res)
		case <-promotion.C:
			t.startPromotionCheck()
		case res := <-t.promotionDone:
			st.checking = false
			if f := st.failoverHold; f != nil && res.isMaster && res.candidate == f.candidate {
				// The sentinel that announced the candidate named it.
				t.promote(res.candidate, f.sentinel, st.knownEpoch)
			}
		}
	}
}

// kick asks the topology goroutine for a refresh without waiting.
func (t *topology) kick() {
	select {
	case t.kickCh <- struct{}{}:
	default:
	}
}

// requestResolve returns a channel closed when a refresh that starts after
// this call has been applied. Concurrent callers share one refresh.
func (t *topology) requestResolve() <-chan struct{} {
	t.mu.Lock()
	if t.pendingRound == nil {
		t.pendingRound = make(chan struct{})
	}
	ch := t.pendingRound
	t.mu.Unlock()
	t.kick()
	return ch
}

// post hands a worker's result to the topology goroutine, unless the
// client is closing.
func post[T any](t *topology, ch chan T, v T) {
	select {
	case ch <- v:
	case <-t.ctx.Done():
	}
}

func (t *topology) startRefreshIfWanted() {
	st := &t.state
	if !st.wantRefresh || st.refreshing {
		return
	}
	st.wantRefresh, st.refreshing = false, true
	t.mu.Lock()
	round := t.pendingRound
	t.pendingRound = nil
	t.mu.Unlock()

	cur := t.snap.Load()
	stale := t.staleCheck()
	t.stats.resolutions.Add(1)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		res := refreshResult{startMaster: cur.masterAddr(), round: round}
		began := time.Now()
		perr := safe.Call(func() {
			res.rep, res.err = t.discover(t.ctx, stale)
			res.took = time.Since(began)
			if res.err == nil {
				res.scan = t.scanReplicas(t.ctx, res.rep.addr, res.rep.connected)
				for _, v := range res.scan.views {
					if v.err != nil {
						t.log.Debug("replicas unavailable", "sentinel", v.sentinel, "err", v.err)
					}
				}
				for _, added := range t.learnSentinels(res.scan.views) {
					t.emit(Event{Kind: EventSentinelAdded, Sentinel: added})
					t.log.Info("sentinel learned", "sentinel", added)
					t.startWatcher(added)
				}
			}
		})
		if perr != nil {
			res.err = t.recovered("a topology refresh", perr)
		}
		post(t, t.refreshDone, res)
	}()
}

// applyRefresh installs what a refresh found, unless the topology moved on
// while it ran.
func (t *topology) applyRefresh(res refreshResult) {
	st := &t.state
	if res.err != nil {
		if t.ctx.Err() == nil {
			t.emit(Event{Kind: EventDiscoveryFailed, Duration: res.took, Err: res.err})
			t.log.Warn("discovery failed", "err", res.err)
			t.expireFailoverHold(res.err)
		}
		return
	}
	t.emit(Event{Kind: EventDiscovered, Master: res.rep.addr, Sentinel: res.rep.sentinel, Duration: res.took})
	cur := t.snap.Load()
	if cur.masterAddr() != res.startMaster {
		// A promotion was applied while the refresh ran: its answer may
		// predate it. Look again.
		st.wantRefresh = true
		return
	}
	if res.rep.epoch > st.knownEpoch {
		st.knownEpoch = res.rep.epoch
	}
	if res.rep.addr == cur.masterAddr() {
		st.masterNamed(res.rep.epoch)
	}
	if st.failoverHold != nil && res.rep.addr == cur.masterAddr() {
		// The sentinels still name the master whose writes are held: the failover
		// has not been announced yet.
		if !st.failoverHold.aborted && time.Since(st.failoverHold.since) < t.opts.FailoverHold {
			return
		}
		t.expireFailoverHold(errors.New("no new master confirmed"))
		cur = t.snap.Load()
	}
	next := cur.with()
	next.master = t.nodes.get(res.rep.addr)
	next.sentinel = res.rep.sentinel
	next.replicas = next.replicas[:0]
	for _, r := range res.scan.healthy {
		if r.addr != res.rep.addr {
			next.replicas = append(next.replicas, t.nodes.get(r.addr))
		}
	}
	next.durable = durableAfterRefresh(t.opts.DurableScope, cur.masterAddr(), cur.durable, res)
	next.promotable = durableAfterRefresh(DurablePromotable, cur.masterAddr(), cur.promotable, res)
	next.unconfirmable = unconfirmable(next.durable, res.rep.connected)
	if res.scan.dropped > 0 {
		// The replicas left out could be promoted: no durable write can
		// be confirmed by them all.
		next.unconfirmable = append(next.unconfirmable, fmt.Sprintf("(%d more replicas listed, past Config.MaxReplicas)", res.scan.dropped))
	}
	t.replicasLimited(res.scan)
	st.replicasSeen(res.scan.verified)
	st.rtt.Sample(res.rep.addr, res.rep.rtt)
	for addr, d := range res.scan.rtt {
		st.rtt.Sample(addr, d)
	}
	if cur.masterAddr() != res.rep.addr {
		next.failoverHeld, next.candidate = false, ""
		st.failoverHold = nil
		next.isolated, st.poll = "", pollState{}
		st.masterMoved(cur.masterAddr(), res.rep.epoch, time.Now())
	}
	if changed(cur, next) {
		t.install(next)
	}
	t.detectSplitBrain(res.rep.addr, res.scan.claims)
}

// replicasLimited reports, once until the lists fit again, a refresh
// that kept Config.MaxReplicas of more replicas the sentinels listed.
func (t *topology) replicasLimited(scan replicaScan) {
	limited := scan.dropped > 0
	if limited == t.state.replicasLimited {
		return
	}
	t.state.replicasLimited = limited
	if !limited {
		t.log.Info("the replicas listed fit MaxReplicas again", "listed", scan.listed, "max", t.opts.MaxReplicas)
		return
	}
	most, rows := "", 0
	for _, v := range scan.views {
		if v.listed > rows {
			most, rows = v.sentinel, v.listed
		}
	}
	reason := fmt.Sprintf("the sentinels list %d replicas (%s lists %d rows); the client keeps %d (Config.MaxReplicas), and refuses durable writes meanwhile",
		scan.listed, most, rows, t.opts.MaxReplicas)
	var kept []string
	for _, v := range scan.views {
		for _, r := range v.rows {
			if addr := redisinfo.Addr(r); !slices.Contains(kept, addr) {
				kept = append(kept, addr)
			}
		}
	}
	t.emit(Event{Kind: EventReplicasLimited, Sentinel: most, Replicas: kept, Reason: reason})
	t.log.Warn("replicas limited", "listed", scan.listed, "kept", t.opts.MaxReplicas, "sentinel", most, "rows", rows)
}

// staleCheck rejects sentinel answers that are behind what the client
// already knows: a config epoch below the highest seen, or a former master
// named again at an epoch no newer than when the client left it (the old
// master keeps answering ROLE master until Sentinel demotes it, so ROLE
// alone cannot tell). It captures copies: it runs in worker goroutines.
//
// One exception ends a former master's grace early: a failover the client
// followed on the candidate's ROLE that never completed. When no sentinel
// has named the current master at an epoch newer than the one the client
// left the former master at, and the current master answers ROLE as a
// replica of that former master, the sentinels aborted the failover (its
// leader died or was cut off before announcing it) and turned the
// candidate back: the former master they name is the master, and waiting
// out formerMasterGrace would leave every write refused with READONLY
// for that long. turnedBack(former) asks the current master that (on the
// network); it is asked only in that case, and a "no" again after
// turnedBackRecheck: several sentinels of one discovery round name the
// same former master, and a refresh's rounds go on for up to
// DiscoveryTimeout, during which the candidate may be turned back. The
// check is not safe for concurrent use: each worker makes its own.
func (st *topoState) staleCheck(current string, now time.Time, turnedBack func(former string) bool) func(masterReport) error {
	known := st.knownEpoch
	former := maps.Clone(st.formerMasters)
	confirmedAt := st.masterEpoch
	type answer struct {
		yes bool
		at  time.Time
	}
	asked := map[string]answer{}
	turnedBackTo := func(addr string) bool {
		a, ok := asked[addr]
		if !ok || !a.yes && time.Since(a.at) >= turnedBackRecheck {
			a = answer{yes: turnedBack(addr), at: time.Now()}
			asked[addr] = a
		}
		return a.yes
	}
	return func(rep masterReport) error {
		if rep.epoch < 0 {
			return nil
		}
		if rep.epoch < known {
			return skipped(SkipStale, fmt.Errorf("stale: names %s with config epoch %d, but epoch %d is known (mid-failover)", rep.addr, rep.epoch, known))
		}
		if left, ok := former[rep.addr]; ok && current != rep.addr && rep.epoch <= left.epoch && now.Sub(left.left) < formerMasterGrace {
			if confirmedAt > left.epoch || !turnedBackTo(rep.addr) {
				return skipped(SkipStale, fmt.Errorf("stale: names the former master %s at config epoch %d (mid-failover)", rep.addr, rep.epoch))
			}
		}
		return nil
	}
}

// turnedBackRecheck is how long a stale check trusts a current master's
// answer that it is not a replica of the former master a sentinel names:
// a discovery round asks its sentinels within it, the next round (50 to
// 400 ms later) asks again.
const turnedBackRecheck = 40 * time.Millisecond

// turnedBack reports whether master answers ROLE as a replica of former
// (as the sentinels name it): see staleCheck. Not knowing is false.
func (t *topology) turnedBack(master, former string) bool {
	if master == "" {
		return false
	}
	ctx, cancel := context.WithTimeout(t.ctx, t.opts.ProbeTimeout)
	defer cancel()
	role, err := t.nodes.get(master).role(ctx)
	if err != nil || role.Role == "master" || role.MasterAddr == "" {
		return false
	}
	addr, err := t.opts.splitReplyAddr(master, "master", role.MasterAddr)
	if err != nil {
		return false
	}
	return addr == former
}

// staleCheck is topoState.staleCheck for the current master.
func (t *topology) staleCheck() func(masterReport) error {
	cur := t.snap.Load().masterAddr()
	return t.state.staleCheck(cur, time.Now(), func(former string) bool { return t.turnedBack(cur, former) })
}

// durableAfterRefresh is the durable-write replica set after a refresh
// that found res (see durableSet), given the current master and set. When
// no sentinel listed the replicas this time, the replicas counted so far
// stay counted rather than fewer, and after a master change the old master
// too (Sentinel lists it as a replica it could promote once it is
// demoted), as promote does.
func durableAfterRefresh(scope DurableScope, curMaster string, curDurable []string, res refreshResult) []string {
	prev := slices.Clone(curDurable)
	if curMaster != "" && curMaster != res.rep.addr {
		prev = append(prev, curMaster)
	}
	return durableSet(scope, res.rep.addr, res.rep.connected, res.scan, prev)
}

// unconfirmable returns the replicas of durable that connected (the
// master's ROLE list) does not name, never nil.
func unconfirmable(durable, connected []string) []string {
	out := []string{}
	for _, addr := range durable {
		if !slices.Contains(connected, addr) {
			out = append(out, addr)
		}
	}
	return out
}

func changed(cur, next *snapshot) bool {
	if cur.master != next.master || cur.failoverHeld != next.failoverHeld || cur.candidate != next.candidate || cur.isolated != next.isolated {
		return true
	}
	if !slices.Equal(cur.promotable, next.promotable) {
		return true
	}
	return !slices.Equal(cur.replicas, next.replicas) || !slices.Equal(cur.durable, next.durable) ||
		!slices.Equal(cur.unconfirmable, next.unconfirmable) || (cur.unconfirmable == nil) != (next.unconfirmable == nil)
}

// install swaps in next (built from the current snapshot) and retires the
// clients of nodes it no longer uses.
func (t *topology) install(next *snapshot) {
	cur := t.snap.Load()
	next.gen = cur.gen + 1
	next.superseded = make(chan struct{})
	next.byAddr = make(map[string]*node, len(next.replicas))
	next.replicaAddrs = make([]string, len(next.replicas))
	for i, r := range next.replicas {
		next.byAddr[r.addr] = r
		next.replicaAddrs[i] = r.addr
	}
	masterChanged := cur.masterAddr() != next.masterAddr()
	replicasChanged := !slices.Equal(cur.replicaAddrs, next.replicaAddrs)
	// The selector learns the topology before readers can see it: a read
	// that wakes on the new snapshot asks the selector about its replicas
	// at once, and must not find it still ignorant of them.
	if masterChanged || replicasChanged {
		t.selector.UpdateTopology(Topology{Master: next.masterAddr(), Replicas: slices.Clone(next.replicaAddrs)})
	}
	// The events are stamped with the moment the snapshot changed: what
	// follows it (a subscription moving, a read switching) happens after
	// that moment, never before the time the Observer is told.
	installedAt := time.Now()
	t.snap.Store(next)
	close(cur.superseded)

	keep := map[string]bool{next.masterAddr(): true}
	for _, r := range next.replicas {
		keep[r.addr] = true
	}
	if f := t.state.failoverHold; f != nil {
		keep[f.candidate] = true
	}
	t.nodes.keepOnly(keep)
	t.installed(cur, next, keep)

	if masterChanged {
		if old := cur.masterAddr(); old != "" {
			t.stats.masterChanges.Add(1)
			t.emit(Event{Kind: EventMasterChanged, Time: installedAt, Master: next.masterAddr(), OldMaster: old, Sentinel: next.sentinel})
			t.log.Info("master changed", "master", next.masterAddr(), "old", old, "sentinel", next.sentinel)
		} else {
			t.log.Info("master found", "master", next.masterAddr(), "sentinel", next.sentinel)
		}
	}
	if replicasChanged {
		t.emit(Event{Kind: EventReplicasChanged, Time: installedAt, Master: next.masterAddr(), Replicas: next.replicaAddrs})
		t.log.Info("replicas changed", "replicas", next.replicaAddrs)
	}
	if !slices.Equal(cur.durable, next.durable) {
		t.log.Debug("durable writes now need", "replicas", next.durable)
	}
	if cur.failoverHeld && !next.failoverHeld {
		t.emit(Event{Kind: EventFailoverHoldEnded, Master: next.masterAddr(), Candidate: cur.candidate, Err: t.state.holdEndErr})
	}
	t.state.holdEndErr = nil
}

// detectSplitBrain holds writes when a node Sentinel lists as a replica
// answers ROLE master while the master does too: a promotion the sentinels
// have not announced yet. The old master is about to be demoted, and what
// it acknowledges now would be discarded. A master the client left that
// has not been seen as a replica since is the expected other case (it
// answers ROLE master until Sentinel demotes it) and is ignored; once it
// has been a replica, its promotion holds writes like any other's.
func (t *topology) detectSplitBrain(master string, claims []string) {
	if t.state.failoverHold != nil {
		return
	}
	now := time.Now()
	for _, addr := range claims {
		if addr == master || t.state.expectedMaster(addr, now) {
			continue
		}
		if until, ok := t.state.unconfirmed[addr]; ok && time.Now().Before(until) {
			continue
		}
		t.log.Warn("split brain: a replica answers ROLE master", "replica", addr, "master", master)
		t.startFailoverHold(addr, "")
		return
	}
}

// handleEvent reacts to a sentinel event. It reports whether a refresh
// should follow shortly.
func (t *topology) handleEvent(ev sentinelEvent) bool {
	cur := t.snap.Load()
	st := &t.state
	switch ev.kind {
	case "+selected-slave", "+failover-state-send-slaveof-noone", "+promoted-slave":
		// The leader of a failover has picked the replica it promotes: from
		// now on, writes acknowledged by the old master may be discarded.
		if cur.master != nil && ev.instance != cur.masterAddr() && (st.failoverHold == nil || st.failoverHold.candidate != ev.instance) {
			t.startFailoverHold(ev.instance, ev.sentinel)
		}
		return false
	case "+switch-master":
		if ev.instance != cur.masterAddr() {
			t.startSwitchCheck(ev.instance, ev.sentinel)
		}
		return true
	case "-failover-abort-not-elected", "-failover-abort-no-good-slave", "-failover-abort-slave-timeout",
		"+failover-end-for-timeout":
		if st.failoverHold != nil {
			st.failoverHold.aborted = true
		}
		return true
	case "+sdown", "-sdown", "+odown", "-odown", "+slave", "+convert-to-slave", "+role-change",
		"-role-change", "+slave-reconf-done", "+reboot", "+failover-end", "+sentinel":
		return true
	}
	return false
}

// startFailoverHold holds writes: the old master is about to lose them.
func (t *topology) startFailoverHold(candidate, sentinel string) {
	t.state.failoverHold = &failoverState{candidate: candidate, sentinel: sentinel, since: time.Now()}
	next := t.snap.Load().with()
	next.failoverHeld, next.candidate = true, candidate
	t.install(next)
	t.emit(Event{Kind: EventFailoverStarted, Candidate: candidate, Sentinel: sentinel, Master: next.masterAddr()})
	t.log.Info("failover started; holding writes", "candidate", candidate, "sentinel", sentinel)
}

// expireFailoverHold ends a hold that outlived FailoverHold (or whose failover
// was aborted): writes go to the master the client has.
func (t *topology) expireFailoverHold(reason error) {
	f := t.state.failoverHold
	if f == nil || (!f.aborted && time.Since(f.since) < t.opts.FailoverHold) {
		return
	}
	t.state.failoverHold = nil
	if f.sentinel == "" {
		// No sentinel ever named the candidate: not a failover (or one the
		// sentinels did not confirm). Do not hold writes for it again soon.
		t.state.unconfirmed[f.candidate] = time.Now().Add(splitBrainQuiet)
	}
	held := time.Since(f.since).Round(time.Millisecond)
	if f.aborted {
		reason = fmt.Errorf("the sentinels aborted the failover: %w", reason)
	}
	t.state.holdEndErr = fmt.Errorf("%w (candidate %s, held %v): %w", ErrFailoverNotConfirmed, f.candidate, held, reason)
	next := t.snap.Load().with()
	next.failoverHeld, next.candidate = false, ""
	t.install(next)
	t.log.Warn("failover hold ended without a new master", "candidate", f.candidate, "held", held, "reason", reason)
}

// startPromotionCheck polls the candidate of the failover writes are held
// for; once its ROLE says master, routing switches to it. Sentinels
// announce +switch-master about a second later (the leader later still).
func (t *topology) startPromotionCheck() {
	st := &t.state
	f := st.failoverHold
	if f == nil || st.checking {
		return
	}
	if f.aborted || time.Since(f.since) >= t.opts.FailoverHold {
		st.wantRefresh = true
		t.expireFailoverHold(errors.New("the promoted replica did not become master in time"))
		return
	}
	if f.sentinel == "" {
		// Split brain seen by the client alone: a replica's ROLE is not
		// enough to switch to it. A sentinel must name it (a refresh or
		// +switch-master), or the hold expires.
		return
	}
	st.checking = true
	n := t.nodes.get(f.candidate)
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		ctx, cancel := context.WithTimeout(t.ctx, 250*time.Millisecond)
		var role redisinfo.Role
		var err error
		if perr := safe.Call(func() { role, err = n.role(ctx) }); perr != nil {
			err = t.recovered("a promotion check", perr)
		}
		cancel()
		post(t, t.promotionDone, promotionResult{candidate: n.addr, isMaster: err == nil && role.Role == "master"})
	}()
}

// startSwitchCheck follows a +switch-master from sentinel: a worker checks
// that sentinel's config epoch and the new master's ROLE.
func (t *topology) startSwitchCheck(addr, sentinel string) {
	stale := t.staleCheck()
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		res := switchResult{addr: addr, sentinel: sentinel}
		perr := safe.Call(func() {
			rep, err := t.askSentinel(t.ctx, sentinel)
			switch {
			case err != nil:
				res.err = err
			case rep.addr != addr:
				res.err = fmt.Errorf("sentinel %s now names %s", sentinel, rep.addr)
			default:
				res.epoch = rep.epoch
				if res.err = stale(rep); res.err == nil {
					_, res.err = t.verifyMaster(t.ctx, addr)
				}
			}
		})
		if perr != nil {
			res.err = t.recovered("a +switch-master check", perr)
		}
		post(t, t.switchDone, res)
	}()
}

func (t *topology) applySwitch(res switchResult) {
	if res.err != nil {
		t.log.Debug("+switch-master not followed", "addr", res.addr, "sentinel", res.sentinel, "err", res.err)
		t.state.wantRefresh = true
		return
	}
	if t.snap.Load().masterAddr() == res.addr {
		if res.epoch > t.state.knownEpoch {
			t.state.knownEpoch = res.epoch
		}
		t.state.masterNamed(res.epoch)
		return
	}
	t.promote(res.addr, res.sentinel, res.epoch)
}

// evict asks the topology goroutine to give a replica a fresh client (see
// replica.Env.Evict). It never blocks and never drops one: the address
// joins a set (asking twice before the goroutine gets to it evicts once,
// which is all the second ask needs) and a signal of capacity one wakes
// the goroutine, which drains the set.
func (t *topology) evict(addr string) {
	t.evictMu.Lock()
	if t.evicts == nil {
		t.evicts = map[string]struct{}{}
	}
	t.evicts[addr] = struct{}{}
	t.evictMu.Unlock()
	select {
	case t.evictSig <- struct{}{}:
	default: // a signal is pending: the drain will see addr
	}
}

// takeEvicts empties the set of replicas to evict, in address order.
func (t *topology) takeEvicts() []string {
	t.evictMu.Lock()
	defer t.evictMu.Unlock()
	out := slices.Sorted(maps.Keys(t.evicts))
	clear(t.evicts)
	return out
}

// applyEvict swaps a replica's client for a fresh one: the old client
// takes no new reads and closes its pool once its calls return, so idle
// connections close now and busy ones when released.
func (t *topology) applyEvict(addr string) {
	cur := t.snap.Load()
	i := slices.IndexFunc(cur.replicas, func(n *node) bool { return n.addr == addr })
	if i < 0 {
		return
	}
	t.nodes.replace(addr)
	next := cur.with()
	next.replicas[i] = t.nodes.get(addr)
	t.install(next)
	t.log.Debug("replica connections evicted", "replica", addr)
}

// promote installs addr as the master and ends any hold.
func (t *topology) promote(addr, sentinel string, epoch int64) {
	st := &t.state
	if epoch > st.knownEpoch {
		st.knownEpoch = epoch
	}
	st.failoverHold = nil
	cur := t.snap.Load()
	next := cur.with()
	next.master = t.nodes.get(addr)
	next.sentinel = sentinel
	next.failoverHeld, next.candidate = false, ""
	next.isolated, st.poll = "", pollState{}
	next.replicas = slices.DeleteFunc(next.replicas, func(n *node) bool { return n.addr == addr })
	// Until the next refresh lists the new master's replicas, durable
	// writes need the old master's other replicas, which confirm nothing
	// until Sentinel has attached them to the new master, and the old
	// master: Sentinel lists it as a replica of the new one from the
	// switch on, promotable until it is flagged down, while it lacks the
	// new master's writes until it has been converted and synchronised.
	next.durable = durableReplicas(addr, nil, cur.durable, []string{cur.masterAddr()})
	next.unconfirmable = nil // the new master's replicas are not known yet
	next.promotable = durableReplicas(addr, cur.promotable, []string{cur.masterAddr()})
	if cur.masterAddr() != addr {
		st.masterMoved(cur.masterAddr(), epoch, time.Now())
	}
	t.install(next)
}
