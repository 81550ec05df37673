package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/safe"
)

// sentinelSet is the known sentinels in asking order, with a client each.
// The sentinel that answered last is asked first next time.
type sentinelSet struct {
	opts    *Config
	mu      sync.Mutex
	order   []string
	clients map[string]*redis.Client
}

func newSentinelSet(opts *Config) *sentinelSet {
	s := &sentinelSet{opts: opts, clients: map[string]*redis.Client{}}
	for _, a := range opts.SentinelAddrs {
		s.addConfigured(a)
	}
	return s
}

func (s *sentinelSet) addConfigured(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[addr]; !ok {
		s.order = append(s.order, addr)
		s.clients[addr] = s.opts.sentinelClient(addr, true)
	}
}

func (s *sentinelSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

func (s *sentinelSet) client(addr string) *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[addr]
}

// add appends a learned sentinel; it reports whether it was new, and
// adds none past Config.MaxSentinels.
func (s *sentinelSet) add(addr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[addr]; ok || len(s.order) >= s.opts.MaxSentinels {
		return false
	}
	s.order = append(s.order, addr)
	s.clients[addr] = s.opts.sentinelClient(addr, false)
	return true
}

func (s *sentinelSet) moveToFront(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.order, addr); i > 0 {
		copy(s.order[1:i+1], s.order[:i])
		s.order[0] = addr
	}
}

func (s *sentinelSet) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		_ = c.Close()
	}
	s.clients = map[string]*redis.Client{}
}

// masterReport is one sentinel's answer about the master.
type masterReport struct {
	sentinel string
	addr     string
	// epoch is the master's config epoch in this sentinel's view; it grows
	// with every failover, so a smaller one than already seen is stale. -1
	// when the sentinel only answered GET-MASTER-ADDR-BY-NAME.
	epoch int64
	// connected lists the replicas the master's own ROLE reply lists (the
	// ones it streams writes to, and whose acknowledgements WAIT counts),
	// as the master announces them; set by discover.
	connected []string
	// sDownMillis is how long this sentinel has seen the master subjectively
	// down (SENTINEL MASTER's s-down-time), 0 when it does not. Sentinel
	// lets a replica's link to the master be down that much longer before
	// the replica may no longer be promoted.
	sDownMillis int64
	// rtt is how long ROLE on the master took (set by discover).
	rtt time.Duration
}

var errUnknownMaster = fmt.Errorf("does not monitor a master by that name: %w", ErrUnknownMaster)

// monitoredNames returns the master names the known sentinels monitor
// (SENTINEL MASTERS), sorted, for the error of an unknown name.
func (t *topology) monitoredNames(ctx context.Context) []string {
	var names []string
	for _, s := range t.sentinels.list() {
		client := t.sentinels.client(s)
		if client == nil {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, t.opts.SentinelTimeout)
		rows, err := redisinfo.ParseTable(client.Do(qctx, "SENTINEL", "MASTERS"))
		cancel()
		if err != nil {
			continue
		}
		for _, r := range rows {
			if n := r["name"]; n != "" && !slices.Contains(names, n) {
				names = append(names, failure.Brief(n))
			}
		}
		if len(names) >= 64 {
			break
		}
	}
	slices.Sort(names)
	return names
}

// askSentinel asks one sentinel for the master, bounded by SentinelTimeout.
// SENTINEL MASTER gives the address GET-MASTER-ADDR-BY-NAME gives plus the
// config epoch; a sentinel user not allowed SENTINEL MASTER is asked
// GET-MASTER-ADDR-BY-NAME instead.
func (t *topology) askSentinel(ctx context.Context, addr string) (masterReport, error) {
	client := t.sentinels.client(addr)
	if client == nil {
		return masterReport{}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, t.opts.SentinelTimeout)
	defer cancel()
	rep := masterReport{sentinel: addr, epoch: -1}
	fields, err := redisinfo.ParseFields(client.Do(ctx, "SENTINEL", "MASTER", t.opts.MasterName))
	switch {
	case err == nil:
		if rep.addr, err = t.opts.replyAddr(addr, "master", fields["ip"], fields["port"]); err != nil {
			return rep, skipped(SkipBadAddress, err)
		}
		if e, perr := strconv.ParseInt(fields["config-epoch"], 10, 64); perr == nil {
			rep.epoch = e
		}
		if redisinfo.HasFlag(fields["flags"], "s_down") {
			if ms, perr := strconv.ParseInt(fields["s-down-time"], 10, 64); perr == nil && ms > 0 {
				rep.sDownMillis = ms
			}
		}
		// The sentinel leading a failover bumps the config epoch when the
		// replica reports its promotion, but keeps naming the old master
		// until it has reconfigured the other replicas, a second or more
		// later: an answer mid-failover is stale whatever its epoch.
		if redisinfo.HasFlag(fields["flags"], "failover_in_progress") {
			return rep, skipped(SkipStale, fmt.Errorf("stale: leading a failover (state %s) and still naming %s", fields["failover-state"], rep.addr))
		}
		return rep, nil
	case redis.IsPermissionError(err):
		v, err := client.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", t.opts.MasterName).StringSlice()
		if err != nil {
			return rep, describeSentinelError(err, t.opts.SentinelTimeout)
		}
		if len(v) != 2 {
			return rep, skipped(SkipUnknownMaster, errUnknownMaster)
		}
		if rep.addr, err = t.opts.replyAddr(addr, "master", v[0], v[1]); err != nil {
			return rep, skipped(SkipBadAddress, err)
		}
		return rep, nil
	case failure.UnknownMaster(err):
		return rep, skipped(SkipUnknownMaster, errUnknownMaster)
	default:
		return rep, describeSentinelError(err, t.opts.SentinelTimeout)
	}
}

// describeSentinelError says in words why a sentinel was skipped.
func describeSentinelError(err error, timeout time.Duration) error {
	switch {
	case failure.Timeout(err):
		return skipped(SkipSlow, fmt.Errorf("slow: no answer within %v: %w", timeout, err))
	case redis.IsAuthError(err):
		return skipped(SkipAuth, fmt.Errorf("AUTH failed on the sentinel: %w", err))
	case failure.Network(err):
		return skipped(SkipDown, fmt.Errorf("down: %w", err))
	}
	return skipped(SkipOther, err)
}

// discover asks the sentinels in order for the master and verifies it
// with ROLE. Sentinels that are down, slow, stale (stale returns an error
// for their answer) or name a node that is not a master are skipped; when
// none qualifies, discovery tries again briefly, within ctx and
// DiscoveryTimeout.
func (t *topology) discover(ctx context.Context, stale func(masterReport) error) (masterReport, error) {
	ctx, cancel := context.WithTimeout(ctx, t.opts.DiscoveryTimeout)
	defer cancel()
	if t.opts.Primary != "" {
		return t.discoverPrimary(ctx)
	}
	backoff := 50 * time.Millisecond
	var last []SentinelAttempt // the last round that asked every sentinel
	for {
		rep, attempts, complete := t.discoverOnce(ctx, stale)
		if rep.addr != "" {
			t.lastFailure.Store(nil)
			return rep, nil
		}
		t.stats.discoveryFailures.Add(1)
		if complete || last == nil {
			last = attempts
		}
		if complete && len(attempts) > 0 && !slices.ContainsFunc(attempts, func(a SentinelAttempt) bool { return a.Reason != SkipUnknownMaster }) {
			// Every sentinel answered, and none monitors the name: waiting
			// will not change that (a typo, or the wrong deployment). Say
			// so at once, with the names they do monitor.
			err := &DiscoveryError{MasterName: t.opts.MasterName, Attempts: attempts, Monitored: t.monitoredNames(ctx)}
			t.lastFailure.Store(err)
			return masterReport{}, err
		}
		t.lastFailure.Store(&DiscoveryError{MasterName: t.opts.MasterName, Attempts: last})
		select {
		case <-ctx.Done():
			return masterReport{}, &DiscoveryError{MasterName: t.opts.MasterName, Attempts: last, Cause: ctx.Err()}
		case <-time.After(backoff):
			backoff = min(backoff*2, 400*time.Millisecond)
		}
	}
}

// discoverPrimary is discover for a standalone primary (Config.Primary):
// ROLE on it, until it answers as a master or ctx ends. A primary that
// answers as a replica is reported at once: waiting will not make it a
// master, and no Sentinel will promote another.
func (t *topology) discoverPrimary(ctx context.Context) (masterReport, error) {
	addr := t.opts.Primary
	backoff := 50 * time.Millisecond
	for {
		began := time.Now()
		role, err := t.verifyMaster(ctx, addr)
		if err == nil {
			rep := masterReport{addr: addr, epoch: -1, rtt: time.Since(began), connected: t.connectedReplicas(addr, role)}
			t.lastFailure.Store(nil)
			return rep, nil
		}
		t.stats.discoveryFailures.Add(1)
		de := &DiscoveryError{MasterName: t.opts.MasterName, Primary: addr,
			Attempts: []SentinelAttempt{{Named: addr, Reason: skipReason(err), Err: err}}}
		t.lastFailure.Store(de)
		var rme *RoleMismatchError
		if errors.As(err, &rme) {
			return masterReport{}, de
		}
		select {
		case <-ctx.Done():
			de.Cause = ctx.Err()
			return masterReport{}, de
		case <-time.After(backoff):
			backoff = min(backoff*2, 400*time.Millisecond)
		}
	}
}

// connectedReplicas are the replicas master's ROLE lists, as they announce
// themselves: mapped like the sentinels' addresses, so that both name a
// replica alike. One the client would not dial still counts (WAIT counts
// it): it is kept as given, never dialled from this list.
func (t *topology) connectedReplicas(master string, role redisinfo.Role) []string {
	var out []string
	for _, r := range role.Replicas {
		a, aerr := t.opts.splitReplyAddr(master, "replica", r.Addr)
		if aerr != nil {
			a = r.Addr
		}
		out = append(out, a)
	}
	return out
}

// discoverOnce asks every sentinel once. complete is false when ctx ended
// the round before every sentinel was asked.
func (t *topology) discoverOnce(ctx context.Context, stale func(masterReport) error) (found masterReport, attempts []SentinelAttempt, complete bool) {
	type verification struct {
		role redisinfo.Role
		rtt  time.Duration
		err  error
	}
	verified := map[string]verification{} // several sentinels usually name the same node
	complete = true
	for _, s := range t.sentinels.list() {
		if ctx.Err() != nil {
			complete = false
			attempts = append(attempts, SentinelAttempt{Sentinel: s, Reason: SkipOther, Err: fmt.Errorf("not asked: %w", ctx.Err())})
			continue
		}
		rep, err := t.askSentinel(ctx, s)
		if err == nil {
			err = stale(rep)
		}
		if err == nil {
			v, seen := verified[rep.addr]
			if !seen {
				began := time.Now()
				v.role, v.err = t.verifyMaster(ctx, rep.addr)
				v.rtt = time.Since(began)
				verified[rep.addr] = v
			}
			err, rep.rtt = v.err, v.rtt
			rep.connected = t.connectedReplicas(rep.addr, v.role)
		}
		if err != nil {
			reason := skipReason(err)
			t.skipSentinel(s, rep.addr, reason, err)
			attempts = append(attempts, SentinelAttempt{Sentinel: s, Named: rep.addr, Reason: reason, Err: err})
			continue
		}
		t.sentinels.moveToFront(s)
		return rep, attempts, complete
	}
	return masterReport{}, attempts, complete
}

// verifyMaster checks with ROLE that addr is a master, and returns the
// reply (which lists the replicas connected to it).
func (t *topology) verifyMaster(ctx context.Context, addr string) (redisinfo.Role, error) {
	ctx, cancel := context.WithTimeout(ctx, t.opts.ProbeTimeout)
	defer cancel()
	role, err := t.nodes.get(addr).role(ctx)
	if err != nil {
		return role, skipped(SkipUnverified, fmt.Errorf("named %s, but ROLE there failed: %w", addr, err))
	}
	if role.Role != "master" {
		return role, &RoleMismatchError{Addr: addr, Role: role.Role, MasterOf: role.MasterAddr}
	}
	return role, nil
}

func (t *topology) skipSentinel(sentinel, named string, reason SkipReason, err error) {
	t.stats.sentinelsSkipped.Add(1)
	t.emit(Event{Kind: EventSentinelSkipped, Sentinel: sentinel, Master: named, Reason: string(reason), Err: err})
	t.log.Debug("sentinel skipped", "sentinel", sentinel, "named", named, "reason", reason, "err", err)
}

// replicaReport is a replica a sentinel reports healthy and ROLE confirms.
type replicaReport struct {
	addr   string
	offset int64
}

// sentinelView is one sentinel's answer, in a refresh, about the master's
// replicas: SENTINEL REPLICAS, with the master it names and how long it
// has seen that master subjectively down (SENTINEL MASTER), and the other
// sentinels it knows (SENTINEL SENTINELS). Addresses are validated and
// mapped (cleanRows).
type sentinelView struct {
	sentinel    string
	master      string
	sDownMillis int64
	rows        []map[string]string
	peers       []map[string]string
	err         error
	// listed is how many replica rows the sentinel sent (rows may hold
	// fewer: keepReplicas).
	listed int
}

// replicaScan is what a refresh learned about the replicas from every
// sentinel and from ROLE on each replica.
type replicaScan struct {
	views []sentinelView
	// healthy are the replicas reads may use: ROLE says a replica with a
	// connected link, a sentinel naming the master reports it healthy, and
	// none flags it down.
	healthy []replicaReport
	// verified are the replicas ROLE confirms as replicas with a connected
	// link, whatever the sentinels say.
	verified []string
	// claims are the listed replicas whose ROLE says master: a promotion
	// Sentinel has not announced yet, or a former master awaiting its
	// demotion.
	claims []string
	// rtt is how long ROLE took on each replica that answered.
	rtt map[string]time.Duration
	// listed is how many replicas the sentinels listed, once each;
	// dropped how many of them the client left out past
	// Config.MaxReplicas (keepReplicas).
	listed, dropped int
}

// answered reports whether at least one sentinel listed the replicas.
func (s replicaScan) answered() bool {
	return slices.ContainsFunc(s.views, func(v sentinelView) bool { return v.err == nil })
}

// replicasToCheck are the replicas a refresh sends ROLE to: every one a
// sentinel lists, in the order first listed, unless every sentinel that
// lists it flags it down (ROLE on a dead node costs a dial per refresh,
// and its answer could not change anything).
func replicasToCheck(views []sentinelView, master string) []string {
	listed, down := map[string]int{}, map[string]int{}
	var order []string
	for _, v := range views {
		for _, r := range v.rows {
			addr := redisinfo.Addr(r)
			if addr == master || refusedRow(r) {
				continue
			}
			if listed[addr] == 0 {
				order = append(order, addr)
			}
			listed[addr]++
			if redisinfo.HasFlag(r["flags"], "s_down") || redisinfo.HasFlag(r["flags"], "o_down") {
				down[addr]++
			}
		}
	}
	return slices.DeleteFunc(order, func(a string) bool { return down[a] == listed[a] })
}

// scanReplicas asks every known sentinel, in parallel and each bounded by
// SentinelTimeout, for its view of the master's replicas, then checks ROLE
// on every replica any of them lists that they do not all flag down (in
// parallel, each bounded by ProbeTimeout).
//
// Every sentinel, not only the one that named the master: any of them may
// lead the next failover, and one sentinel's view can be wrong for a
// moment. A sentinel just restarted lists every replica disconnected
// until it has reconnected; had the client counted durable writes, or
// looked for a replica answering ROLE master, on that view alone, it would
// have missed the replica another sentinel was promoting.
//
// For a standalone primary (Config.Primary) the one view is the primary's
// own: its replicas are Config.Replicas, or those its ROLE lists
// (connected), every one checked with ROLE as a sentinel's would be.
func (t *topology) scanReplicas(ctx context.Context, master string, connected []string) replicaScan {
	var scan replicaScan
	var wg sync.WaitGroup
	if t.opts.Primary != "" {
		listed := connected
		if len(t.opts.Replicas) > 0 {
			listed = t.opts.Replicas
		}
		scan.views = []sentinelView{primaryView(master, listed)}
	} else {
		sentinels := t.sentinels.list()
		scan.views = make([]sentinelView, len(sentinels))
		for i, s := range sentinels {
			wg.Go(func() {
				if err := safe.Call(func() { scan.views[i] = t.askReplicas(ctx, s) }); err != nil {
					scan.views[i] = sentinelView{sentinel: s, err: t.recovered("SENTINEL REPLICAS on "+s, err)}
				}
			})
		}
		wg.Wait()
	}
	scan.listed, scan.dropped = keepReplicas(scan.views, t.opts.MaxReplicas)

	candidates := replicasToCheck(scan.views, master)
	roles := make([]redisinfo.Role, len(candidates))
	errs := make([]error, len(candidates))
	rtts := make([]time.Duration, len(candidates))
	for i, addr := range candidates {
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, t.opts.ProbeTimeout)
			defer cancel()
			began := time.Now()
			if err := safe.Call(func() { roles[i], errs[i] = t.nodes.get(addr).role(rctx) }); err != nil {
				errs[i] = t.recovered("ROLE on "+addr, err)
			}
			rtts[i] = time.Since(began)
		})
	}
	wg.Wait()
	scan.rtt = make(map[string]time.Duration, len(candidates))
	for i, addr := range candidates {
		if errs[i] == nil {
			scan.rtt[addr] = rtts[i]
		}
		switch {
		case errs[i] != nil:
		case roles[i].Role == "slave" && roles[i].LinkState == "connected":
			scan.verified = append(scan.verified, addr)
			if readable(scan.views, master, addr) {
				scan.healthy = append(scan.healthy, replicaReport{addr: addr, offset: roles[i].Offset})
			}
		case roles[i].Role == "master":
			scan.claims = append(scan.claims, addr)
		}
	}
	return scan
}

// primaryView is a standalone primary's replicas as a view of the kind a
// sentinel's SENTINEL REPLICAS gives: one row each, healthy as far as a
// listing can say (ROLE on each decides).
func primaryView(master string, replicas []string) sentinelView {
	v := sentinelView{master: master, listed: len(replicas)}
	for _, addr := range replicas {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			continue
		}
		v.rows = append(v.rows, map[string]string{"ip": host, "port": port, "flags": "slave"})
	}
	return v
}

// keepReplicas bounds the replicas of a refresh to limit addresses across
// all the views (Config.MaxReplicas): everything after it (ROLE checks,
// reads, the poll's probes, the durable set) works on what it keeps. Past
// limit it keeps the addresses listed by the most sentinels, ties in the
// order first listed, refused addresses (refusedRow) after every other,
// and removes the other rows from the views. It returns how many
// addresses were listed and how many were dropped.
//
// Whom to keep cannot be decided by the replicas themselves without
// dialling them, which is what the bound is for. Counting sentinels means
// one sentinel listing thousands of addresses cannot push out a replica
// the others list; the order first listed keeps, among equals, what the
// sentinels asked first (the one that named the master leads) list first.
func keepReplicas(views []sentinelView, limit int) (listed, dropped int) {
	type entry struct {
		addr    string
		refused bool // every row listing it was refused
		count   int  // sentinels listing it
	}
	index := map[string]int{}
	var order []entry
	for i := range views {
		v := &views[i]
		v.listed = len(v.rows)
		if v.err != nil {
			continue
		}
		seen := make(map[string]bool, len(v.rows))
		for _, r := range v.rows {
			addr := redisinfo.Addr(r)
			j, ok := index[addr]
			if !ok {
				j = len(order)
				index[addr] = j
				order = append(order, entry{addr: addr, refused: true})
			}
			if !refusedRow(r) {
				order[j].refused = false
			}
			if !seen[addr] {
				seen[addr] = true
				order[j].count++
			}
		}
	}
	if len(order) <= limit {
		return len(order), 0
	}
	// A stable sort: among equals, the order first listed.
	slices.SortStableFunc(order, func(a, b entry) int {
		if a.refused != b.refused {
			if a.refused {
				return 1
			}
			return -1
		}
		return b.count - a.count
	})
	keep := make(map[string]bool, limit)
	for _, e := range order[:limit] {
		keep[e.addr] = true
	}
	for i := range views {
		v := &views[i]
		kept := make([]map[string]string, 0, min(len(v.rows), limit))
		for _, r := range v.rows {
			if keep[redisinfo.Addr(r)] {
				kept = append(kept, r)
			}
		}
		v.rows = kept
	}
	return len(order), len(order) - limit
}

// readable reports whether reads may use addr, as far as the sentinels
// naming master say: one of them reports it healthy (not s_down, o_down or
// disconnected, its link to the master up), and none flags it down.
func readable(views []sentinelView, master, addr string) bool {
	ok := false
	for _, v := range views {
		if v.err != nil || (v.master != "" && v.master != master) {
			continue
		}
		for _, r := range v.rows {
			if redisinfo.Addr(r) != addr || refusedRow(r) {
				continue
			}
			flags := r["flags"]
			if redisinfo.HasFlag(flags, "s_down") || redisinfo.HasFlag(flags, "o_down") {
				return false
			}
			if !redisinfo.HasFlag(flags, "disconnected") && r["master-link-status"] != "err" {
				ok = true
			}
		}
	}
	return ok
}

// askReplicas asks one sentinel, in one round trip, which master it names
// (and how long it has seen it down) and which replicas it knows.
func (t *topology) askReplicas(ctx context.Context, sentinel string) sentinelView {
	v := sentinelView{sentinel: sentinel}
	client := t.sentinels.client(sentinel)
	if client == nil {
		v.err = ErrClosed
		return v
	}
	qctx, cancel := context.WithTimeout(ctx, t.opts.SentinelTimeout)
	defer cancel()
	var masterCmd, replicasCmd, peersCmd *redis.Cmd
	_, _ = client.Pipelined(qctx, func(p redis.Pipeliner) error {
		masterCmd = p.Do(qctx, "SENTINEL", "MASTER", t.opts.MasterName)
		replicasCmd = p.Do(qctx, "SENTINEL", "REPLICAS", t.opts.MasterName)
		peersCmd = p.Do(qctx, "SENTINEL", "SENTINELS", t.opts.MasterName)
		return nil
	})
	// A sentinel user not allowed SENTINEL MASTER still lists the
	// replicas: its view counts, naming no master ("" matches any).
	fields, err := redisinfo.ParseFields(masterCmd)
	switch {
	case err == nil:
		if v.master, err = t.opts.replyAddr(sentinel, "master", fields["ip"], fields["port"]); err != nil {
			v.err = err
			return v
		}
		if redisinfo.HasFlag(fields["flags"], "s_down") {
			if ms, perr := strconv.ParseInt(fields["s-down-time"], 10, 64); perr == nil && ms > 0 {
				v.sDownMillis = ms
			}
		}
	case !redis.IsPermissionError(err):
		v.err = describeSentinelError(err, t.opts.SentinelTimeout)
		return v
	}
	if v.rows, err = redisinfo.ParseTable(replicasCmd); err != nil {
		v.err = describeSentinelError(err, t.opts.SentinelTimeout)
		return v
	}
	var refused []error
	v.rows, refused = t.opts.cleanRows(sentinel, "replica", v.rows, true)
	if peers, err := redisinfo.ParseTable(peersCmd); err == nil {
		var bad []error
		v.peers, bad = t.opts.cleanRows(sentinel, "sentinel", peers, false)
		refused = append(refused, bad...)
	}
	// One line for a refresh, not one for each address: a sentinel may
	// list thousands.
	if len(refused) > 0 {
		t.log.Warn("addresses refused", "sentinel", sentinel, "count", len(refused), "first", refused[0])
	}
	return v
}

// promotableReplicas returns the rows of SENTINEL REPLICAS that Sentinel
// could promote, by the rules of its own choice (sentinelSelectSlave) that
// the table shows: not flagged s_down, o_down or disconnected, a
// replica-priority other than 0, and a link to the master down for no more
// than ten times down-after-milliseconds plus, while the sentinel sees the
// master subjectively down, how long it has (masterSDownMillis). A link
// that is down for less is no bar: Sentinel promotes such a replica, with
// whatever data it has. The rules the table cannot show (recent PING and
// INFO replies) are left out, so the list errs on the side of too many.
func promotableReplicas(rows []map[string]string, masterSDownMillis int64) []string {
	var out []string
	for _, r := range rows {
		flags := r["flags"]
		if redisinfo.HasFlag(flags, "s_down") || redisinfo.HasFlag(flags, "o_down") || redisinfo.HasFlag(flags, "disconnected") {
			continue
		}
		if r["slave-priority"] == "0" || r["replica-priority"] == "0" {
			continue
		}
		down, derr := strconv.ParseInt(r["master-link-down-time"], 10, 64)
		after, aerr := strconv.ParseInt(r["down-after-milliseconds"], 10, 64)
		if derr == nil && aerr == nil && after > 0 && down > masterSDownMillis+10*after {
			continue
		}
		out = append(out, redisinfo.Addr(r))
	}
	return out
}

// durableReplicas returns the union of lists, once each, sorted, the
// master and empty addresses left out (see durableSet).
func durableReplicas(master string, lists ...[]string) []string {
	var out []string
	for _, list := range lists {
		for _, addr := range list {
			if addr != master && addr != "" && !slices.Contains(out, addr) {
				out = append(out, addr)
			}
		}
	}
	slices.Sort(out)
	return out
}

// knownReplicas returns every replica of a SENTINEL REPLICAS table that
// Sentinel could ever promote: all of them, down or not, but those with
// replica-priority 0 (DurableEveryKnownReplica).
func knownReplicas(rows []map[string]string) []string {
	var out []string
	for _, r := range rows {
		if r["slave-priority"] == "0" || r["replica-priority"] == "0" {
			continue
		}
		out = append(out, redisinfo.Addr(r))
	}
	return out
}

// durableSet returns the replicas a durable write on master must be
// confirmed by, sorted:
//
//   - every replica the master lists as connected (ROLE): WAIT counts
//     their acknowledgements, so one left out could stand in for a
//     replica that did not confirm;
//   - every replica any sentinel could promote (promotableReplicas of
//     each sentinel's view; with DurableEveryKnownReplica, every replica
//     any sentinel knows, down or not): any sentinel may lead the next
//     failover;
//   - every replica the client verified with ROLE, and every listed
//     replica whose ROLE says master (a promotion under way: it cannot
//     confirm, so durable writes fail, as they must);
//
// once each, the master left out. WAIT counts acknowledgements, not
// names, so the count must be the size of this union: with any smaller
// count, the replicas still attached to the old master after a promotion
// could meet it without the one promoted. With the whole union, WAIT
// succeeds only if every replica the master has connected confirmed the
// write, and only if every counted replica is among them. A replica listed
// under two spellings is counted twice, which makes durable writes fail,
// never succeed wrongly. When no sentinel listed the replicas, the
// replicas counted before (prev) stay counted rather than fewer.
func durableSet(scope DurableScope, master string, connected []string, scan replicaScan, prev []string) []string {
	lists := [][]string{connected, scan.verified, scan.claims}
	for _, v := range scan.views {
		if v.err != nil {
			continue
		}
		if scope == DurableEveryKnownReplica {
			lists = append(lists, knownReplicas(v.rows))
		} else {
			lists = append(lists, promotableReplicas(v.rows, v.sDownMillis))
		}
	}
	if !scan.answered() {
		lists = append(lists, prev)
	}
	return durableReplicas(master, lists...)
}

// learnSentinels adds the peers the sentinels list in views and returns
// the new ones (see peersToLearn).
func (t *topology) learnSentinels(views []sentinelView) []string {
	var added []string
	for _, addr := range peersToLearn(views) {
		if t.sentinels.add(addr) {
			added = append(added, addr)
		}
	}
	return added
}

// peersToLearn returns, in the order first listed, the sentinels that more
// than half of the sentinels that answered list as a peer they can reach
// (not s_down or disconnected). With one answer, that one decides; with
// more, no single sentinel can make the client dial addresses of its own
// (a sentinel listing a thousand fake peers, each of which the client would
// subscribe to, with the sentinel password).
func peersToLearn(views []sentinelView) []string {
	answered := 0
	count := map[string]int{}
	var order []string
	for _, v := range views {
		if v.err != nil {
			continue
		}
		answered++
		seen := map[string]bool{}
		for _, r := range v.peers {
			if redisinfo.HasFlag(r["flags"], "s_down") || redisinfo.HasFlag(r["flags"], "disconnected") {
				continue
			}
			addr := redisinfo.Addr(r)
			if seen[addr] {
				continue
			}
			seen[addr] = true
			if count[addr] == 0 {
				order = append(order, addr)
			}
			count[addr]++
		}
	}
	return slices.DeleteFunc(order, func(addr string) bool { return count[addr]*2 <= answered })
}
