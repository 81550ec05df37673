package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify"
	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/cachestore"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/oncewrite"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
	"github.com/rediskit/rediskit/internal/zero"
	"github.com/rediskit/rediskit/redisurl"
)

// front is the go-redis client whose command methods Client exposes. It
// never dials: its hook routes every command, pipeline and transaction.
type front = routing.Front

// Client is a go-redis client for a Redis Cluster. It has every go-redis
// command method; each command is sent to the master of its key's slot,
// redirects are followed, and failovers are handled with the rules in the
// package documentation. Create it with NewClient and Close it when done.
type Client struct {
	*front

	opts       Config
	nodes      *nodeSet
	topo       *topology
	pubsub     *pubsubRouter
	classifier *classify.Classifier
	// cursors are the SCAN cursors that could not be tagged (see scan.go).
	cursors routing.UntaggedCursors
	// durableW knows each master's replicas for durable writes (durable.go).
	durableW *durableWatch
	// once makes writes exactly-once (Config.ExactlyOnce; nil: off).
	once   *oncewrite.Writer
	stats  counters
	closed atomic.Bool
}

type counters struct {
	moved, ask, retries, readsRetried, writesRefused, writesRerun, writesHeld atomic.Uint64
	writesNotDurable                                                          atomic.Uint64
}

// Stats are a client's counters since it was made, and its current map.
type Stats struct {
	// Refreshes are the slot-map reads started, all causes together;
	// RefreshesByCause counts them by why they were started (every cause
	// is present, 0 or not); RefreshFailures those no node answered.
	Refreshes        uint64
	RefreshesByCause map[RefreshCause]uint64
	RefreshFailures  uint64
	// Moved and Ask are the MOVED and ASK redirects followed; Retries the
	// commands sent again after a refusal that proved they had not run
	// (TRYAGAIN, CLUSTERDOWN, LOADING, a dial failure, ...).
	Moved, Ask, Retries uint64
	// ReadsRetried are reads run again after a failure without an answer;
	// WritesRerun writes sent again after a refusal that proved they had
	// not run (once per call); WritesRefused writes failed with a
	// *MasterChangedError rather than run again; WritesHeld writes that
	// waited for a failing master's shard to name a master.
	ReadsRetried, WritesRerun, WritesRefused, WritesHeld uint64
	// WritesNotDurable are durable writes that failed with a
	// *NotDurableError, refused unsent or not confirmed
	// (EventWriteNotDurable); DurableReplicas the replicas a durable write
	// on each master must be confirmed by, as last checked, by master
	// address (nil: the check failed; empty before the first durable
	// write).
	WritesNotDurable uint64
	DurableReplicas  map[string][]string
	// MasterChanges are the times a refresh found a shard's slots on a new
	// master, the old one no master any more (EventMasterChanged);
	// SlotMoves the times it found slots moved between two masters
	// (EventSlotsMoved); MasterRecoveries the failing masters that
	// answered again and kept their slots.
	MasterChanges, SlotMoves, MasterRecoveries uint64
	// EventsDropped are the events a slow Observer missed (see
	// Config.Observer).
	EventsDropped uint64
	// SplitBrainHolds counts the holds of a shard's writes for a master
	// cut off from its replicas and the majority (EventMasterIsolated).
	SplitBrainHolds uint64
	// Masters are the masters of the current map, by address; Failing
	// those whose writes are held because they stopped answering;
	// Isolated those whose writes are held because they are cut off from
	// their replicas and the majority (see "Split brain" in the package
	// documentation).
	Masters, Failing, Isolated []string
	// Nodes counts the commands sent to each node the client has talked
	// to, sorted by address.
	Nodes []NodeStats
	// Cache are the client-side cache's counters (Config.Cache).
	Cache clientcache.Stats
}

// NodeStats counts the commands a client sent to one node.
type NodeStats struct {
	Addr          string
	Reads, Writes uint64 // commands sent, pipelined or not
	// Batched commands were auto-pipelined (Config.AutoPipeline, or an
	// auto-pipeliner's) in Batches round trips.
	Batches, Batched uint64
}

// NewClient returns a client of the cluster the seeds in opts.Addrs
// belong to. It returns at once; the first map is read in the background,
// and calls made before it is wait for it (within their context).
func NewClient(opts Config) (*Client, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Client{opts: o, classifier: classify.New()}
	if c.once, err = oncewrite.New(o.ExactlyOnce, o.WriteHoldTimeout, c.classifier, o.Logger); err != nil {
		return nil, fmt.Errorf("cluster: ExactlyOnce: %w", err)
	}
	c.nodes = &nodeSet{opts: &c.opts, live: map[string]*node{}, blocking: c.classifier.Blocking}
	if o.Cache != nil {
		c.nodes.cache = cachestore.New(*o.Cache, c.classifier, o.Logger)
	}
	c.topo = newTopology(&c.opts, c.nodes)
	c.pubsub = newPubsubRouter(c)
	c.durableW = newDurableWatch(c)
	fo := c.opts.nodeOptions("cluster")
	c.front = c.newFront(fo)
	return c, nil
}

// NewClientFromURL returns a client for the cluster a URL names, read by
// redisurl.Parse: redis+cluster://[user:password@]host1[:port],host2[:port],…
// (rediss+cluster:// for TLS), or go-redis's cluster form
// redis://user:password@host1:port?addr=host2:port&addr=… (rediss://). A
// redis:// or rediss:// URL without addr is taken as a cluster whose one
// host is the only seed: any node will do, the client learns the others
// from it.
//
// The URL's seeds and credentials replace opts.Addrs, Username and
// Password; its TLS (rediss, with caFile, certFile, keyFile, serverName,
// insecureSkipVerify; the system's roots without caFile) is used when
// opts.TLSConfig is nil; its dialTimeout, readTimeout and writeTimeout
// apply where opts leaves them zero. opts supplies the rest.
//
// A sentinel or unix:// URL is refused, and so is a database other than
// 0. The URL's readFrom applies when opts.ReadFrom is empty; the
// URL's clientName applies when opts.ClientName is empty. Errors wrap
// a *redisurl.Error (errors.As) and never show a password.
func NewClientFromURL(rawURL string, opts Config) (*Client, error) {
	u, err := redisurl.Parse(rawURL)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return NewClientFromConfig(u, opts)
}

// NewClientFromConfig is NewClientFromURL for a URL already parsed (and
// perhaps given credentials from elsewhere, as the CLI does from its
// environment). u is not modified.
func NewClientFromConfig(u *redisurl.Config, opts Config) (*Client, error) {
	cp := *u // u is the caller's: the standalone case below rewrites Addrs
	u = &cp
	var err error
	refuse := func(field, value, reason, hint string) (*Client, error) {
		return nil, fmt.Errorf("cluster: %s: %w", u.Redacted(), &redisurl.Error{Field: field, Value: value, Reason: reason, Hint: hint})
	}
	switch {
	case u.Kind == redisurl.Standalone:
		u.Addrs = []string{u.Addr}
	case u.Kind != redisurl.Cluster:
		return refuse("scheme", "", "a "+string(u.Kind)+" URL, not a cluster URL",
			"want redis+cluster://host1,host2, rediss+cluster:// for TLS, or redis://host1?addr=host2")
	}
	if u.DB != 0 {
		return refuse("db", strconv.Itoa(u.DB), "Redis Cluster has only database 0", "remove the database from the URL")
	}
	if opts.ClientName == "" {
		opts.ClientName = u.ClientName
	}
	if opts.ReadFrom == "" {
		opts.ReadFrom = u.ReadFrom
	}
	opts.Addrs, opts.Username, opts.Password = slices.Clone(u.Addrs), u.Username, u.Password
	if opts.TLSConfig == nil {
		if opts.TLSConfig, err = u.TLSConfig(); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	zero.Default(&opts.DialTimeout, u.DialTimeout)
	zero.Default(&opts.ReadTimeout, u.ReadTimeout)
	zero.Default(&opts.WriteTimeout, u.WriteTimeout)
	return NewClient(opts)
}

// String names the client by its seeds, without credentials.
func (c *Client) String() string {
	return "cluster.Client(" + strings.Join(c.opts.Addrs, ",") + ")"
}

// Close stops the topology goroutine and closes every node's client.
// Calls in flight fail; calls after return ErrClosed. Safe to call twice.
func (c *Client) Close() error {
	if !c.closed.CompareAndSwap(false, true) {
		return nil
	}
	c.front.CloseAutoPipelines() // first: closing them drains their batches
	perr := c.pubsub.close()
	c.durableW.close() // before the topology: it follows its snapshots
	c.topo.close()
	return errors.Join(perr, c.nodes.close(), c.front.CloseFront())
}

// Stats returns the client's counters.
func (c *Client) Stats() Stats {
	t := c.topo
	st := Stats{RefreshesByCause: make(map[RefreshCause]uint64, numRefreshCauses), RefreshFailures: t.refreshFailures.Load(),
		Moved: c.stats.moved.Load(), Ask: c.stats.ask.Load(), Retries: c.stats.retries.Load(),
		ReadsRetried: c.stats.readsRetried.Load(), WritesRerun: c.stats.writesRerun.Load(),
		WritesRefused: c.stats.writesRefused.Load(), WritesHeld: c.stats.writesHeld.Load(),
		MasterChanges: t.masterChanges.Load(), SlotMoves: t.slotsMoved.Load(), MasterRecoveries: t.recoveries.Load(), SplitBrainHolds: t.splitBrainHolds.Load(),
		EventsDropped: t.events.Dropped(), WritesNotDurable: c.stats.writesNotDurable.Load(), DurableReplicas: c.durableReplicasOf(),
		Cache: c.nodes.cache.Stats()}
	for cause := range numRefreshCauses {
		n := t.refreshes[cause].Load()
		st.RefreshesByCause[cause] = n
		st.Refreshes += n
	}
	snap := t.snap.Load()
	for _, m := range snap.masters {
		st.Masters = append(st.Masters, m.master.addr)
		if snap.suspect[m.master] {
			st.Failing = append(st.Failing, m.master.addr)
		}
		if snap.isolated[m.master] != "" {
			st.Isolated = append(st.Isolated, m.master.addr)
		}
	}
	for _, n := range c.nodes.all() {
		b := n.batch.Stats()
		st.Nodes = append(st.Nodes, NodeStats{Addr: n.addr, Reads: n.reads.Load(), Writes: n.writes.Load(), Batches: b.Batches, Batched: b.Commands})
	}
	return st
}

// ForEachMaster runs fn on each master's client of the current map, all at
// once, and returns their errors joined.
func (c *Client) ForEachMaster(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error {
	return c.forEach(ctx, false, fn)
}

// ForEachShard runs fn on the client of every node of the current map,
// masters and replicas, all at once, and returns their errors joined.
func (c *Client) ForEachShard(ctx context.Context, fn func(ctx context.Context, client *redis.Client) error) error {
	return c.forEach(ctx, true, fn)
}

func (c *Client) forEach(ctx context.Context, replicas bool, fn func(context.Context, *redis.Client) error) error {
	snap, err := c.topo.ready(ctx)
	if err != nil {
		return err
	}
	var nodes []*node
	for _, m := range snap.masters {
		nodes = append(nodes, m.master)
		if replicas {
			nodes = append(nodes, m.replicas...)
		}
	}
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		safe.Go(&wg, func(err error) { errs[i] = err }, func() {
			if err := fn(ctx, n.client); err != nil {
				errs[i] = fmt.Errorf("%s: %w", n.addr, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// seed is the first seed's node (made at start, so within maxNodes).
func (c *Client) seed() *node { return c.nodes.get(c.opts.Addrs[0]) }

// slotOf is the slot of the command's first key, -1 for a command without
// one.
func (c *Client) slotOf(cmd redis.Cmder) int {
	args := cmd.Args()
	return slotAt(args, c.classifier.FirstKey(args))
}

// slotAt is the slot of args[i], the command's first key (-1: none).
func slotAt(args []any, i int) int {
	if i < 0 || i >= len(args) {
		return -1
	}
	key, ok := classify.KeyString(args[i])
	if !ok {
		return -1
	}
	return Slot(key)
}

func (c *Client) process(ctx context.Context, cmd redis.Cmder) error {
	if c.closed.Load() {
		cmd.SetErr(ErrClosed)
		return ErrClosed
	}
	if sc, ok := routing.FindScan(cmd); ok {
		return c.scan(ctx, sc)
	}
	args := cmd.Args()
	readOnly, first := c.classifier.Route(args) // one look at the command table
	write, slot := !readOnly, slotAt(args, first)
	if write {
		q, err := c.once.Wrap(ctx, cmd) // exactly-once writes (Config.ExactlyOnce)
		if err != nil {
			return err
		}
		cmd = q
	}
	err := c.run(ctx, slot, write, cmd)
	if err != nil && !write {
		// Every re-route tried: a cached read may fall back on its
		// entry (clientcache.Config.MaxStale). Not a pipeline's read
		// run again alone (afterPipeline): pipelines are not cached.
		return c.nodes.cache.FailOpen(ctx, cmd, err)
	}
	return err
}

// attempt is the state of one command's run across its sends.
type attempt struct {
	slot      int
	write     bool
	direct    *node // the next send's node, named by MOVED or ASK
	asking    bool  // the next send follows ASK
	reran     bool  // a read was already run again
	rerun     bool  // a write was sent again after a refusal (reported once)
	held      bool  // a write waited for its shard's master (counted once)
	failures  int   // sends that failed
	redirects int
	// began is when the call began, on callClock; the hold ends
	// WriteHoldTimeout later (holdEnd). Read as a duration because
	// time.Now reads two clocks where time.Since reads one, and a cache
	// hit's whole call is a few hundred nanoseconds.
	began, hold time.Duration
	// once: the command is an exactly-once write (oncewrite), sent again
	// whatever its failure, until the hold ends.
	once bool
	// A read sent to a replica (readfrom.go): its replica-read client and
	// the done of the election's pick, for the next send; and a replica
	// that gave no answer, which the read's next try avoids.
	rd    *reader
	done  func()
	avoid *node
	// last is the node of the last send (nil: none yet).
	last *node
}

// callClock is the origin of attempt.began. Set once, never changed.
var callClock = time.Now()

// newAttempt is the state of a call that begins now.
func (c *Client) newAttempt(slot int, write bool) *attempt {
	return &attempt{slot: slot, write: write, began: time.Since(callClock), hold: c.opts.WriteHoldTimeout}
}

// holdEnd is when the call's hold ends: WriteHoldTimeout after it began.
func (a *attempt) holdEnd() time.Time { return callClock.Add(a.began + a.hold) }

// run sends one command to the master of slot and applies the rules of the
// package documentation: redirects followed, refusals retried, a failing
// master's writes held until the cluster names another, a read re-run
// once, a write whose outcome is unknown never re-run.
func (c *Client) run(ctx context.Context, slot int, write bool, cmd redis.Cmder) error {
	a := c.newAttempt(slot, write)
	a.once = oncewrite.Is(cmd)
	err := c.runAttempts(ctx, cmd, a)
	if write && a.last != nil {
		a.last.cache.Wrote(cmd, nil) // read your writes (cachestore)
	}
	return c.seal(cmd, nil, err, a.last, slot, write, nil)
}

// runAttempts is run's loop: each send, and the judgement of its failure.
func (c *Client) runAttempts(ctx context.Context, cmd redis.Cmder, a *attempt) error {
	for {
		snap, err := c.topo.ready(ctx)
		if err != nil {
			cmd.SetErr(err)
			return err
		}
		n, err := c.pick(ctx, snap, a)
		if err != nil {
			cmd.SetErr(err)
			return err
		}
		if n == nil {
			continue // the map changed: look again
		}
		a.last = n
		if a.once {
			err = n.script.Send(ctx, c.once, n.addr, n.ctl, cmd, nil, func() error { return c.sendOne(ctx, n, cmd, a) })
		} else {
			err = c.sendOne(ctx, n, cmd, a)
		}
		a.direct, a.asking = nil, false
		if a.once && c.confirmAgain(ctx, snap, err, a) {
			cmd.SetErr(nil)
			continue
		}
		if c.settled(err) {
			return err
		}
		if failure.CallerEnded(ctx) {
			// The caller's deadline: no retry, but say whether it ran.
			return c.nodeError(n, a.slot, a.write, cmd, err)
		}
		a.failures++
		again, err := c.judge(ctx, snap, n, cmd, err, a)
		if !again {
			return err
		}
		cmd.SetErr(nil)
	}
}

// confirmAgain decides whether an exactly-once durable write that ran and
// was not confirmed (a *NotDurableError that may have executed) is sent
// again, after a pause, within the hold: sent again, it returns its
// stored reply where its token survived, or runs where it was lost, and
// WAIT confirms what the master holds then.
func (c *Client) confirmAgain(ctx context.Context, snap *snapshot, err error, a *attempt) bool {
	var nde *NotDurableError
	if !errors.As(err, &nde) || !nde.MayHaveExecuted || failure.CallerEnded(ctx) || time.Now().After(a.holdEnd()) {
		return false
	}
	a.failures++
	if c.pause(ctx, snap, a.slot, a.failures) != nil {
		return false
	}
	c.stats.retries.Add(1)
	return true
}

// sendOne is one send of a command's run: durable, or to a replica or
// the master.
func (c *Client) sendOne(ctx context.Context, n *node, cmd redis.Cmder, a *attempt) error {
	if a.write && c.durable(ctx) {
		return c.sendDurable(ctx, n, cmd, a) // durable.go
	}
	return c.sendAttempt(ctx, n, cmd, a) // a replica's or the master's (readfrom.go)
}

// settled reports whether a send's err ends the call as it is: success,
// a reply that signals no failure, the client's own Close, or a durable
// write's verdict (a WAIT that timed out is no reason to judge the write
// again).
func (c *Client) settled(err error) bool {
	return err == nil || !failure.Signal(err) || errors.Is(err, redis.ErrClosed) && c.closed.Load() || isNotDurable(err)
}

// pick returns the node of the next send: the one a redirect named, else
// the slot's master. It returns nil after waiting for the map to change
// when there is no master, or a write's master is failing.
func (c *Client) pick(ctx context.Context, snap *snapshot, a *attempt) (*node, error) {
	if a.direct != nil {
		return a.direct, nil
	}
	if r, again, err := c.replicaRead(ctx, snap, a); r != nil || again || err != nil {
		return r, err // a replica, the map changed, or no replica under Replica
	}
	n := snap.master(a.slot)
	if n != nil && (!a.write || !snap.holds(n)) {
		return n, nil
	}
	if a.write && !a.held {
		a.held = true
		c.stats.writesHeld.Add(1)
	}
	if err := c.waitChange(ctx, snap, a.holdEnd()); err != nil {
		return nil, noMaster(snap, a.slot, n, err)
	}
	return nil, nil
}

// noMaster is the error of a write of slot held (not sent) until err: the
// master n cut off, when the split-brain hold held it.
func noMaster(snap *snapshot, slot int, n *node, err error) *NoMasterError {
	e := &NoMasterError{Slot: slot, Cause: err}
	if n != nil && snap.isolated[n] != "" {
		e.Isolated, e.IsolatedReason = n.addr, snap.isolated[n]
	}
	return e
}

// judge decides what follows a failed send: whether to send again, or the
// error to return.
func (c *Client) judge(ctx context.Context, snap *snapshot, n *node, cmd redis.Cmder, err error, a *attempt) (bool, error) {
	if r, ok := failure.ParseRedirect(err); ok {
		a.redirects++
		if a.redirects > c.opts.MaxRedirects {
			return false, err
		}
		a.direct = c.nodes.get(r.Addr)
		if a.direct == nil {
			return false, fmt.Errorf("cluster: %s names %s, past the %d nodes a client keeps: %w", n.addr, r.Addr, maxNodes, err)
		}
		if r.Ask {
			a.asking = true
			c.stats.ask.Add(1)
		} else {
			c.stats.moved.Add(1)
			c.topo.moved(r.Slot, r.Addr)
		}
		return true, nil
	}
	notExecuted := failure.NotExecuted(err)
	if !notExecuted {
		// No answer: the command may have run. A write's verdict waits
		// for the map to say whether its slot moved; an exactly-once
		// write is sent again instead.
		c.topo.failed(n, err)
		if a.write && !a.once {
			return false, c.writeUnknown(ctx, snap, n, a.slot, cmd, err, a.holdEnd())
		}
	}
	// Again: the same node may serve it after a pause, or the map
	// changes meanwhile.
	if failure.Next(failure.Attempt{Write: a.write, NotExecuted: notExecuted, Again: true, Reran: a.reran, ExactlyOnce: a.once}) != failure.Rerun {
		return false, c.nodeError(n, a.slot, a.write, cmd, err)
	}
	if notExecuted || a.once {
		// It did not run (or it is exactly-once): retry after the map
		// changes, or after a short pause (TRYAGAIN, LOADING, CLUSTERDOWN
		// while another shard fails over: the same node may serve it
		// soon), until the hold ends. Redirects alone count against
		// MaxRedirects. (A failure without an answer told the map above.)
		switch {
		case failure.IsDial(err):
			c.topo.failed(n, err)
		case notExecuted:
			c.topo.kick(RefreshRefused)
		}
		if time.Now().After(a.holdEnd()) || c.pause(ctx, snap, a.slot, a.failures) != nil {
			return false, c.nodeError(n, a.slot, a.write, cmd, err)
		}
		c.stats.retries.Add(1)
		if a.write && !a.rerun {
			a.rerun = true
			c.stats.writesRerun.Add(1)
			c.topo.emit(Event{Kind: EventWriteRerun, Master: n.addr, Slot: a.slot, Err: err})
		}
		return true, nil
	}
	a.reran = true
	c.stats.readsRetried.Add(1)
	c.topo.emit(Event{Kind: EventReadRetried, Master: n.addr, Slot: a.slot, Err: err})
	_ = c.waitChange(ctx, snap, time.Now().Add(c.opts.FailoverPollInterval*3))
	return true, nil
}

// writeUnknown fails a write whose outcome is unknown: with a
// *MasterChangedError once the cluster names another master for its slot
// (waiting for it within the hold), else a *NodeError.
func (c *Client) writeUnknown(ctx context.Context, snap *snapshot, old *node, slot int, cmd redis.Cmder, cause error, holdEnd time.Time) error {
	for {
		m := snap.master(slot)
		moved := m != nil && m != old && slot >= 0
		if failure.Next(failure.Attempt{Write: true, Moved: moved}) == failure.Refuse {
			c.stats.writesRefused.Add(1)
			err := &MasterChangedError{Slot: slot, OldMaster: old.addr, NewMaster: m.addr, MayHaveExecuted: true, Cause: cause}
			c.topo.emit(Event{Kind: EventWriteRefused, Master: m.addr, OldMaster: old.addr, Slot: slot, Err: err})
			if cmd != nil {
				cmd.SetErr(err)
			}
			return err
		}
		if c.waitChange(ctx, snap, holdEnd) != nil {
			return c.nodeError(old, slot, true, cmd, cause)
		}
		snap = c.topo.snap.Load()
	}
}

// nodeError is err (on n, for slot) as the caller gets it: a reply as it
// is, except a refusal that proves the work did not run (TRYAGAIN,
// CLUSTERDOWN, ... until the hold ended), which is a *NodeError saying so,
// as a failure without an answer is. cmd, when not nil, gets it too.
func (c *Client) nodeError(n *node, slot int, write bool, cmd redis.Cmder, err error) error {
	if failure.Reply(err) && !failure.NotExecuted(err) {
		return err
	}
	ne := &NodeError{Addr: n.addr, Slot: slot, Write: write, MayHaveExecuted: !failure.NotExecuted(err), Err: err}
	if cmd != nil {
		cmd.SetErr(ne)
	}
	return ne
}

// send runs cmd on n, after ASKING on the same connection when asking;
// auto-pipelined (n's Batcher) with Config.AutoPipeline or from one of
// the client's auto-pipeliners.
func (c *Client) send(ctx context.Context, n *node, cmd redis.Cmder, asking, write bool) error {
	if !asking {
		// (A read ASKed to another node is not cached: its slot is moving.)
		if ttl, ok := n.cache.Asked(ctx); ok {
			// A hit is not counted as sent to n: the counter is a cache
			// line every core's hits would write (see sentinel's runRead).
			return n.cache.Do(cmd, ttl, func() error {
				n.count(write)
				return c.sendOn(ctx, n.client, n.batch, cmd)
			})
		}
		n.count(write)
		return c.sendOn(ctx, n.client, n.batch, cmd)
	}
	n.count(write)
	_, _ = n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "ASKING")
		return p.Process(ctx, cmd)
	})
	return cmd.Err()
}

// sendOn sends cmd on a node's pool, or its Batcher when auto-pipelined
// (Config.AutoPipeline, or from one of the client's auto-pipeliners).
func (c *Client) sendOn(ctx context.Context, pool *redis.Client, batch *routing.Batcher, cmd redis.Cmder) error {
	if c.opts.AutoPipeline || routing.Batching(ctx) {
		return batch.Do(ctx, cmd)
	}
	return pool.Process(ctx, cmd)
}

// waitChange waits until the snapshot is replaced, until, or ctx ends.
func (c *Client) waitChange(ctx context.Context, snap *snapshot, until time.Time) error {
	d := time.Until(until)
	if d <= 0 {
		return errors.New("the cluster named no master in time")
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-snap.next:
		return nil
	case <-t.C:
		return fmt.Errorf("the cluster named no master within %v", c.opts.WriteHoldTimeout)
	case <-ctx.Done():
		return ctx.Err()
	case <-c.topo.stop:
		return ErrClosed
	}
}

// pause waits before a retry after a refusal: a backoff of 10 ms doubling
// per attempt, at most 200 ms, cut short when the map names another master
// for slot, or marks its master failing (a map re-read that changed
// nothing for the slot does not count: the refusals themselves ask for
// those).
func (c *Client) pause(ctx context.Context, snap *snapshot, slot, attempt int) error {
	d := min(10*time.Millisecond<<min(attempt-1, 5), 200*time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	was := snap.master(slot)
	for {
		select {
		case <-snap.next:
			snap = c.topo.snap.Load()
			if m := snap.master(slot); m != was || m != nil && snap.suspect[m] {
				return nil
			}
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-c.topo.stop:
			return ErrClosed
		}
	}
}

// processPipeline runs a transaction on its slot's master, refusing one
// whose keys span slots, and a pipeline split per master, its commands
// keeping their order on each node; commands refused there with a
// redirect or a refusal that proves they did not run are run again alone,
// the others keep their results.
func (c *Client) processPipeline(ctx context.Context, cmds []redis.Cmder) error {
	if c.closed.Load() {
		routing.SetErrs(nil, cmds, ErrClosed)
		return ErrClosed
	}
	if len(cmds) == 0 {
		return nil
	}
	// Exactly-once writes (Config.ExactlyOnce), each on its own; a
	// transaction stays as it is (or is refused, when the call insists).
	cmds, _, err := c.once.WrapPipeline(ctx, cmds, routing.IsTx(cmds))
	if err != nil {
		return err
	}
	if routing.IsTx(cmds) {
		return c.processTx(ctx, cmds)
	}
	snap, err := c.waitIsolated(ctx, cmds)
	if err != nil {
		routing.SetErrs(nil, cmds, err)
		return c.seal(nil, cmds, err, nil, -1, false, nil) // nothing was sent
	}
	var groups []group // one per master: a handful, searched in order
	var pages []scanPage
	slots := make([]int, len(cmds))
	for i, q := range cmds {
		s := c.slotOf(q)
		slots[i] = s
		n := snap.master(s)
		if sc, ok := routing.FindScan(q); ok {
			// A SCAN-family page runs where its cursor was issued.
			p, err := c.scanTarget(snap, sc)
			if err != nil {
				q.SetErr(err)
				continue
			}
			sc.SetCursor(p.nodeCur)
			pages = append(pages, p)
			n = p.n
		}
		if n == nil {
			n = c.seed() // answers MOVED, or CLUSTERDOWN
		}
		gi := slices.IndexFunc(groups, func(g group) bool { return g.n == n })
		if gi < 0 {
			groups = append(groups, group{n: n, cmds: make([]redis.Cmder, 0, len(cmds))})
			gi = len(groups) - 1
		}
		groups[gi].cmds = append(groups[gi].cmds, q)
		if !c.classifier.ReadOnly(q) {
			groups[gi].writes++
		}
	}
	var durables []durableGroup
	if c.durable(ctx) {
		groups, durables = c.prepareDurable(ctx, groups, time.Now().Add(c.opts.WriteHoldTimeout)) // durable.go
	}
	// Read-only groups may go to a replica of their shard (readfrom.go).
	groups, release := c.routeReadGroups(ctx, snap, groups)
	for _, g := range groups { // one count a node: the counters are shared
		g.n.writes.Add(g.writes)
		g.n.reads.Add(uint64(len(g.cmds)) - g.writes)
	}
	c.runGroups(ctx, groups)
	release()
	c.judgeDurable(durables)
	for _, p := range pages {
		c.scanDone(snap, p)
	}
	var first error
	for i, q := range cmds {
		err := c.afterPipeline(ctx, snap, q, slots[i])
		if err != nil && !failure.IsNil(err) && first == nil {
			first = err
		}
	}
	if durables != nil {
		first = c.finishDurable(durables, first)
	}
	return c.seal(nil, cmds, first, nil, -1, false, func(q redis.Cmder) *node { return groupOf(groups, q) })
}

// groupOf is the node q was sent to in groups (nil: none, when it was not
// sent), or, for q nil, that of the first command that failed.
func groupOf(groups []group, q redis.Cmder) *node {
	for _, g := range groups {
		for _, gq := range g.cmds {
			if gq == q || q == nil && gq.Err() != nil && !failure.IsNil(gq.Err()) {
				return g.n
			}
		}
	}
	return nil
}

// waitIsolated returns the map a pipeline is routed on: once none of its
// writes' masters is cut off (the split-brain hold), waiting for that
// within WriteHoldTimeout; past it, a *NoMasterError for the first held
// write's slot (nothing was sent).
func (c *Client) waitIsolated(ctx context.Context, cmds []redis.Cmder) (*snapshot, error) {
	holdEnd := time.Now().Add(c.opts.WriteHoldTimeout)
	for counted := false; ; counted = true {
		snap, err := c.topo.ready(ctx)
		if err != nil || len(snap.isolated) == 0 {
			return snap, err
		}
		slot, held := -1, (*node)(nil)
		for _, q := range cmds {
			if s := c.slotOf(q); s >= 0 && snap.isolated[snap.master(s)] != "" && !c.classifier.ReadOnly(q) {
				slot, held = s, snap.master(s)
				break
			}
		}
		if held == nil {
			return snap, nil
		}
		if !counted {
			c.stats.writesHeld.Add(1)
		}
		if err := c.waitChange(ctx, snap, holdEnd); err != nil {
			return nil, noMaster(snap, slot, held, err)
		}
	}
}

// group is a pipeline's commands for one node, in the pipeline's order.
type group struct {
	n      *node
	cmds   []redis.Cmder
	writes uint64  // of cmds
	rd     *reader // a read-only group sent to the replica n (readfrom.go)
	// confirm are a durable part's WAIT (and WAITAOF), sent after cmds.
	confirm []redis.Cmder
}

// runGroups sends each group to its node, all at once, and returns when
// every one has its results.
func (c *Client) runGroups(ctx context.Context, groups []group) {
	var wg sync.WaitGroup
	for i, g := range groups {
		run := func() {
			_ = g.n.script.Send(ctx, c.once, g.n.addr, g.n.ctl, nil, g.cmds, func() error {
				return routing.Run(ctx, g.target(), nil, append(g.cmds, g.confirm...))
			})
			if g.writes > 0 && g.rd == nil {
				g.n.cache.Wrote(nil, g.cmds) // read your writes (cachestore)
			}
		}
		if i == len(groups)-1 {
			if err := safe.Call(run); err != nil { // the last on this goroutine
				routing.SetErrs(nil, g.cmds, err)
			}
			continue
		}
		safe.Go(&wg, func(err error) { routing.SetErrs(nil, g.cmds, err) }, run)
	}
	wg.Wait()
}

// afterPipeline judges one command of a pipeline by its own result: one
// that provably did not run (a redirect, a refusal, a dial failure), and a
// read that got no answer, run again alone; a write that got no answer
// keeps a *NodeError saying it may have executed.
func (c *Client) afterPipeline(ctx context.Context, snap *snapshot, q redis.Cmder, slot int) error {
	err := q.Err()
	if err == nil || !failure.Signal(err) || failure.CallerEnded(ctx) {
		return err
	}
	write := !c.classifier.ReadOnly(q)
	notExecuted := failure.NotExecuted(err)
	if failure.Next(failure.Attempt{Write: write, NotExecuted: notExecuted, Again: true, ExactlyOnce: oncewrite.Is(q)}) == failure.Rerun {
		if !notExecuted && !write {
			c.stats.readsRetried.Add(1)
			c.topo.emit(Event{Kind: EventReadRetried, Slot: slot, Err: err})
		}
		q.SetErr(nil)
		if sc, ok := routing.FindScan(q); ok {
			return c.scan(ctx, sc)
		}
		return c.run(ctx, slot, write, q)
	}
	n := snap.master(slot)
	if n == nil {
		n = c.seed()
	}
	c.topo.failed(n, err)
	return c.nodeError(n, slot, true, q, err)
}

// processTx runs a transaction on the master of its one slot.
func (c *Client) processTx(ctx context.Context, cmds []redis.Cmder) error {
	slot, err := c.txSlot(cmds)
	if err != nil {
		routing.SetErrs(nil, cmds, err)
		return err
	}
	var last *node // the node of the last send
	err = c.txAttempts(ctx, cmds, slot, &last)
	if last != nil {
		last.cache.Wrote(nil, cmds) // read your writes (cachestore)
	}
	return c.seal(nil, cmds, err, last, slot, true, nil)
}

// txAttempts is processTx's loop: each send of the transaction, and the
// judgement of its failure. last is set to the node of each send.
func (c *Client) txAttempts(ctx context.Context, cmds []redis.Cmder, slot int, last **node) error {
	holdEnd := time.Now().Add(c.opts.WriteHoldTimeout)
	redirects := 0
	var ask *node // the node an ASK named: the next attempt runs there, after ASKING
	for attempt := 0; ; attempt++ {
		snap, err := c.topo.ready(ctx)
		if err != nil {
			routing.SetErrs(nil, cmds, err)
			return err
		}
		n, asking := snap.master(slot), ask != nil
		if asking {
			n, ask = ask, nil
		}
		if n == nil || snap.holds(n) {
			if err := c.waitChange(ctx, snap, holdEnd); err != nil {
				err = noMaster(snap, slot, n, err)
				routing.SetErrs(nil, cmds, err)
				return err
			}
			continue
		}
		runTx, err := c.txRunner(ctx, n, slot, holdEnd, asking) // durable.go
		if err != nil {
			routing.SetErrs(nil, cmds, err)
			return err
		}
		pages, err := c.txScanPages(snap, n, cmds)
		if err != nil {
			routing.SetErrs(nil, cmds, err)
			return err
		}
		n.writes.Add(1) // a transaction counts as one write
		*last = n
		err = runTx(ctx, cmds)
		for _, p := range pages {
			c.scanDone(snap, p)
		}
		var again bool
		if ask, again = c.txAgain(ctx, cmds, err, &redirects, holdEnd); !again {
			if noAnswer(err) {
				// No answer to the EXEC: it may have run.
				c.topo.failed(n, err)
				ne := &NodeError{Addr: n.addr, Slot: slot, Write: true, MayHaveExecuted: true, Err: err}
				routing.SetErrs(nil, cmds, ne)
				return ne
			}
			return err
		}
		if err := c.pause(ctx, snap, slot, attempt+1); err != nil {
			return err
		}
		c.stats.retries.Add(1)
		routing.SetErrs(nil, cmds, nil)
	}
}

// txAgain decides whether a transaction that failed with err (its
// commands' errors in cmds) runs again: only after a refusal that proves
// nothing ran (a MOVED or ASK queued command aborts the EXEC), redirects
// at most MaxRedirects times (counted in redirects), the other refusals
// (CLUSTERDOWN while another shard fails over, TRYAGAIN, LOADING) until
// holdEnd, as a single command's; never past the caller's context, and
// never after a durable verdict (the EXEC ran, whatever its WAIT's
// failure says). When it runs again, the map is told of a MOVED or a
// refresh is asked for, and ask is the node an ASK named: the next
// attempt runs there, after ASKING.
func (c *Client) txAgain(ctx context.Context, cmds []redis.Cmder, err error, redirects *int, holdEnd time.Time) (ask *node, again bool) {
	if err == nil || isNotDurable(err) || failure.CallerEnded(ctx) {
		return nil, false
	}
	notExecuted := failure.ProvablyNotExecuted(c.classifier, nil, cmds, err)
	if failure.Next(failure.Attempt{Write: true, NotExecuted: notExecuted, Again: true}) != failure.Rerun {
		return nil, false
	}
	r, redirected := failure.ParseRedirect(firstRedirect(cmds, err))
	switch {
	case redirected:
		*redirects++
		if *redirects > c.opts.MaxRedirects {
			return nil, false
		}
	case time.Now().After(holdEnd):
		return nil, false
	}
	switch {
	case redirected && r.Ask:
		if ask = c.nodes.get(r.Addr); ask == nil {
			return nil, false // past the nodes a client keeps
		}
		c.stats.ask.Add(1)
	case redirected:
		c.stats.moved.Add(1)
		c.topo.moved(r.Slot, r.Addr)
	default:
		c.topo.kick(RefreshRefused)
	}
	return ask, true
}

// noAnswer reports a transaction's failure without an answer to its
// EXEC: not a reply, not a refusal that proves it did not run, not a
// durable verdict (the EXEC was answered).
func noAnswer(err error) bool {
	return err != nil && !failure.Reply(err) && !failure.NotExecuted(err) && !isNotDurable(err)
}

// txSlot is the one slot of a transaction's keys (-1: none), or a
// *CrossSlotError naming its slots.
func (c *Client) txSlot(cmds []redis.Cmder) (int, error) {
	slot := -1
	var seen []int
	for _, q := range cmds[1 : len(cmds)-1] {
		s := c.slotOf(q)
		if s < 0 {
			continue
		}
		if !slices.Contains(seen, s) {
			seen = append(seen, s)
		}
		slot = s
	}
	if len(seen) > 1 {
		slices.Sort(seen)
		return -1, &CrossSlotError{Slots: seen}
	}
	return slot, nil
}

func firstRedirect(cmds []redis.Cmder, err error) error {
	for _, q := range cmds {
		if _, ok := failure.ParseRedirect(q.Err()); ok {
			return q.Err()
		}
	}
	return err
}

// Watch runs fn in a transaction watching keys, on the master of their
// slot: the keys (and the transaction's) must share one slot, or a
// *CrossSlotError is returned before anything is sent. While the slot's
// master is failing, Watch waits (within WriteHoldTimeout) as writes do;
// when WATCH, fn's commands or the EXEC are refused in a way that proves
// nothing ran (MOVED, a dial failure, CLUSTERDOWN, EXECABORT, ...), fn is
// run again from the start on the slot's master of a fresh map. A failure
// without an answer is never run again: the EXEC may have been sent, so it
// is a *MasterChangedError or *NodeError saying it may have executed.
func (c *Client) Watch(ctx context.Context, fn func(*redis.Tx) error, keys ...string) error {
	slot := -1
	for _, k := range keys {
		s := Slot(k)
		if slot >= 0 && s != slot {
			return &CrossSlotError{Slots: []int{min(slot, s), max(slot, s)}}
		}
		slot = s
	}
	var (
		own  error // fn's last error: the caller's own
		last *node // the node of the last send
	)
	err := c.watchAttempts(ctx, func(tx *redis.Tx) error { own = fn(tx); return own }, slot, &last, keys)
	if failure.Answered(nil, nil, err) {
		return err
	}
	return failure.Seal(nil, nil, err, failure.Sealer{Typed: typed, Own: own,
		Wrap: func(_ redis.Cmder, err error, may bool) error {
			if last == nil {
				return &NoMasterError{Slot: slot, Cause: err}
			}
			return &NodeError{Addr: last.addr, Slot: slot, Write: true, MayHaveExecuted: may, Err: err}
		}})
}

// watchAttempts is Watch's loop: each run of fn on the slot's master, and
// the judgement of its failure. last is set to the node of each run.
func (c *Client) watchAttempts(ctx context.Context, fn func(*redis.Tx) error, slot int, last **node, keys []string) error {
	holdEnd := time.Now().Add(c.opts.WriteHoldTimeout)
	for attempt := 1; ; attempt++ {
		snap, err := c.topo.ready(ctx)
		if err != nil {
			return err
		}
		n := snap.master(slot)
		if n == nil || snap.holds(n) {
			if err := c.waitChange(ctx, snap, holdEnd); err != nil {
				return noMaster(snap, slot, n, err)
			}
			continue
		}
		body, err := c.watchBody(ctx, n, slot, holdEnd, fn) // durable.go
		if err != nil {
			return err
		}
		*last = n
		err = n.client.Watch(ctx, body, keys...)
		if c.settled(err) {
			return err
		}
		if !failure.NotExecuted(err) {
			// No answer, perhaps to the EXEC: it may have run.
			c.topo.failed(n, err)
			if failure.CallerEnded(ctx) {
				return c.nodeError(n, slot, true, nil, err)
			}
			return c.writeUnknown(ctx, snap, n, slot, nil, err, holdEnd)
		}
		if r, ok := failure.ParseRedirect(err); ok && !r.Ask {
			c.stats.moved.Add(1)
			c.topo.moved(r.Slot, r.Addr)
		} else if failure.IsDial(err) {
			c.topo.failed(n, err)
		} else {
			c.topo.kick(RefreshRefused)
		}
		if failure.CallerEnded(ctx) || time.Now().After(holdEnd) || c.pause(ctx, snap, slot, attempt) != nil {
			return c.nodeError(n, slot, true, nil, err)
		}
		c.stats.retries.Add(1)
	}
}

// The client is a go-redis UniversalClient: code written against one
// (instrumentation, libraries taking a UniversalClient) takes it.
var _ redis.UniversalClient = (*Client)(nil)
