package cluster

// The split-brain hold. Every SplitBrainPollInterval the topology
// goroutine starts a worker that asks, for every master of the map with
// replicas, the master TIME and ROLE (its replication offset) and each of
// its replicas ROLE (the offset each has received), all at once, each
// bounded, and posts the answers back. While a shard is held, or was
// vouched for in the current episode, the master is also asked CLUSTER
// NODES (its own view of the cluster bus): only then does the decision
// need it, and on a large cluster it is the one costly reply. The topology goroutine decides from them
// (splitBrainDecision) whether the shard's writes must be held because
// its master is cut off from its replicas and from the majority of the
// masters while it still answers the client: the majority will promote a
// replica, and every write the old master acknowledges meanwhile is lost
// when it rejoins as a replica. See "Split brain" in doc.go.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/isolation"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/safe"
)

// splitBrainSlack is how much longer than the round trips the client
// measured to the two ends a path between two nodes may take, before
// silence on it is taken as a sign: a replica that stays behind the
// master without receiving anything, or a bus PING of the master's that
// stays unanswered. A path through the client is one path between the
// nodes, so their own round trip is bounded by the client's to each.
const splitBrainSlack = 50 * time.Millisecond

// splitBrainSuspectMax bounds a hold on suspicion (see splitBrainDecision)
// that the master's bus view neither confirms nor clears: past it, writes
// go on. The cluster pings each node at least every half node timeout; a
// cluster with Redis's default 15 s timeout may take that long to show
// the master its peers are gone.
const splitBrainSuspectMax = 2 * time.Second

// splitBrainRoundMin is the least a round waits for a node's answers: a
// loaded machine delays replies by tens of milliseconds.
const splitBrainRoundMin = 300 * time.Millisecond

// busPeer is one line of the master's CLUSTER NODES, as the split-brain
// poll reads it: the master's own view of a node on the cluster bus.
type busPeer struct {
	id, addr string
	self     bool // the master's own line
	master   bool // a master serving slots
	// flagged: the master flags it fail or fail? (PFAIL); disconnected:
	// the master's bus link to it is down.
	flagged, disconnected bool
	// pingSent is when the master sent it a PING still unanswered (0:
	// none pending), pongRecv when the master last had a PONG from it;
	// both milliseconds of the master's clock.
	pingSent, pongRecv int64
	// bound is how long a PING to it may go unanswered before it is a
	// sign (the client's round trips to both ends and splitBrainSlack);
	// set by the caller of splitBrainDecision.
	bound time.Duration
}

// parseBusView reads the lines of a CLUSTER NODES reply the split-brain
// poll needs: every node with an address, its flags, its PING and PONG
// times and whether it serves slots as a master.
func parseBusView(text string) []busPeer {
	var out []busPeer
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		p := busPeer{id: f[0]}
		flags := f[2]
		if strings.Contains(flags, "handshake") || strings.Contains(flags, "noaddr") {
			continue
		}
		isMaster := false
		for fl := range strings.SplitSeq(flags, ",") {
			switch fl {
			case "master":
				isMaster = true
			case "fail", "fail?":
				p.flagged = true
			case "myself":
				p.self = true
			}
		}
		addr, _, _ := strings.Cut(f[1], "@")
		p.addr, _, _ = strings.Cut(addr, ",")
		var err1, err2 error
		p.pingSent, err1 = strconv.ParseInt(f[4], 10, 64)
		p.pongRecv, err2 = strconv.ParseInt(f[5], 10, 64)
		if err1 != nil || err2 != nil || p.pingSent < 0 || p.pongRecv < 0 {
			continue
		}
		p.disconnected = f[7] != "connected"
		p.master = isMaster && len(f) > 8 && servesSlots(f[8:])
		out = append(out, p)
	}
	return out
}

// servesSlots reports whether CLUSTER NODES's slot fields name a slot
// served (not only importing or migrating markers).
func servesSlots(fields []string) bool {
	for _, s := range fields {
		if !strings.HasPrefix(s, "[") {
			return true
		}
	}
	return false
}

// cannotReach reports whether the master's view says it cannot reach p:
// flagged, its link down, or a PING pending past p.bound at serverNow.
func (p busPeer) cannotReach(serverNow int64) bool {
	return p.flagged || p.disconnected || p.pingSent > 0 && serverNow-p.pingSent > p.bound.Milliseconds()
}

// splitBrainInput is what a poll round gives splitBrainDecision about one
// shard.
type splitBrainInput struct {
	now time.Time
	// answered: the master answered TIME, ROLE (as a master) and, when
	// asked, CLUSTER NODES this round; serverNow is its clock then (ms).
	answered  bool
	serverNow int64
	// bus: the master's CLUSTER NODES was read this round, and peers is
	// it. Otherwise masters is the number of masters serving slots in
	// the client's map, the master among them.
	bus     bool
	peers   []busPeer
	masters int
	// stall is what the replicas' ROLE replies say of the stream
	// (isolation.Stream).
	stall isolation.Stall
}

// splitBrainHold is a hold of a shard's writes for a master cut off (or
// suspected cut off: the master's bus view does not show it cut off from
// the majority, yet) from its replicas and the majority; sinceServer is
// the master's clock when it began (ms), which the PONG times of its bus
// view are compared with.
type splitBrainHold struct {
	isolation.Hold
	sinceServer int64
}

// splitBrainDecision decides, from one poll round about a shard, whether
// its writes must be held because its master is about to be replaced
// while it still answers the client, and returns the hold (nil: none).
// cur is the current hold; cleared says the master's bus view already
// vouched for it during this episode (no new hold on suspicion until its
// replicas are seen receiving its stream again, which ends the episode),
// and the second result is its new value.
//
// A write the master acknowledges is lost when the cluster promotes a
// replica that did not receive it. That needs two things: a majority of
// the masters serving slots must lose the master (for the node timeout),
// and the replica must not receive its stream. The poll sees both:
//
//   - the replicas do not receive the stream: every replica that was
//     receiving it stopped advancing between two rounds while the master
//     was ahead of it, or lost its link (ROLE on each, isolation.Stream);
//   - the master cannot reach the other masters: its own CLUSTER NODES
//     has a PING to them pending longer than a round trip can take, its
//     link to them down, or flags them PFAIL or FAIL.
//
// Writes are held on the first sign that the replicas do not receive the
// stream: the master's bus PINGs each node only every half node timeout
// or so, and waiting for them would leave it acknowledging, and losing,
// writes for that long. Such a hold is a suspicion: it ends as soon as
// enough other masters have answered a PING of the master's since it
// began that no majority can be without it (they reach it: no failover,
// no loss, only a replica problem, which durable writes are for), when
// the replicas receive again, or after splitBrainSuspectMax. Once the
// master cannot reach a majority of the masters, the hold stands until
// the cluster replaces the master, the master reaches them again or its
// replicas receive again. A master that does not answer a round is left
// to the client's failing-master hold; a cluster of fewer than three
// masters cannot fail a master over without it, and is never held.
//
// The bus view is needed only once a shard is held or was vouched for:
// on the first suspicion the hold begins whatever the view says (it only
// makes the hold confirmed rather than suspected), and without a stall no
// hold begins. A round without it counts the masters from the map.
func splitBrainDecision(cur *splitBrainHold, cleared bool, in splitBrainInput) (*splitBrainHold, bool) {
	if !in.answered {
		if cur != nil && cur.Suspect && in.now.Sub(cur.Since) >= splitBrainSuspectMax {
			return nil, true
		}
		return cur, cleared
	}
	size, vouched, self := 0, 0, false
	peers := in.peers
	if !in.bus {
		size, self, peers = in.masters, true, nil
	}
	var signs []string
	for _, p := range peers {
		if !p.master {
			continue
		}
		size++
		if p.self {
			self = true
			continue
		}
		if p.cannotReach(in.serverNow) {
			signs = append(signs, p.addr)
		} else if cur != nil && p.pongRecv > cur.sinceServer {
			vouched++ // a PONG since the hold began
		}
	}
	// A failover needs the failure reports of a majority of the masters
	// serving slots; the master never reports itself.
	needed := size/2 + 1
	if !self || size <= needed { // the others are fewer than needed
		return nil, cleared
	}
	var curHold *isolation.Hold
	if cur != nil {
		curHold = &cur.Hold
	}
	h, cleared := isolation.Decide(curHold, cleared, in.now, isolation.Signs{
		Suspicion: in.stall.All(),
		// Once held (or vouched for in this episode), a master cut off
		// from the majority stays held while its replicas are not seen
		// receiving: their links may have dropped, and are no longer
		// watched.
		Confirmed: len(signs) >= needed && !in.stall.Receiving() && (in.stall.All() || cur != nil || cleared),
		// Too few masters are left that could fail it over.
		Vouched:   vouched >= size-needed,
		Expired:   cur != nil && in.now.Sub(cur.Since) >= splitBrainSuspectMax,
		Receiving: in.stall.Receiving(),
		Reason:    describeSplitBrain(signs, in.stall),
	})
	if h == nil {
		return nil, cleared
	}
	next := &splitBrainHold{Hold: *h, sinceServer: in.serverNow}
	if cur != nil && h.Since.Equal(cur.Since) {
		next.sinceServer = cur.sinceServer
	}
	return next, cleared
}

// describeSplitBrain says what the poll saw, for the hold's reason.
func describeSplitBrain(signs []string, stall isolation.Stall) string {
	var parts []string
	if stall.All() {
		parts = append(parts, fmt.Sprintf("none of its %d replicas receives its writes", stall.Watched))
	}
	switch len(signs) {
	case 0:
	case 1:
		parts = append(parts, "it cannot reach master "+signs[0]+" on the cluster bus")
	default:
		parts = append(parts, "it cannot reach masters "+strings.Join(signs, ", ")+" on the cluster bus")
	}
	return strings.Join(parts, "; ")
}

// splitBrainRole is a ROLE reply of the poll, or its failure, when it
// came and how long it took.
type splitBrainRole struct {
	role redisinfo.Role
	err  error
	at   time.Time
	rtt  time.Duration
}

// splitBrainSample is what one round found about one shard. bus: the
// round asked the master CLUSTER NODES (peers).
type splitBrainSample struct {
	master    *node
	answered  bool
	serverNow int64
	role      redisinfo.Role
	bus       bool
	peers     []busPeer
	rtt       time.Duration
	replicas  map[string]splitBrainRole
}

// splitBrainShard is what the topology goroutine keeps of one master
// between rounds.
type splitBrainShard struct {
	watches map[string]isolation.Watch
	hold    *splitBrainHold
	cleared bool
}

// splitBrainState is the topology goroutine's: whether a round runs, each
// master's watch and hold, and the round trips measured.
type splitBrainState struct {
	polling bool
	shards  map[*node]*splitBrainShard
	rtt     isolation.RTT
}

// wantsBus reports whether the next round must read master's bus view
// (CLUSTER NODES): while its writes are held, or it was vouched for in
// the current episode (splitBrainDecision needs the view then, and only
// then).
func (st *splitBrainState) wantsBus(master *node) bool {
	ss := st.shards[master]
	return ss != nil && (ss.hold != nil || ss.cleared)
}

// startSplitBrainPoll starts a round unless one runs or the map has none
// to watch.
func (t *topology) startSplitBrainPoll() {
	st := &t.splitBrain
	snap := t.snap.Load()
	if st.polling || !snap.ready {
		return
	}
	var shards []*shard
	var bus []bool
	for _, sh := range snap.masters {
		if len(sh.replicas) > 0 {
			shards = append(shards, sh)
			bus = append(bus, st.wantsBus(sh.master))
		}
	}
	if len(shards) == 0 {
		if len(st.shards) > 0 {
			t.applySplitBrain([]splitBrainSample{}) // ends the holds left
		}
		return
	}
	st.polling = true
	// A node that does not answer within a few rounds is left out of
	// this one, not waited for: the others' rounds go on.
	timeout := min(t.opts.ReadTimeout, max(3*t.opts.SplitBrainPollInterval, splitBrainRoundMin))
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		samples := make([]splitBrainSample, len(shards))
		if err := safe.Call(func() { t.splitBrainRound(shards, bus, samples, timeout) }); err != nil {
			t.log.Error("cluster: split-brain poll panicked", "err", err)
			samples = nil // nothing of this round is trusted
		}
		select {
		case t.splitBrainCh <- samples:
		case <-t.stop:
		}
	}()
}

// splitBrainRound samples every shard's master and replicas at once,
// asking shards[i]'s master CLUSTER NODES when bus[i].
func (t *topology) splitBrainRound(shards []*shard, bus []bool, samples []splitBrainSample, timeout time.Duration) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, sh := range shards {
		samples[i] = splitBrainSample{master: sh.master, bus: bus[i], replicas: make(map[string]splitBrainRole, len(sh.replicas))}
		s := &samples[i]
		safe.Go(&wg, func(error) {}, func() {
			ctx, cancel := context.WithTimeout(t.ctx, timeout)
			defer cancel()
			var tm *redis.TimeCmd
			var role *redis.Cmd
			var nodes *redis.StringCmd
			began := time.Now()
			_, _ = sh.master.ctl.Pipelined(ctx, func(p redis.Pipeliner) error {
				tm, role = p.Time(ctx), p.Do(ctx, "ROLE")
				if s.bus {
					nodes = p.ClusterNodes(ctx)
				}
				return nil
			})
			s.rtt = time.Since(began)
			r, rerr := redisinfo.ParseRole(role)
			if tm.Err() != nil || rerr != nil || s.bus && nodes.Err() != nil {
				return
			}
			s.answered, s.serverNow, s.role = true, tm.Val().UnixMilli(), r
			if s.bus {
				s.peers = parseBusView(nodes.Val())
			}
		})
		for _, rn := range sh.replicas {
			safe.Go(&wg, func(error) {}, func() {
				ctx, cancel := context.WithTimeout(t.ctx, timeout)
				defer cancel()
				began := time.Now()
				r, err := redisinfo.ParseRole(rn.ctl.Do(ctx, "ROLE"))
				rs := splitBrainRole{role: r, err: err, at: time.Now()}
				rs.rtt = rs.at.Sub(began)
				mu.Lock()
				defer mu.Unlock()
				s.replicas[rn.addr] = rs
			})
		}
	}
	wg.Wait()
}

// applySplitBrain acts on a round's samples: each shard's decision, and
// one new snapshot if a hold began or ended.
func (t *topology) applySplitBrain(samples []splitBrainSample) {
	st := &t.splitBrain
	st.polling = false
	cur := t.snap.Load()
	isMaster := make(map[*node]bool, len(cur.masters))
	for _, sh := range cur.masters {
		isMaster[sh.master] = true
	}
	// Forget the masters the map no longer has: their holds end (the
	// cluster replaced them: held writes go to the new master).
	ended := t.forgetSplitBrain(func(n *node) bool { return isMaster[n] }, "the cluster no longer has it master any slot")
	began := map[*node]*splitBrainHold{}
	now := time.Now()
	for _, s := range samples {
		if s.answered {
			st.rtt.Sample(s.master.addr, s.rtt)
		}
		for addr, rs := range s.replicas {
			if rs.err == nil {
				st.rtt.Sample(addr, rs.rtt)
			}
		}
		if !isMaster[s.master] {
			continue
		}
		h, end := t.decideSplitBrain(s, len(cur.masters), now)
		if h != nil {
			began[s.master] = h
		}
		if end {
			ended = append(ended, s.master)
		}
	}
	if samples != nil {
		// A master the round did not sample has no replica in the map
		// (all failed, or gone): none to promote in its place, nothing
		// to watch. Its hold ends, and its watch is forgotten.
		sampled := make(map[*node]bool, len(samples))
		for _, s := range samples {
			sampled[s.master] = true
		}
		ended = append(ended, t.forgetSplitBrain(func(n *node) bool { return sampled[n] }, "the map has no healthy replica left in its shard")...)
	}
	if len(began) == 0 && len(ended) == 0 {
		return
	}
	t.publish(cur.with(func(s *snapshot) {
		for _, n := range ended {
			delete(s.isolated, n)
		}
		for n, h := range began {
			s.isolated[n] = h.Reason
		}
	}))
	for n, h := range began {
		t.splitBrainHolds.Add(1)
		t.log.Warn("cluster: master cut off from its replicas; holding its writes", "addr", n.addr, "reason", h.Reason, "suspect", h.Suspect)
		t.emit(Event{Kind: EventMasterIsolated, Master: n.addr, Slot: -1, Reason: h.Reason})
	}
}

// forgetSplitBrain forgets the masters keep rejects, ending their holds
// (why), and returns those whose hold ended.
func (t *topology) forgetSplitBrain(keep func(*node) bool, why string) []*node {
	var ended []*node
	for n, ss := range t.splitBrain.shards {
		if keep(n) {
			continue
		}
		if ss.hold != nil {
			ended = append(ended, n)
			t.endSplitBrainHold(n, ss.hold, why)
		}
		delete(t.splitBrain.shards, n)
	}
	return ended
}

// decideSplitBrain applies splitBrainDecision to one shard's sample, in a
// map of masters masters: the hold that began (nil: none began), or
// whether the shard's hold ended.
func (t *topology) decideSplitBrain(s splitBrainSample, masters int, now time.Time) (*splitBrainHold, bool) {
	st := &t.splitBrain
	ss := st.shards[s.master]
	if ss == nil {
		ss = &splitBrainShard{watches: map[string]isolation.Watch{}}
		st.shards[s.master] = ss
	}
	answered := s.answered && s.role.Role == "master"
	var stall isolation.Stall
	if answered {
		stall = t.watchReplicas(ss, s)
	}
	peers := make([]busPeer, len(s.peers))
	for i, p := range s.peers {
		p.bound = st.rtt.Get(s.master.addr) + st.rtt.Get(p.addr) + splitBrainSlack
		peers[i] = p
	}
	hold, cleared := splitBrainDecision(ss.hold, ss.cleared, splitBrainInput{now: now, answered: answered,
		serverNow: s.serverNow, bus: s.bus, peers: peers, masters: masters, stall: stall})
	prev := ss.hold
	ss.hold, ss.cleared = hold, cleared
	switch {
	case hold != nil && prev == nil:
		return hold, false
	case hold == nil && prev != nil:
		t.endSplitBrainHold(s.master, prev, "its replicas receive its writes again, or the other masters still reach it")
		return nil, true
	}
	return nil, false
}

// watchReplicas takes a sample's replica ROLE replies into ss's watches
// and returns what they say of the stream. A replica that did not answer
// is forgotten: one the client cannot see is not watched, and one that
// comes back is watched again once linked.
func (t *topology) watchReplicas(ss *splitBrainShard, s splitBrainSample) isolation.Stall {
	var stall isolation.Stall
	watches := make(map[string]isolation.Watch, len(s.replicas))
	for addr, rs := range s.replicas {
		if rs.err != nil {
			continue
		}
		bound := t.splitBrain.rtt.Get(s.master.addr) + t.splitBrain.rtt.Get(addr) + splitBrainSlack
		w, watched, stalled := isolation.Stream(ss.watches[addr], rs.at, s.role.Offset, rs.role, s.master.addr, bound)
		watches[addr] = w
		stall.Add(watched, stalled)
	}
	ss.watches = watches
	return stall
}

// endSplitBrainHold reports the end of a hold of n's writes.
func (t *topology) endSplitBrainHold(n *node, h *splitBrainHold, why string) {
	held := time.Since(h.Since)
	t.log.Info("cluster: master no longer cut off; its writes resume", "addr", n.addr, "held", held, "why", why)
	t.emit(Event{Kind: EventIsolationEnded, Master: n.addr, Slot: -1, Reason: why, Duration: held})
}
