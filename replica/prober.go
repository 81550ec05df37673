package replica

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/logdedup"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"

	"github.com/rediskit/rediskit/internal/safe"
)

// registry holds the shared probers, one per deployment (master name and
// sentinel set) in the process. It is the only package-level mutable state
// in rediskit: a prober exists while at least one Selector is bound to its
// deployment, and is removed and stopped when the last one closes.
var registry = struct {
	sync.Mutex
	probers map[string]*prober
}{probers: map[string]*prober{}}

// deploymentKey identifies a deployment: the master name and the sorted
// sentinel set.
func deploymentKey(env Env) string {
	s := slices.Clone(env.Sentinels)
	slices.Sort(s)
	s = slices.Compact(s)
	return env.MasterName + "\x00" + strings.Join(s, ",")
}

// attach binds s to its deployment's prober, creating it if needed.
func attach(s *Selector, env Env) *prober {
	key := deploymentKey(env)
	registry.Lock()
	defer registry.Unlock()
	p := registry.probers[key]
	if p == nil {
		p = newProber(key, env, s.cfg, s.log)
		registry.probers[key] = p
	} else if p.interval != s.cfg.ProbeInterval || p.timeout != s.cfg.ProbeTimeout || p.alpha != s.cfg.EWMAAlpha {
		s.log.Warn("replica: the deployment's shared prober already runs with other probe settings; using them",
			"rediskit.master_name", env.MasterName, "probe_interval", p.interval, "probe_timeout", p.timeout, "ewma_alpha", p.alpha)
	}
	p.mu.Lock()
	p.subs = append(p.subs, s)
	p.mu.Unlock()
	return p
}

// detach unbinds s; the last Selector to leave stops the prober.
func detach(p *prober, s *Selector) {
	registry.Lock()
	p.mu.Lock()
	p.subs = slices.DeleteFunc(p.subs, func(x *Selector) bool { return x == s })
	last := len(p.subs) == 0
	p.mu.Unlock()
	if last && registry.probers[p.key] == p {
		delete(registry.probers, p.key)
	}
	registry.Unlock()
	if last {
		p.stop()
	}
}

// prober measures one deployment's nodes for every Selector bound to it.
type prober struct {
	key      string
	env      Env
	interval time.Duration
	timeout  time.Duration
	alpha    float64
	log      *slog.Logger

	mu      sync.Mutex
	subs    []*Selector
	running bool
	stopped bool
	cancel  context.CancelFunc
	clients map[string]*redis.Client // dedicated probe connections, one per node

	done   chan struct{} // closed when run returns
	kick   chan struct{}
	latest atomic.Pointer[measurements]

	// Owned by the run goroutine.
	nodes   map[string]*nodeState
	masters map[string]*masterState
	round   uint64
}

// nodeState is what the prober remembers of one node.
type nodeState struct {
	ewma    ewma
	last    time.Duration
	lastAt  time.Time
	healthy bool
	err     error
	info    replicaInfo // from this round's INFO, when read
}

// replicaInfo is a replica's INFO replication.
type replicaInfo struct {
	ok     bool
	linkUp bool
	lastIO time.Duration
	offset int64
	at     time.Time
}

// masterState is what the prober remembers of one master: its offset
// history and the replicas its last ROLE listed, with their acknowledged
// offsets.
type masterState struct {
	hist     offsetHistory
	attached map[string]int64
	ackAt    time.Time
}

// measurements is one probe round's outcome, immutable once published.
type measurements struct {
	round uint64
	nodes map[string]nodeInput // RTT, health and replica INFO; lag not set
	lags  map[[2]string]lagEstimate
}

func newProber(key string, env Env, cfg Config, log *slog.Logger) *prober {
	return &prober{
		key:      key,
		env:      env,
		interval: cfg.ProbeInterval,
		timeout:  cfg.ProbeTimeout,
		alpha:    cfg.EWMAAlpha,
		log:      logdedup.Logger(log).With("rediskit.master_name", env.MasterName, "rediskit.component", "replica prober"),
		clients:  map[string]*redis.Client{},
		done:     make(chan struct{}),
		kick:     make(chan struct{}, 1),
		nodes:    map[string]*nodeState{},
		masters:  map[string]*masterState{},
	}
}

// start runs the prober's goroutine, once.
func (p *prober) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running || p.stopped {
		return
	}
	p.running = true
	ctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go p.run(ctx)
	p.log.Debug("replica prober started", "probe_interval", p.interval)
}

// stop ends the goroutine and closes the probe connections (which unblocks
// probes in flight), and waits for it.
func (p *prober) stop() {
	p.mu.Lock()
	p.stopped = true
	running := p.running
	if p.cancel != nil {
		p.cancel()
	}
	clients := p.clients
	p.clients = map[string]*redis.Client{}
	p.mu.Unlock()
	for _, c := range clients {
		_ = c.Close()
	}
	if running {
		<-p.done
	}
}

// poke asks for a round soon when a node has no sample yet (a topology
// change).
func (p *prober) poke() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

func (p *prober) run(ctx context.Context) {
	defer close(p.done)
	ticker := time.NewTicker(p.interval)
	defer ticker.Stop()
	// confirm fires for the extra round that confirms or dismisses a
	// change of latency a round suggested; nil when none is due.
	var confirm <-chan time.Time
	round := func() {
		p.safeRound(ctx)
		confirm = nil
		if p.changeSuggested() {
			confirm = time.After(confirmDelay(p.interval))
		}
	}
	round()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			round()
		case <-confirm:
			round()
		case <-p.kick:
			if p.hasUnprobed() {
				round()
			}
		}
	}
}

// confirmDelay is how soon after a round that suggested a change of
// latency the next one runs: a quarter interval, at least
// MinProbeInterval, so that a real change is acted on (the second sample
// re-seeds the average; see ewma) about a quarter interval after it is
// first seen instead of a whole interval, while a node that keeps
// jittering costs at most one extra round per interval.
func confirmDelay(interval time.Duration) time.Duration {
	return min(interval, max(interval/4, MinProbeInterval))
}

// changeSuggested reports whether the last round left a reachable node
// with a sample off its average that one more sample would confirm.
func (p *prober) changeSuggested() bool {
	for _, st := range p.nodes {
		if st.healthy && st.ewma.prevOff != 0 {
			return true
		}
	}
	return false
}

// safeRound is probeRound, a panic in it (a reply the parsing code could
// not handle, or a bug) reported and the round given up: the next one
// comes at the next interval.
func (p *prober) safeRound(ctx context.Context) {
	if err := safe.Call(func() { p.probeRound(ctx) }); err != nil {
		p.reportPanic("a probe round", err)
	}
}

// reportPanic logs a panic recovered from the prober's work.
func (p *prober) reportPanic(what string, err error) {
	var pe *safe.PanicError
	if errors.As(err, &pe) {
		p.log.Error("replica: internal panic recovered", "in", what, "panic", fmt.Sprint(pe.Value), "stack", string(pe.Stack))
	}
}

// targets is the union of the bound Selectors' topologies.
func (p *prober) targets() (masters, replicas []string) {
	p.mu.Lock()
	subs := slices.Clone(p.subs)
	p.mu.Unlock()
	for _, s := range subs {
		t := s.topo.Load()
		if t == nil {
			continue
		}
		if t.Master != "" {
			masters = append(masters, t.Master)
		}
		replicas = append(replicas, t.Replicas...)
	}
	slices.Sort(masters)
	slices.Sort(replicas)
	return slices.Compact(masters), slices.Compact(replicas)
}

func (p *prober) hasUnprobed() bool {
	masters, replicas := p.targets()
	for _, addr := range append(masters, replicas...) {
		if st, ok := p.nodes[addr]; !ok || st.lastAt.IsZero() {
			return true
		}
	}
	return false
}

// client returns the dedicated probe client of a node: one connection,
// every timeout ProbeTimeout, and rediskit's inner-client policy (no
// retries, context deadlines honoured, no commands of its own on connect;
// package internal/redisopt), whether or not Env.NodeOptions gave the
// options.
func (p *prober) client(addr string) *redis.Client {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil
	}
	if c, ok := p.clients[addr]; ok {
		return c
	}
	var opt *redis.Options
	if p.env.NodeOptions != nil {
		opt = p.env.NodeOptions(addr)
	}
	if opt == nil {
		opt = &redis.Options{}
	}
	opt = redisopt.Inner(opt)
	opt.Addr = addr
	// Probes are sequential, so the pool holds one connection. Its size is
	// 4 rather than 1 because go-redis stops dialling after PoolSize failed
	// dials (and polls in a goroutine of its own until one succeeds): a
	// client is dropped after any failed probe, which makes at most three
	// dials, so that never happens.
	opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = probeAttempts+1, 0, 1
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout, opt.PoolTimeout = p.timeout, p.timeout, p.timeout, p.timeout
	if opt.ClientName != "" {
		opt.ClientName += "-probe"
	}
	// Probe replies are bounded: nothing a node sends the prober may
	// crash the process or make it allocate without bound.
	c := redis.NewClient(respguard.Guard(opt))
	p.clients[addr] = c
	return c
}

// dropClient closes a node's probe client after a failed probe: the next
// round dials afresh.
func (p *prober) dropClient(addr string) {
	p.mu.Lock()
	c := p.clients[addr]
	delete(p.clients, addr)
	p.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
}

// retainClients closes the probe clients of nodes no longer probed.
func (p *prober) retainClients(keep []string) {
	p.mu.Lock()
	var gone []*redis.Client
	for addr, c := range p.clients {
		if !slices.Contains(keep, addr) {
			gone = append(gone, c)
			delete(p.clients, addr)
		}
	}
	p.mu.Unlock()
	for _, c := range gone {
		_ = c.Close()
	}
}

// probeResult is one node's probe in one round.
type probeResult struct {
	at  time.Time
	rtt time.Duration
	ok  bool
	err error

	roleOK bool
	role   redisinfo.Role
	roleAt time.Time
	links  []redisinfo.ReplicaLink // with Env.ReplicaStateFromMaster: the master's word on its replicas

	info replicaInfo
}

// probeRound probes every node once, in parallel, then publishes the
// measurements to the bound Selectors.
func (p *prober) probeRound(ctx context.Context) {
	masters, replicas := p.targets()
	all := slices.Compact(slices.Sorted(slices.Values(append(slices.Clone(masters), replicas...))))
	if len(all) == 0 {
		return
	}
	p.retainClients(all)
	results := make([]probeResult, len(all))
	var wg sync.WaitGroup
	for i, addr := range all {
		asMaster, asReplica := slices.Contains(masters, addr), slices.Contains(replicas, addr)
		wg.Go(func() {
			if err := safe.Call(func() { results[i] = p.probeNode(ctx, addr, asMaster, asReplica) }); err != nil {
				p.reportPanic("probing "+addr, err)
				results[i] = probeResult{at: time.Now(), err: err} // counts as a failed probe
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return
	}
	for i, addr := range all {
		if !results[i].ok {
			p.dropClient(addr)
		}
	}
	p.round++
	var owners map[string]string
	if p.env.ReplicaStateFromMaster {
		owners = p.owners()
	}
	p.apply(all, masters, owners, results)
	m := p.measure(masters, replicas)
	p.latest.Store(m)

	p.mu.Lock()
	subs := slices.Clone(p.subs)
	p.mu.Unlock()
	for _, s := range subs {
		s.onMeasurements(m)
	}
}

// probeAttempts bounds the PINGs of one probe.
const probeAttempts = 3

// probeNode times PING twice on the node's probe connection (the sample is
// the shorter: scheduling delays only lengthen a round trip, and the first
// PING may include dialling), then reads ROLE from a master and INFO
// replication from a replica. A PING that times out ends the probe as
// failed; a PING that fails otherwise (a pooled connection the node or the
// network closed) is tried again, up to three PINGs in all.
func (p *prober) probeNode(ctx context.Context, addr string, asMaster, asReplica bool) probeResult {
	res := probeResult{at: time.Now()}
	c := p.client(addr)
	if c == nil {
		res.err = errors.New("prober stopped")
		return res
	}
	okCount := 0
	for attempt := 0; attempt < probeAttempts && okCount < 2; attempt++ {
		pctx, cancel := context.WithTimeout(ctx, p.timeout)
		start := time.Now()
		err := c.Ping(pctx).Err()
		d := time.Since(start)
		cancel()
		if err != nil {
			res.err = err
			if failure.Timeout(err) || ctx.Err() != nil {
				break
			}
			continue
		}
		res.err = nil
		if okCount == 0 || d < res.rtt {
			res.rtt = d
		}
		okCount++
	}
	res.ok = okCount > 0 && res.err == nil
	if !res.ok {
		return res
	}
	switch {
	case asMaster && p.env.ReplicaStateFromMaster:
		if text, at, err := timedCall(ctx, p.timeout, func(ctx context.Context) (string, error) {
			return c.Info(ctx, "replication").Result()
		}); err == nil {
			if role, links, err := redisinfo.ParseMasterReplication(redisinfo.ParseInfo(text)); err == nil {
				res.roleOK, res.role, res.links, res.roleAt = true, role, links, at
			}
		}
	case asMaster:
		if role, at, err := timedCall(ctx, p.timeout, func(ctx context.Context) (redisinfo.Role, error) {
			return redisinfo.ParseRole(c.Do(ctx, "ROLE"))
		}); err == nil {
			res.roleOK, res.role, res.roleAt = true, role, at
		}
	}
	if asReplica && !p.env.ReplicaStateFromMaster {
		if text, at, err := timedCall(ctx, p.timeout, func(ctx context.Context) (string, error) {
			return c.Info(ctx, "replication").Result()
		}); err == nil {
			res.info = parseReplicaInfo(text, at)
		}
	}
	return res
}

// linkFromMaster is, with Env.ReplicaStateFromMaster, a replica's link as
// its master (owner, from the bound topologies) told it this round: known
// when the master answered; up when it lists the replica online and heard
// from it within MasterSideLinkTimeout; the offset is the acknowledged
// one. Not known for a node that is not a replica of a probed master.
func linkFromMaster(addr, owner string, all []string, results []probeResult) replicaInfo {
	i := slices.Index(all, owner)
	if owner == "" || i < 0 || !results[i].roleOK || results[i].role.Role != "master" {
		return replicaInfo{lastIO: -1}
	}
	ri := replicaInfo{ok: true, lastIO: -1, at: results[i].roleAt}
	for _, l := range results[i].links {
		if l.Addr == addr {
			ri.linkUp = l.State == "online" && l.Lag >= 0 && l.Lag < MasterSideLinkTimeout
			ri.offset = l.Offset
		}
	}
	return ri
}

// owners maps each bound replica to the master of its topology.
func (p *prober) owners() map[string]string {
	p.mu.Lock()
	subs := slices.Clone(p.subs)
	p.mu.Unlock()
	out := map[string]string{}
	for _, s := range subs {
		if t := s.topo.Load(); t != nil && t.Master != "" {
			for _, r := range t.Replicas {
				out[r] = t.Master
			}
		}
	}
	return out
}

// timedCall runs call bounded by timeout and returns its result with the
// midpoint of the call: the instant an offset it read is dated at.
func timedCall[T any](ctx context.Context, timeout time.Duration, call func(context.Context) (T, error)) (T, time.Time, error) {
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	v, err := call(cctx)
	return v, start.Add(time.Since(start) / 2), err
}

// parseReplicaInfo reads a replica's INFO replication: the link is up when
// the node is a replica, master_link_status is up and no full sync is in
// progress.
func parseReplicaInfo(text string, at time.Time) replicaInfo {
	f := redisinfo.ParseInfo(text)
	ri := replicaInfo{ok: true, at: at, lastIO: -1}
	ri.linkUp = f["role"] == "slave" && f["master_link_status"] == "up" && f["master_sync_in_progress"] != "1"
	if s, err := strconv.ParseInt(f["master_last_io_seconds_ago"], 10, 64); err == nil && s >= 0 {
		ri.lastIO = time.Duration(s) * time.Second
	}
	off, err := strconv.ParseInt(f["slave_repl_offset"], 10, 64)
	if err != nil {
		off, err = strconv.ParseInt(f["master_repl_offset"], 10, 64)
	}
	if err != nil {
		ri.ok = false
	}
	ri.offset = off
	return ri
}

// apply folds a round's results into the nodes' state.
func (p *prober) apply(all, masters []string, owners map[string]string, results []probeResult) {
	for addr := range p.nodes {
		if !slices.Contains(all, addr) {
			delete(p.nodes, addr)
		}
	}
	for addr := range p.masters {
		if !slices.Contains(masters, addr) {
			delete(p.masters, addr)
		}
	}
	for i, addr := range all {
		r := results[i]
		st := p.nodes[addr]
		if st == nil {
			st = &nodeState{}
			p.nodes[addr] = st
		}
		wasHealthy, probedBefore := st.healthy, !st.lastAt.IsZero()
		st.lastAt = r.at
		if r.ok {
			st.ewma.add(r.rtt, p.alpha)
			st.last, st.healthy, st.err = r.rtt, true, nil
			if probedBefore && !wasHealthy {
				p.log.Info("replica prober: node reachable again", "addr", addr, "rtt", r.rtt)
			}
		} else {
			st.ewma.reset()
			st.healthy, st.err = false, r.err
			if wasHealthy || !probedBefore {
				p.log.Warn("replica prober: node unreachable", "addr", addr, "err", r.err)
			}
		}
		st.info = r.info
		if p.env.ReplicaStateFromMaster {
			st.info = linkFromMaster(addr, owners[addr], all, results)
		}
		if slices.Contains(masters, addr) && r.roleOK && r.role.Role == "master" {
			p.applyRole(addr, r)
		}
	}
}

// applyRole records a master's offset and the replicas it lists.
func (p *prober) applyRole(addr string, r probeResult) {
	ms := p.masters[addr]
	if ms == nil {
		ms = &masterState{}
		p.masters[addr] = ms
	}
	ms.hist.add(r.roleAt, r.role.Offset)
	ms.attached = make(map[string]int64, len(r.role.Replicas))
	for _, rep := range r.role.Replicas {
		ms.attached[rep.Addr] = rep.Offset
	}
	ms.ackAt = r.roleAt
}

// measure builds the round's published measurements: each node's RTT and
// health, and the lag of each replica attached to each master. A replica's
// own offset (INFO, current) is preferred to the one its master last
// heard in an acknowledgement (sent once a second).
func (p *prober) measure(masters, replicas []string) *measurements {
	m := &measurements{round: p.round, nodes: make(map[string]nodeInput, len(p.nodes)), lags: map[[2]string]lagEstimate{}}
	for addr, st := range p.nodes {
		m.nodes[addr] = nodeInput{
			addr: addr, samples: st.ewma.n, rtt: st.ewma.get(), last: st.last, lastAt: st.lastAt,
			healthy: st.healthy, err: st.err,
			linkKnown: st.info.ok, linkUp: st.info.linkUp, lastIO: st.info.lastIO,
		}
	}
	for _, master := range masters {
		ms := p.masters[master]
		if ms == nil {
			continue
		}
		for _, r := range replicas {
			ack, attached := ms.attached[r]
			if !attached {
				continue
			}
			offset, at := ack, ms.ackAt
			if st := p.nodes[r]; st != nil && st.info.ok && st.info.offset >= ack {
				offset, at = st.info.offset, st.info.at
			}
			m.lags[[2]string{master, r}] = ms.hist.estimate(offset, at)
		}
	}
	return m
}
