package sentinel

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/isolation"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/safe"
)

// The sentinel poll. Every SentinelPollInterval the topology goroutine
// starts a worker that asks every known sentinel SENTINEL MASTER and the
// master and the replicas Sentinel could promote ROLE (in parallel, each
// bounded), and posts the answers back. It catches what events cannot be
// relied on for:
//
//   - A failover whose announcement the client missed (the leader's
//     +selected-slave is published once, on the leader only, and a
//     watcher that was reconnecting misses it): the leader's flags say
//     failover_in_progress, and its SENTINEL REPLICAS flags the replica it
//     promotes. Writes are then held as on +selected-slave.
//   - A master cut off from the sentinels and its replicas while the
//     client still reaches it: the sentinels will replace it, and every
//     write it acknowledges meanwhile is lost. See isolationDecision.

// masterView is one sentinel's SENTINEL MASTER answer, as the poll uses it.
type masterView struct {
	sentinel string
	err      error
	addr     string // the master it names
	epoch    int64
	flags    string
	// lastPingSent is how long a PING of the sentinel's to the master has
	// gone unanswered (0: none pending); lastOK is how long ago the master
	// last answered one.
	lastPingSent, lastOK time.Duration
	quorum               int
	// rtt is the client's round trip to the sentinel: the smallest recent
	// one, or this query's when none was measured before.
	rtt time.Duration
}

// pollPingSlack is how much longer than its expected round trip a
// sentinel's PING to the master may go unanswered before the poll takes
// it as a sign that the sentinel cannot reach the master. Sentinel pings
// every second and the reply comes within a round trip.
//
// The round trip between a sentinel and the master is not visible to the
// client, but it is bounded by the two the client measures: to the
// sentinel (the poll's own query) plus to the master, as a path through
// the client is one path between them. Likewise the master's round trip
// to a replica is bounded by the client's to each.
const pollPingSlack = 50 * time.Millisecond

// replicationProbeWait is how long, beyond the round trips the client
// measured to the master and to the slowest replica Sentinel could
// promote, the replication probe's WAIT gives the replicas: the master
// asks them for an acknowledgement at once (REPLCONF GETACK), so a replica
// it still reaches answers within its round trip.
const replicationProbeWait = 100 * time.Millisecond

// replicationProbeChannel is where the probe publishes: a PUBLISH is a
// write that is replicated (so WAIT has an offset to wait for) and that
// touches no key.
const replicationProbeChannel = "__rediskit__:replication-probe"

// suspectHoldMax bounds a hold on suspicion (see isolationDecision) that
// no sentinel can confirm or clear, because none answers the client: past
// it, writes go on.
const suspectHoldMax = 2 * time.Second

// cannotReach reports whether the sentinel names master and says it
// cannot reach it: flagged down or disconnected, or a PING pending for
// longer than a round trip between it and the master can take (bounded
// by the sentinel's round trip to the client plus the master's, masterRTT)
// and pollPingSlack.
func (v masterView) cannotReach(master string, masterRTT time.Duration) bool {
	if v.err != nil || v.addr != master {
		return false
	}
	return redisinfo.HasFlag(v.flags, "s_down") || redisinfo.HasFlag(v.flags, "o_down") ||
		redisinfo.HasFlag(v.flags, "disconnected") || v.lastPingSent > pollPingSlack+v.rtt+masterRTT
}

// replicationProbe is what PUBLISH + WAIT on the master said: how many of
// the replicas Sentinel could promote acknowledged the write.
type replicationProbe struct {
	ran    bool
	want   int
	acked  int
	noPerm bool // the data user may not PUBLISH or WAIT
	err    error
	// rtt is the probe's own PING round trip to the master.
	rtt time.Duration
}

// replicationStall is what the poll's ROLE replies say about the
// replication stream to the replicas Sentinel could promote (see
// isolation.Stream).
type replicationStall = isolation.Stall

// isolationInput is what a poll round gives isolationDecision.
type isolationInput struct {
	views     []masterView
	master    string
	masterRTT time.Duration // the client's, to the master
	probe     replicationProbe
	stall     replicationStall
	now       time.Time
}

// isolationHold is a hold of writes for a master cut off (or suspected
// cut off) from the sentinels and its replicas; suspect: the quorum of
// sentinels needed to replace the master has not (yet) said it cannot
// reach it.
type isolationHold = isolation.Hold

// isolationDecision decides, from one poll round, whether writes must be
// held because the master is about to be replaced while it still answers
// the client, and returns the hold (nil: none). cur is the current hold;
// cleared says that the sentinels already vouched for the master during
// this episode (no new hold on suspicion until the replicas are seen
// receiving the stream again, which ends it), and the second result is the
// new value.
//
// A write the master acknowledges is lost when Sentinel promotes a
// replica that did not receive it. That needs two things: the sentinels
// must lose the master (a quorum of them, for down-after-milliseconds),
// and the replica must not receive the master's stream. The poll sees
// both, each way it can:
//
//   - a sentinel cannot reach the master: its PING pending too long (see
//     pollPingSlack), or the master flagged down or disconnected;
//   - the replicas do not receive the stream: every replica Sentinel could
//     promote stopped advancing between two polls while the master was
//     ahead of it, or lost its link (ROLE on each); or, when a sentinel
//     cannot reach the master, the master cannot get a write acknowledged
//     by all of them (the replication probe: PUBLISH, WAIT).
//
// Writes are held on the first sign that the replicas do not receive the
// stream together with any sentinel that cannot reach the master, or with
// the replicas' stall alone: the sentinels ping once a second, so
// waiting for them would leave the master acknowledging, and losing,
// writes for up to a second more. Such a hold is a suspicion: it ends as
// soon as the quorum of sentinels Sentinel needs to fail over has had a
// PING answered by the master since it began (they still reach it: no
// failover, no loss, only a replica problem, which durable writes are
// for), or when the signs go. Once that quorum says it cannot reach the
// master either, the hold stands until the sentinels replace the master
// or reach it again. A hold on suspicion that no sentinel answers the
// client to confirm or clear ends after suspectHoldMax.
//
// When the data user may not run the replication probe, a quorum of
// sentinels that cannot reach the master decides alone.
func isolationDecision(cur *isolationHold, cleared bool, in isolationInput) (*isolationHold, bool) {
	masterRTT := max(in.masterRTT, in.probe.rtt)
	var signs []string
	quorum, answered, vouched := 0, 0, 0
	for _, v := range in.views {
		if v.err != nil || v.addr != in.master {
			continue
		}
		answered++
		if v.quorum > 0 && (quorum == 0 || v.quorum < quorum) {
			quorum = v.quorum
		}
		if v.cannotReach(in.master, masterRTT) {
			signs = append(signs, v.sentinel)
		} else if cur != nil && in.now.Add(-v.lastOK).After(cur.Since) {
			vouched++ // a PING answered since the hold began
		}
	}
	if quorum == 0 {
		quorum = len(in.views)/2 + 1
	}
	probeFailed := in.probe.ran && in.probe.err == nil && !in.probe.noPerm && in.probe.acked < in.probe.want
	notReceiving := in.stall.All() || probeFailed
	// The episode the sentinels vouched for lasts until the replicas are
	// seen receiving again: a watched one that did not stall, or a probe
	// they all confirmed. Replicas whose links went down are not watched,
	// and do not end it.
	receiving := in.stall.Receiving() ||
		(in.probe.ran && in.probe.err == nil && !in.probe.noPerm && in.probe.acked >= in.probe.want)
	return isolation.Decide(cur, cleared, in.now, isolation.Signs{
		Suspicion: (len(signs) > 0 && probeFailed) || in.stall.All(),
		Confirmed: len(signs) >= quorum && (notReceiving || in.probe.noPerm),
		Vouched:   vouched >= quorum, // the sentinels still reach the master
		Expired:   cur != nil && answered == 0 && in.now.Sub(cur.Since) >= suspectHoldMax,
		Receiving: receiving,
		Reason:    describeIsolation(signs, in.probe, in.stall),
	})
}

// describeIsolation says what the poll saw, for the hold's reason.
func describeIsolation(signs []string, probe replicationProbe, stall replicationStall) string {
	var parts []string
	switch len(signs) {
	case 0:
	case 1:
		parts = append(parts, "sentinel "+signs[0]+" cannot reach the master")
	default:
		parts = append(parts, "sentinels "+strings.Join(signs, ", ")+" cannot reach the master")
	}
	if stall.All() {
		parts = append(parts, fmt.Sprintf("none of the %d replicas Sentinel could promote receives its writes", stall.Watched))
	} else if probe.ran && probe.err == nil && !probe.noPerm && probe.acked < probe.want {
		parts = append(parts, fmt.Sprintf("%d of the %d replicas Sentinel could promote confirm its writes", probe.acked, probe.want))
	}
	if probe.noPerm {
		parts = append(parts, "the replication probe is not allowed (PUBLISH, WAIT)")
	}
	return strings.Join(parts, "; ")
}

// roleSample is a ROLE reply of the poll, or its failure, and when it
// came.
type roleSample struct {
	role redisinfo.Role
	err  error
	at   time.Time
}

// pollResult is what one poll found, for the master it was about.
type pollResult struct {
	master    string
	masterRTT time.Duration // the estimate when the poll started
	views     []masterView
	// took is how long each sentinel's SENTINEL MASTER took, by address.
	took     map[string]time.Duration
	probe    replicationProbe
	role     roleSample            // the master's
	replicas map[string]roleSample // the promotable replicas'
	// promoted and leader name the replica a sentinel reports promoting in
	// a failover of master, and that sentinel ("" when none).
	promoted, leader string
}

// startPoll starts a poll round unless one is running.
func (t *topology) startPoll() {
	st := &t.state
	snap := t.snap.Load()
	if st.polling || snap.master == nil {
		return
	}
	st.polling = true
	master := snap.masterAddr()
	promotable := slices.Clone(snap.promotable)
	masterRTT, replicaRTT := st.rtt.Get(master), time.Duration(0)
	for _, addr := range promotable {
		replicaRTT = max(replicaRTT, st.rtt.Get(addr))
	}
	sentinelRTT := map[string]time.Duration{}
	for _, s := range t.sentinels.list() {
		sentinelRTT[s] = st.rtt.Get(s)
	}
	t.wg.Add(1)
	go func() {
		defer t.wg.Done()
		res := pollResult{master: master, masterRTT: masterRTT, took: map[string]time.Duration{},
			replicas: make(map[string]roleSample, len(promotable))}
		if err := safe.Call(func() { t.pollRound(&res, promotable, masterRTT, replicaRTT, sentinelRTT) }); err != nil {
			// Nothing of this round is trusted: it only keeps the next
			// rounds going.
			_ = t.recovered("a sentinel poll", err)
			res = pollResult{master: master}
		}
		post(t, t.pollDone, res)
	}()
}

// pollRound does the work of one poll round (see startPoll) into res.
func (t *topology) pollRound(res *pollResult, promotable []string, masterRTT, replicaRTT time.Duration, sentinelRTT map[string]time.Duration) {
	master := res.master
	var mu sync.Mutex
	var wg sync.WaitGroup
	wg.Go(func() { res.views = t.askMasters(t.ctx) })
	for _, addr := range append([]string{master}, promotable...) {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(t.ctx, t.opts.ProbeTimeout)
			defer cancel()
			var s roleSample
			if err := safe.Call(func() { s.role, s.err = t.nodes.get(addr).role(ctx) }); err != nil {
				s.err = t.recovered("ROLE on "+addr, err)
			}
			if s.role.MasterAddr != "" {
				// As the sentinels' addresses are: mapped.
				if m, err := t.opts.splitReplyAddr(addr, "master", s.role.MasterAddr); err == nil {
					s.role.MasterAddr = m
				}
			}
			s.at = time.Now()
			mu.Lock()
			defer mu.Unlock()
			if addr == master {
				res.role = s
			} else {
				res.replicas[addr] = s
			}
		})
	}
	wg.Wait()
	for i, v := range res.views {
		res.took[v.sentinel] = v.rtt
		if est := sentinelRTT[v.sentinel]; est > 0 && v.err == nil {
			res.views[i].rtt = min(v.rtt, est)
		}
	}
	for _, v := range res.views {
		if v.cannotReach(master, masterRTT) && len(promotable) > 0 {
			res.probe = t.probeReplication(t.ctx, master, len(promotable), masterRTT+replicaRTT)
			break
		}
	}
	for _, v := range res.views {
		if v.err == nil && v.addr == master && redisinfo.HasFlag(v.flags, "failover_in_progress") {
			if addr := t.promotedReplica(t.ctx, v.sentinel); addr != "" {
				res.promoted, res.leader = addr, v.sentinel
				break
			}
		}
	}
}

// askMasters asks every known sentinel SENTINEL MASTER, in parallel.
func (t *topology) askMasters(ctx context.Context) []masterView {
	sentinels := t.sentinels.list()
	views := make([]masterView, len(sentinels))
	var wg sync.WaitGroup
	for i, s := range sentinels {
		wg.Go(func() {
			if err := safe.Call(func() { views[i] = t.askMaster(ctx, s) }); err != nil {
				views[i] = masterView{sentinel: s, epoch: -1, err: t.recovered("SENTINEL MASTER on "+s, err)}
			}
		})
	}
	wg.Wait()
	return views
}

func (t *topology) askMaster(ctx context.Context, sentinel string) masterView {
	v := masterView{sentinel: sentinel, epoch: -1}
	client := t.sentinels.client(sentinel)
	if client == nil {
		v.err = ErrClosed
		return v
	}
	ctx, cancel := context.WithTimeout(ctx, t.opts.SentinelTimeout)
	defer cancel()
	began := time.Now()
	fields, err := redisinfo.ParseFields(client.Do(ctx, "SENTINEL", "MASTER", t.opts.MasterName))
	if err != nil {
		v.err = describeSentinelError(err, t.opts.SentinelTimeout)
		return v
	}
	v = parseMasterView(sentinel, fields)
	v.rtt = time.Since(began)
	if v.addr != "" {
		if v.addr, err = t.opts.splitReplyAddr(sentinel, "master", v.addr); err != nil {
			v.err = err
		}
	}
	return v
}

// parseMasterView reads the fields of a SENTINEL MASTER reply.
func parseMasterView(sentinel string, fields map[string]string) masterView {
	v := masterView{sentinel: sentinel, epoch: -1, flags: fields["flags"]}
	if fields["ip"] != "" && fields["port"] != "" {
		v.addr = net.JoinHostPort(fields["ip"], fields["port"])
	}
	if e, err := strconv.ParseInt(fields["config-epoch"], 10, 64); err == nil {
		v.epoch = e
	}
	ms := func(field string) time.Duration {
		n, err := strconv.ParseInt(fields[field], 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		return time.Duration(n) * time.Millisecond
	}
	v.lastPingSent, v.lastOK = ms("last-ping-sent"), ms("last-ok-ping-reply")
	if q, err := strconv.Atoi(fields["quorum"]); err == nil && q > 0 {
		v.quorum = q
	}
	return v
}

// probeReplication publishes on the master and waits, briefly, for want
// replicas to acknowledge it: replicationProbeWait beyond the round trips
// the client measured to the master (now, with PING) and expected, the
// master's to the replicas included.
func (t *topology) probeReplication(ctx context.Context, master string, want int, expected time.Duration) replicationProbe {
	p := replicationProbe{ran: true, want: want}
	ctx, cancel := context.WithTimeout(ctx, t.opts.ProbeTimeout)
	defer cancel()
	n := t.nodes.get(master)
	n.acquire()
	defer n.release()
	began := time.Now()
	if err := n.control().Ping(ctx).Err(); err != nil {
		p.err = err
		return p
	}
	p.rtt = time.Since(began)
	wait := redis.NewIntCmd(ctx, "wait", want, (replicationProbeWait + max(expected, 2*p.rtt)).Milliseconds())
	_, err := n.control().Pipelined(ctx, func(pl redis.Pipeliner) error {
		pl.Publish(ctx, replicationProbeChannel, "probe")
		return pl.Process(ctx, wait)
	})
	switch {
	case err != nil && redis.IsPermissionError(err):
		p.noPerm = true
	case err != nil:
		p.err = err
	default:
		p.acked = int(wait.Val())
	}
	return p
}

// promotedReplica asks a sentinel leading a failover which replica it
// promotes (flagged "promoted" in SENTINEL REPLICAS), or "".
func (t *topology) promotedReplica(ctx context.Context, sentinel string) string {
	client := t.sentinels.client(sentinel)
	if client == nil {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, t.opts.SentinelTimeout)
	defer cancel()
	rows, err := redisinfo.ParseTable(client.Do(ctx, "SENTINEL", "REPLICAS", t.opts.MasterName))
	if err != nil {
		return ""
	}
	rows, _ = t.opts.cleanRows(sentinel, "replica", rows, false)
	i := slices.IndexFunc(rows, func(r map[string]string) bool { return redisinfo.HasFlag(r["flags"], "promoted") })
	if i < 0 {
		return ""
	}
	return redisinfo.Addr(rows[i])
}

// pollState is what the topology goroutine keeps between poll rounds.
type pollState struct {
	master   string // the master the last rounds were about
	replicas map[string]isolation.Watch
	// hold is the current hold of writes for an isolated master (nil:
	// none); cleared is isolationDecision's.
	hold    *isolationHold
	cleared bool
}

// applyPoll acts on a poll round's answers about the master it was
// about; a round about a master the client has left is ignored.
func (t *topology) applyPoll(res pollResult) {
	st := &t.state
	st.polling = false
	for addr, d := range res.took {
		st.rtt.Sample(addr, d)
	}
	st.rtt.Sample(res.master, res.probe.rtt)
	cur := t.snap.Load()
	if res.master != cur.masterAddr() || t.ctx.Err() != nil {
		return
	}
	p := &st.poll
	if p.master != res.master {
		p.master, p.replicas = res.master, map[string]isolation.Watch{}
	}
	var stall replicationStall
	watches := make(map[string]isolation.Watch, len(res.replicas))
	for addr, s := range res.replicas {
		if s.err != nil || res.role.err != nil || res.role.role.Role != "master" {
			// Not answered: forgotten. A replica the client cannot see
			// is not watched, and one that comes back (restarted,
			// resynchronising) is watched again once linked, not taken
			// for one that lost its link.
			continue
		}
		bound := st.rtt.Get(res.master) + st.rtt.Get(addr) + pollPingSlack
		w, watched, stalled := isolation.Stream(p.replicas[addr], s.at, res.role.role.Offset, s.role, res.master, bound)
		watches[addr] = w
		stall.Add(watched, stalled)
	}
	p.replicas = watches

	for _, v := range res.views {
		if v.err == nil && v.addr != "" && v.addr != res.master && v.epoch > st.knownEpoch {
			// A sentinel names another master at a newer epoch: a
			// +switch-master the client did not hear.
			st.wantRefresh = true
		}
	}
	if res.promoted != "" && res.promoted != res.master && st.failoverHold == nil {
		t.log.Info("failover seen by polling the sentinels", "candidate", res.promoted, "sentinel", res.leader)
		t.startFailoverHold(res.promoted, res.leader)
	}
	hold, cleared := isolationDecision(p.hold, p.cleared, isolationInput{views: res.views, master: res.master,
		masterRTT: res.masterRTT, probe: res.probe, stall: stall, now: time.Now()})
	p.cleared = cleared
	switch {
	case hold != nil && p.hold == nil:
		t.startIsolationHold(hold)
	case hold != nil:
		p.hold = hold
	case p.hold != nil:
		t.endIsolationHold("the sentinels reach the master, or its replicas receive its writes again")
	}
}

// startIsolationHold holds writes: the master is about to be replaced and
// would lose what it acknowledges now.
func (t *topology) startIsolationHold(h *isolationHold) {
	t.state.poll.hold = h
	next := t.snap.Load().with()
	next.isolated = h.Reason
	t.install(next)
	t.emit(Event{Kind: EventMasterIsolated, Master: next.masterAddr(), Reason: h.Reason})
	t.log.Warn("master cut off; holding writes", "master", next.masterAddr(), "reason", h.Reason, "suspect", h.Suspect)
}

// endIsolationHold lifts a hold of writes for an isolated master.
func (t *topology) endIsolationHold(why string) {
	h := t.state.poll.hold
	t.state.poll.hold = nil
	next := t.snap.Load().with()
	next.isolated = ""
	t.install(next)
	held := time.Since(h.Since).Round(time.Millisecond)
	t.emit(Event{Kind: EventIsolationEnded, Master: next.masterAddr(), Reason: why, Duration: held})
	t.log.Info("master no longer cut off; writes resume", "master", next.masterAddr(), "held", held, "why", why)
}

// rttEstimates keeps, per address (a data node or a sentinel), the
// smallest recent round trip the client measured to it (see
// isolation.RTT); the poll's own fresh measurement covers a path that
// became slower meanwhile (see isolationDecision).
type rttEstimates = isolation.RTT
