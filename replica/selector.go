package replica

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rediskit/rediskit/redisurl"

	"github.com/rediskit/rediskit/internal/eventq"
	"github.com/rediskit/rediskit/internal/logdedup"
)

// Errors of Selector methods.
var (
	// ErrClosed: the Selector was closed.
	ErrClosed = errors.New("replica: selector closed")
	// ErrNotBound: the Selector has not been bound to a client; pass it as
	// sentinel.Config.ReplicaSelector (NewClient binds it).
	ErrNotBound = errors.New("replica: selector not bound to a client (pass it as sentinel.Config.ReplicaSelector)")
)

// Selector elects the replicas a client reads from, from the measurements
// of its deployment's shared prober. It implements sentinel's
// ReplicaSelector and BindableSelector: give it to one client as
// sentinel.Config.ReplicaSelector. Its methods are safe for concurrent
// use.
type Selector struct {
	cfg     Config
	log     *slog.Logger
	cur     atomic.Pointer[election]
	topo    atomic.Pointer[Topology]
	prober  atomic.Pointer[prober]
	started atomic.Bool

	mu       sync.Mutex // serialises the writers of cur
	bound    bool
	closed   bool
	env      Env
	meas     *measurements
	rounds   uint64
	slots    map[string]*slot
	closedCh chan struct{}

	// notices are the election changes still to report, oldest first.
	// Evictions and the Observer run on the queue's goroutine, never
	// under mu: the Observer may call the Selector, and a slow one holds
	// up neither the prober nor the client's topology goroutine.
	notices *eventq.Queue[notice]
}

// notice is what one election change asks of the outside world: the
// replicas to evict, then the Event.
type notice struct {
	evict []string
	event *Event
}

// foldEvictions is the notice queue's Merge: past eventq.DefaultCapacity
// waiting notices, a new notice's Event is dropped (counted and logged by
// the queue) and its evictions folded into the last notice, so nothing
// grows without bound and no eviction is lost.
func foldEvictions(last *notice, n notice) bool {
	for _, addr := range n.evict {
		if !slices.Contains(last.evict, addr) {
			last.evict = append(last.evict, addr)
		}
	}
	return n.event == nil
}

// slot is a replica the Selector can hand out, with its in-flight count.
// Slots outlive elections, so a read's done decrements the count its Pick
// incremented whatever was elected since.
type slot struct {
	addr     string
	inflight atomic.Int64
	done     func()
}

// election is an immutable election, swapped in whole: Pick loads it once.
type election struct {
	lazy          bool // the prober has not been started: the next Pick starts it
	nearestMaster bool
	elected       []*slot
	fallback      []*slot
	electedAddrs  []string
	inUse         []string // the replicas Pick may return
	table         []NodeStatus
	probed        bool
	rounds        uint64
	next          chan struct{} // closed when a newer election replaces this one
}

// NewSelector returns a latency-aware Selector. It does nothing until a
// client binds it and calls Pick: the deployment's prober starts at the
// first Pick of any Selector bound to it (or at Start).
func NewSelector(cfg Config) (*Selector, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Selector{cfg: cfg, log: logdedup.Logger(cfg.Logger), slots: map[string]*slot{}, closedCh: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.notices = eventq.New(eventq.Config[notice]{Deliver: s.deliver, Merge: foldEvictions, Logger: s.log, Name: "replica"})
	s.install(&election{nearestMaster: true})
	return s, nil
}

// Bind attaches the Selector to a client's deployment (sentinel.NewClient
// calls it once, before the first UpdateTopology). A Selector serves one
// client: a second Bind is ignored (and logged).
func (s *Selector) Bind(env Env) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	if s.bound {
		s.log.Warn("replica: Selector bound twice; a Selector serves one client", "rediskit.master_name", env.MasterName)
		return
	}
	s.bound = true
	s.env = env
	if s.cfg.Logger == nil && env.Logger != nil {
		// The client's logger may already carry rediskit.master_name (the
		// Sentinel client's does); the records below add it too, for a
		// Selector with a logger of its own. The wrapper keeps one.
		s.log = logdedup.Logger(env.Logger)
		s.notices.SetLogger(s.log)
	}
	s.prober.Store(attach(s, env))
	s.reelect(false)
}

// UpdateTopology gives the Selector the client's current master and
// healthy replicas; the election is re-run at once on what is known.
func (s *Selector) UpdateTopology(t Topology) {
	t = Topology{Master: t.Master, Replicas: slices.Clone(t.Replicas)}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	old := s.topo.Load()
	s.topo.Store(&t)
	changed := old == nil || old.Master != t.Master || !sameSet(old.Replicas, t.Replicas)
	p := s.prober.Load()
	if s.meas == nil && p != nil {
		s.meas = p.latest.Load()
	}
	for addr := range s.slots {
		if !slices.Contains(t.Replicas, addr) {
			delete(s.slots, addr)
		}
	}
	s.reelect(changed)
	s.mu.Unlock()
	if p != nil && changed {
		p.poke()
	}
}

// onMeasurements is called by the prober after each round.
func (s *Selector) onMeasurements(m *measurements) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return
	}
	s.meas = m
	s.rounds++
	s.reelect(false)
}

// Pick chooses the node for one read under pref: a replica address, or ""
// for the master. Under Replica, "" means no replica may serve the read
// (none eligible, and none excluded only for being slow): the caller must
// not read from the master, and Table says why each replica was excluded.
// A replica that is unreachable, not probed yet, link-down or stale is
// never returned, under any pref. It costs one atomic load of the current
// election and the choice (power of two choices on in-flight reads when
// several replicas are elected): no lock, no allocation. done, when not
// nil, must be called when the read finishes.
func (s *Selector) Pick(pref redisurl.ReadFrom) (addr string, done func()) {
	e := s.cur.Load()
	if e.lazy {
		s.startOnce()
	}
	var set []*slot
	switch pref {
	case redisurl.Nearest:
		if e.nearestMaster {
			return "", nil
		}
		set = e.elected
	case redisurl.ReplicaPreferred:
		set = e.elected
	case redisurl.Replica:
		set = e.elected
		if len(set) == 0 {
			set = e.fallback
		}
	default:
		return "", nil
	}
	switch len(set) {
	case 0:
		return "", nil
	case 1:
		return set[0].addr, nil
	}
	n := uint64(len(set))
	r := rand.Uint64()
	i := r % n
	a, b := set[i], set[(i+1+(r>>32)%(n-1))%n]
	if b.inflight.Load() < a.inflight.Load() {
		a = b
	}
	a.inflight.Add(1)
	return a.addr, a.done
}

// Start starts the deployment's shared prober now rather than at the first
// Pick (for tools that show the RTT table without reading, such as the
// CLI's probe command).
func (s *Selector) Start() error {
	s.mu.Lock()
	closed, bound := s.closed, s.bound
	s.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case !bound:
		return ErrNotBound
	}
	s.startOnce()
	return nil
}

func (s *Selector) startOnce() {
	if s.started.Load() || !s.started.CompareAndSwap(false, true) {
		return
	}
	if p := s.prober.Load(); p != nil {
		p.start()
	}
}

// Close detaches the Selector from its deployment's prober; the last
// Selector of a deployment stops the prober and closes its connections.
// Election changes not yet reported are dropped; Close waits for an
// Observer call in progress (WaitRound returns ErrClosed to it), at most
// eventq.DefaultDrainTimeout, and after Close returns the Observer is not
// called again. It is safe to call more than once, but not from the
// Observer.
func (s *Selector) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.closedCh)
	p := s.prober.Load()
	s.mu.Unlock()
	if p != nil {
		detach(p, s)
	}
	// The notices still queued are passed over (deliver sees s.closed).
	s.notices.Close()
	return nil
}

// Table returns the current RTT table: the master first, then the replicas
// in the order the client reported them. Before the first probe round the
// rows have no RTT and every replica is ExcludedUnprobed.
func (s *Selector) Table() []NodeStatus {
	return slices.Clone(s.cur.Load().table)
}

// Rounds is the number of probe rounds this Selector has received.
func (s *Selector) Rounds() uint64 { return s.cur.Load().rounds }

// WaitRound waits until the Selector has received n probe rounds (n = 1:
// the first round, whose table has RTTs). It returns ctx's error, or
// ErrClosed.
func (s *Selector) WaitRound(ctx context.Context, n uint64) error {
	for {
		e := s.cur.Load()
		if e.rounds >= n {
			return nil
		}
		select {
		case <-e.next:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closedCh:
			return ErrClosed
		}
	}
}

// install swaps in a new election and wakes WaitRound callers. s.mu is
// held (or s is not shared yet).
func (s *Selector) install(e *election) {
	e.next = make(chan struct{})
	if old := s.cur.Swap(e); old != nil {
		close(old.next)
	}
}

func (s *Selector) slot(addr string) *slot {
	sl := s.slots[addr]
	if sl == nil {
		sl = &slot{addr: addr}
		sl.done = func() { sl.inflight.Add(-1) }
		s.slots[addr] = sl
	}
	return sl
}

func (s *Selector) slotsFor(addrs []string) []*slot {
	if len(addrs) == 0 {
		return nil
	}
	out := make([]*slot, len(addrs))
	for i, a := range addrs {
		out[i] = s.slot(a)
	}
	return out
}

// reelect runs the election on the current topology and measurements,
// installs it, and when it changed queues the eviction of the replicas
// that left and an Event for the notifier. s.mu is held.
func (s *Selector) reelect(topologyChanged bool) {
	var t Topology
	if tp := s.topo.Load(); tp != nil {
		t = *tp
	}
	master := nodeInput{addr: t.Master}
	replicas := make([]nodeInput, len(t.Replicas))
	for i, addr := range t.Replicas {
		replicas[i] = nodeInput{addr: addr, lastIO: -1}
	}
	if m := s.meas; m != nil {
		if n, ok := m.nodes[t.Master]; ok && t.Master != "" {
			master = n
		}
		for i, addr := range t.Replicas {
			if n, ok := m.nodes[addr]; ok {
				replicas[i] = n
			}
			replicas[i].lag = m.lags[[2]string{t.Master, addr}]
		}
	}
	prev := s.cur.Load()
	res := elect(s.cfg, master, replicas, prev.electedAddrs)

	e := &election{
		lazy:          s.bound && !s.started.Load(),
		nearestMaster: res.nearestMaster,
		elected:       s.slotsFor(res.elected),
		fallback:      s.slotsFor(res.fallback),
		electedAddrs:  res.elected,
		table:         res.table,
		probed:        res.probed,
		rounds:        s.rounds,
	}
	e.inUse = res.elected
	if len(e.inUse) == 0 {
		e.inUse = res.fallback
	}
	s.install(e)

	// The replicas Pick no longer returns (elected, or Replica's slow
	// fallback) are evicted, whether or not the election changed.
	var n notice
	if s.env.Evict != nil {
		for _, addr := range prev.inUse {
			if !slices.Contains(e.inUse, addr) && slices.Contains(t.Replicas, addr) {
				n.evict = append(n.evict, addr)
			}
		}
	}
	if slices.Equal(prev.electedAddrs, res.elected) && prev.nearestMaster == res.nearestMaster {
		s.notify(n)
		return
	}
	reason, detail := describeChange(prev.electedAddrs, prev.table, res, !prev.probed && res.probed, topologyChanged)
	ev := Event{
		Time:                  time.Now(),
		MasterName:            s.env.MasterName,
		Round:                 s.rounds,
		Reason:                reason,
		Elected:               slices.Clone(res.elected),
		Previous:              slices.Clone(prev.electedAddrs),
		NearestMaster:         res.nearestMaster,
		PreviousNearestMaster: prev.nearestMaster,
		Detail:                detail,
	}
	s.log.Info("replica election changed", "rediskit.master_name", s.env.MasterName, "reason", reason,
		"elected", ev.Elected, "previous", ev.Previous, "nearest_master", ev.NearestMaster, "detail", detail)
	if s.cfg.Observer != nil {
		n.event = &ev
	}
	s.notify(n)
}

// notify queues n for the notices' goroutine. s.mu is held.
func (s *Selector) notify(n notice) {
	if s.closed || (n.event == nil && len(n.evict) == 0) {
		return
	}
	s.notices.Push(n)
}

// deliver performs one notice, on the notices' goroutine, without s.mu:
// its evictions, then its Event. After Close it does nothing: election
// changes not yet reported are dropped.
func (s *Selector) deliver(n notice) {
	s.mu.Lock()
	closed, evict, observe := s.closed, s.env.Evict, s.cfg.Observer
	s.mu.Unlock()
	if closed {
		return
	}
	for _, addr := range n.evict {
		evict(addr)
	}
	if n.event != nil {
		observe(*n.event)
	}
}

// EventsDropped is the number of election Events the Observer missed
// because it was too slow (see Config.Observer).
func (s *Selector) EventsDropped() uint64 { return s.notices.Dropped() }

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}
