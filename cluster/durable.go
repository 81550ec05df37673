package cluster

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/callopt"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
)

// Durable writes: the options' defaults, the per-call override, the
// background watch of each master's replicas, and the confirmation of a
// write on the connection that made it. The reasoning for the count is in
// the package documentation ("Durable writes").

var (
	// ErrNotDurable matches a *NotDurableError.
	ErrNotDurable error = routing.NewTransient("cluster: write not confirmed durable", time.Second, true)
	// ErrAOFUnavailable is wrapped by the *NotDurableError of an
	// Config.DurableAOF write refused unsent because its master cannot
	// confirm an AOF fsync: it has no WAITAOF (before 7.2) or runs
	// without appendonly.
	ErrAOFUnavailable = errors.New("cluster: the master cannot confirm AOF fsyncs (WAITAOF)")
)

// NotDurableError is a durable write (Config.Durable, WithDurable) that
// was not confirmed. Either it was refused before it was sent (NotSent:
// its shard has no replica to confirm it, a counted replica was not
// connected to the master at the last check, the client does not know
// the master's replicas yet, or with DurableAOF the master cannot confirm
// an fsync; re-running it later is safe), or it ran on the master
// (MayHaveExecuted) and fewer replicas than Required confirmed it within
// Timeout: it may be lost in a failover; check before re-running it.
type NotDurableError struct {
	Master string
	Slot   int // -1 for a pipeline's part on one master, or a command without a key
	// Required are the replicas that had to confirm it; Acked those WAIT
	// (with AOF, WAITAOF) counted.
	Required, Acked int
	// Replicas are the replicas counted in Required (see the package
	// documentation); WAIT does not say which ones confirmed.
	Replicas []string
	// Unconfirmable are the counted replicas the master did not list as
	// connected at the last check: down, resynchronising, cut off.
	Unconfirmable []string
	Timeout       time.Duration
	// NotSent is true when nothing was sent; MayHaveExecuted is its
	// opposite, as in the package's other errors: the write ran (the
	// master answered it) and was not confirmed.
	NotSent, MayHaveExecuted bool
	// AOF is true for an Config.DurableAOF write: Acked counts replicas
	// that fsynced it, LocalFsynced says whether the master did.
	AOF, LocalFsynced bool
	// Cause is why it was refused, or why the confirmation itself failed.
	Cause error
}

func (e *NotDurableError) Error() string {
	where := fmt.Sprintf("%s (slot %d)", e.Master, e.Slot)
	switch {
	case e.NotSent && len(e.Unconfirmable) > 0:
		return fmt.Sprintf("cluster: durable write on %s refused: %d replicas %v must confirm it, and %v cannot (not connected to the master at the last check); it was not sent: re-running it later is safe",
			where, e.Required, e.Replicas, e.Unconfirmable)
	case e.NotSent && e.Cause != nil:
		return fmt.Sprintf("cluster: durable write on %s refused: %s; it was not sent: re-running it later is safe", where, failure.BriefErr(e.Cause))
	case e.NotSent:
		return fmt.Sprintf("cluster: durable write on %s refused: the shard has no replica to confirm it; it was not sent: re-running it is safe once it has one", where)
	}
	var msg string
	if e.AOF {
		local := "fsynced it to its AOF"
		if !e.LocalFsynced {
			local = "did not fsync it to its AOF"
		}
		msg = fmt.Sprintf("cluster: write on %s not confirmed durable: the master %s, and %d of %d replicas %v fsynced it to theirs within %v (WAITAOF)",
			where, local, e.Acked, e.Required, e.Replicas, e.Timeout)
	} else {
		msg = fmt.Sprintf("cluster: write on %s not confirmed durable: %d of %d replicas %v acknowledged it within %v (WAIT)",
			where, e.Acked, e.Required, e.Replicas, e.Timeout)
	}
	msg += "; it executed on the master and may be lost in a failover: check before re-running it"
	if e.Cause != nil {
		msg += "; cause: " + failure.BriefErr(e.Cause)
	}
	return msg
}

// Is makes errors.Is(err, ErrNotDurable) true.
func (e *NotDurableError) Is(target error) bool { return target == ErrNotDurable }

// Unwrap returns the cause, if any.
func (e *NotDurableError) Unwrap() error { return e.Cause }

// WithDurable overrides Config.Durable for the writes made with the
// returned context. It is the same option as rediskit.WithDurable and
// sentinel.WithDurable: any of them sets it for every client.
func WithDurable(ctx context.Context, durable bool) context.Context {
	return callopt.WithDurable(ctx, durable)
}

// durable reports whether the writes of ctx are durable.
func (c *Client) durable(ctx context.Context) bool {
	return callopt.Durable(ctx, c.opts.Durable)
}

// durableDefaults fills DurableTimeout in and checks it: WAIT's reply
// (and WAITAOF's after it) must come within one ReadTimeout
// (routing.DurableTimeout, the rule of every durable client).
func (o *Config) durableDefaults() error {
	var problem string
	if o.DurableTimeout, problem = routing.DurableTimeout(o.DurableTimeout, o.ReadTimeout, DefaultDurableTimeout, o.DurableAOF); problem != "" {
		return configError("DurableTimeout", problem)
	}
	return nil
}

// confirmCmds are the commands that confirm a durable write on the
// connection that made it (routing.ConfirmCmds): WAIT required, and with
// DurableAOF then WAITAOF 1 required, each bounded by DurableTimeout.
// WAITAOF follows a WAIT for the reason package sentinel's confirmCmds
// gives (measured there): the WAIT's acknowledgement round lets the
// replicas fsync before WAITAOF asks, so that the confirmation takes a
// round trip rather than a second.
func (o *Config) confirmCmds(ctx context.Context, required int) []redis.Cmder {
	return routing.ConfirmCmds(ctx, required, o.DurableTimeout, o.DurableAOF)
}

// durableShard is what a durable write on one master must be confirmed by:
// the replicas counted (see durableReplicas) and those of them the master
// did not list as connected, or why the client cannot tell.
type durableShard struct {
	counted, unconfirmable []string
	err                    error
}

// durableState is the durable view of every master the client checked,
// replaced whole; next is closed then.
type durableState struct {
	masters map[*node]*durableShard
	next    chan struct{}
}

// durableWatch keeps, for each master of the map, the replicas a durable
// write there must be confirmed by. It starts with the first durable
// write (a client that makes none never pays for it). One owner
// goroutine (run) changes the state and never touches the network:
// workers ask each master, on its control client, for ROLE (the replicas
// it streams to) and CLUSTER SHARDS (its own view of its shard's
// replicas and their health) in one round trip, at every new slot map
// (every refresh, so every RefreshInterval and at once after a failover),
// when a write finds a master it has not checked, and when a refused
// write asks for a recheck. A write never waits for a round trip of its
// own.
type durableWatch struct {
	c     *Client
	state atomic.Pointer[durableState]
	// aof is what the client last learned of a master's WAITAOF
	// (*aofState by *node).
	aof      sync.Map
	wantCh   chan *node
	kickCh   chan struct{}
	resultCh chan durableResult
	// rechecks throttles the rechecks refused writes ask for.
	rechecks routing.Throttle

	mu      sync.Mutex
	started bool
	closed  bool
	stop    chan struct{}
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type durableResult struct {
	n      *node
	role   redisinfo.Role
	shards []redis.ClusterShard
	err    error
}

func newDurableWatch(c *Client) *durableWatch {
	w := &durableWatch{c: c, wantCh: make(chan *node, 16), kickCh: make(chan struct{}, 1),
		resultCh: make(chan durableResult, 16), stop: make(chan struct{})}
	w.ctx, w.cancel = context.WithCancel(context.Background())
	w.state.Store(&durableState{masters: map[*node]*durableShard{}, next: make(chan struct{})})
	return w
}

// start starts the owner goroutine once; false after close.
func (w *durableWatch) start() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return false
	}
	if !w.started {
		w.started = true
		w.wg.Add(1)
		go func() {
			defer w.wg.Done()
			if err := safe.Call(w.run); err != nil {
				w.c.topo.log.Error("cluster: durable watch panicked", "err", err)
			}
		}()
	}
	return true
}

// close stops the owner and its workers and waits for them.
func (w *durableWatch) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	close(w.stop)
	w.cancel()
	w.mu.Unlock()
	w.wg.Wait()
}

// want asks for n to be checked now (a master the state lacks).
func (w *durableWatch) want(n *node) {
	select {
	case w.wantCh <- n:
	default:
		w.kick()
	}
}

func (w *durableWatch) kick() {
	select {
	case w.kickCh <- struct{}{}:
	default:
	}
}

// durableRecheck is how often, at most, refused durable writes ask for a
// recheck of the masters: soon enough that durable writes resume within a
// fraction of a second of a replica's return, without a check per refused
// write.
const durableRecheck = 200 * time.Millisecond

// recheck asks for a check unless one was asked for within
// durableRecheck.
func (w *durableWatch) recheck() {
	if w.rechecks.Allow(durableRecheck) {
		w.kick()
	}
}

func (w *durableWatch) run() {
	topo := w.c.topo
	snap := topo.snap.Load()
	inflight := map[*node]bool{}
	again := map[*node]bool{} // asked for while in flight
	check := func(n *node) {
		if inflight[n] {
			again[n] = true
			return
		}
		inflight[n] = true
		safe.Go(&w.wg, func(err error) { w.post(durableResult{n: n, err: err}) }, func() { w.post(w.fetch(n)) })
	}
	checkAll := func() {
		for _, sh := range snap.masters {
			check(sh.master)
		}
	}
	checkAll()
	for {
		select {
		case <-w.stop:
			return
		case <-topo.stop:
			return
		case <-snap.next:
			prev := snap
			snap = topo.snap.Load()
			if !sameShards(prev, snap) {
				// Every refresh publishes a snapshot (offsets move);
				// only a change of masters or replicas changes the
				// count. A replica that drops its link without leaving
				// the map still counts (the safe side): the write it
				// fails to confirm asks for a recheck.
				w.forget(snap)
				checkAll()
			}
		case <-w.kickCh:
			checkAll()
		case n := <-w.wantCh:
			check(n)
		case r := <-w.resultCh:
			inflight[r.n] = false
			w.apply(snap, r)
			if again[r.n] {
				delete(again, r.n)
				check(r.n)
			}
		}
	}
}

// sameShards reports whether a and b have the same masters with the same
// healthy replicas, in the same order.
func sameShards(a, b *snapshot) bool {
	return slices.EqualFunc(a.masters, b.masters, func(x, y *shard) bool {
		return x.master == y.master && slices.Equal(x.replicas, y.replicas)
	})
}

// post hands a worker's result to the owner.
func (w *durableWatch) post(r durableResult) {
	select {
	case w.resultCh <- r:
	case <-w.stop:
	}
}

// fetch asks n for ROLE and CLUSTER SHARDS in one round trip, on its
// control client.
func (w *durableWatch) fetch(n *node) durableResult {
	o := &w.c.opts
	ctx, cancel := context.WithTimeout(w.ctx, o.DialTimeout+o.ReadTimeout)
	defer cancel()
	var role *redis.Cmd
	var shards *redis.ClusterShardsCmd
	_, _ = n.ctl.Pipelined(ctx, func(p redis.Pipeliner) error {
		role = p.Do(ctx, "ROLE")
		shards = p.ClusterShards(ctx)
		return nil
	})
	r := durableResult{n: n}
	if r.role, r.err = redisinfo.ParseRole(role); r.err != nil {
		r.err = fmt.Errorf("ROLE: %w", r.err)
		return r
	}
	if r.shards, r.err = shards.Result(); r.err != nil {
		r.err = fmt.Errorf("CLUSTER SHARDS: %w", r.err)
	}
	return r
}

// apply publishes the state with r's master updated.
func (w *durableWatch) apply(snap *snapshot, r durableResult) {
	ds := &durableShard{err: r.err}
	if r.err == nil {
		var mapped []string
		id := ""
		for _, sh := range snap.masters {
			if sh.master == r.n {
				id = sh.id
				for _, rep := range sh.replicas {
					mapped = append(mapped, rep.addr)
				}
			}
		}
		ds.counted, ds.unconfirmable, ds.err = durableReplicas(r.n.addr, id, r.role, r.shards, mapped, w.c.opts.TLSConfig != nil)
	}
	w.publish(func(m map[*node]*durableShard) { m[r.n] = ds })
}

// forget drops the masters snap no longer has: a demoted master's view
// must not be used if it is promoted again before it is checked again.
func (w *durableWatch) forget(snap *snapshot) {
	gone := func(n *node) bool {
		return !slices.ContainsFunc(snap.masters, func(sh *shard) bool { return sh.master == n })
	}
	for n := range w.state.Load().masters {
		if gone(n) {
			w.publish(func(m map[*node]*durableShard) {
				maps.DeleteFunc(m, func(n *node, _ *durableShard) bool { return gone(n) })
			})
			return
		}
	}
}

func (w *durableWatch) publish(f func(map[*node]*durableShard)) {
	cur := w.state.Load()
	next := &durableState{masters: make(map[*node]*durableShard, len(cur.masters)+1), next: make(chan struct{})}
	for k, v := range cur.masters {
		next.masters[k] = v
	}
	f(next.masters)
	w.state.Store(next)
	close(cur.next)
}

// durableReplicas is the count of the package documentation for the
// master at addr (its node ID id, "" when the map has none): the union of
// the replicas its ROLE lists as connected, the replicas its own CLUSTER
// SHARDS lists in its shard and does not flag failed (a replica merely
// timed out, pfail, counts: it may be alive and cut off, and could win an
// election when it returns), and the replicas of its shard the merged
// map lists (mapped: healthy in the view of some node). unconfirmable are
// the counted ones ROLE does not list. An error when the node is no
// master by its own word. A pure function.
func durableReplicas(addr, id string, role redisinfo.Role, shards []redis.ClusterShard, mapped []string, tls bool) (counted, unconfirmable []string, err error) {
	if role.Role != "master" {
		return nil, nil, fmt.Errorf("%s is not a master (ROLE says %s): a failover under way", addr, role.Role)
	}
	var own *redis.ClusterShard
	for i := range shards {
		for _, n := range shards[i].Nodes {
			a, _ := ShardNodeAddr(n, tls)
			if n.Role == "master" && (id != "" && n.ID == id || a == addr) {
				own = &shards[i]
			}
		}
	}
	if own == nil {
		return nil, nil, fmt.Errorf("%s does not list itself as a master in CLUSTER SHARDS: a failover under way", addr)
	}
	set := map[string]bool{}
	for _, n := range own.Nodes {
		if a, ok := ShardNodeAddr(n, tls); ok && n.Role != "master" && !failedHealth(n.Health) {
			set[a] = true
		}
	}
	for _, a := range mapped {
		set[a] = true
	}
	connected := map[string]bool{}
	for _, r := range role.Replicas {
		set[r.Addr], connected[r.Addr] = true, true
	}
	for a := range set {
		counted = append(counted, a)
		if !connected[a] {
			unconfirmable = append(unconfirmable, a)
		}
	}
	slices.Sort(counted)
	slices.Sort(unconfirmable)
	return counted, unconfirmable, nil
}

// durablePrecheck returns how many replicas a durable write on n must be
// confirmed by and which, or the *NotDurableError refusing it unsent.
// When the client has not checked n yet (the first durable write, a new
// master), it waits for the check, until holdEnd.
func (c *Client) durablePrecheck(ctx context.Context, n *node, slot int, holdEnd time.Time) (*durableShard, error) {
	w := c.durableW
	refusal := func(ds *durableShard, cause error) *NotDurableError {
		e := &NotDurableError{Master: n.addr, Slot: slot, Timeout: c.opts.DurableTimeout, NotSent: true, AOF: c.opts.DurableAOF, Cause: cause}
		if ds != nil {
			e.Required, e.Replicas, e.Unconfirmable = len(ds.counted), slices.Clone(ds.counted), slices.Clone(ds.unconfirmable)
		}
		return e
	}
	refuse := func(ds *durableShard, cause error) (*durableShard, error) {
		return nil, c.notDurable(refusal(ds, cause))
	}
	// The caller's end and Close are refusals too (nothing was sent), but
	// not counted as writes not durable.
	if !w.start() {
		return nil, refusal(nil, ErrClosed)
	}
	var ds *durableShard
	for {
		st := w.state.Load()
		if ds = st.masters[n]; ds != nil {
			break
		}
		w.want(n)
		d := time.Until(holdEnd)
		if d <= 0 {
			return refuse(nil, errors.New("the client has not learned the master's replicas yet"))
		}
		t := time.NewTimer(d)
		select {
		case <-st.next:
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, refusal(nil, ctx.Err())
		case <-w.stop:
			t.Stop()
			return nil, refusal(nil, ErrClosed)
		}
		t.Stop()
	}
	switch {
	case ds.err != nil:
		w.recheck()
		return refuse(nil, ds.err)
	case len(ds.counted) == 0:
		w.recheck()
		return refuse(ds, nil)
	case len(ds.unconfirmable) > 0:
		// WAIT cannot count them: run, the write would be left executed
		// and not durable. Refused unsent; a recheck soon tells whether
		// they are back.
		w.recheck()
		return refuse(ds, nil)
	}
	if c.opts.DurableAOF {
		if err := c.aofReady(ctx, n); err != nil {
			return refuse(ds, err)
		}
	}
	return ds, nil
}

// durableVerdict is the *NotDurableError of a write on n whose
// confirmation did not count ds's replicas (or, with WAITAOF, the
// master's own fsync), or nil.
func (c *Client) durableVerdict(n *node, slot int, ds *durableShard, confirm []redis.Cmder) error {
	acked, local, err := routing.ConfirmCounts(confirm)
	if err == nil && acked >= len(ds.counted) && local {
		return nil
	}
	if failure.AOFDisabled(err) || failure.UnknownCommand(err) {
		c.durableW.aof.Delete(n) // the master changed since it was checked: check again
	}
	return c.notDurable(&NotDurableError{Master: n.addr, Slot: slot, Required: len(ds.counted), Acked: acked,
		Replicas: slices.Clone(ds.counted), Timeout: c.opts.DurableTimeout, MayHaveExecuted: true,
		AOF: c.opts.DurableAOF, LocalFsynced: local && c.opts.DurableAOF && err == nil, Cause: err})
}

// notDurable counts, reports and returns e.
func (c *Client) notDurable(e *NotDurableError) *NotDurableError {
	c.stats.writesNotDurable.Add(1)
	c.topo.log.Warn("cluster: durable write not confirmed", "master", e.Master, "slot", e.Slot, "sent", !e.NotSent, "err", e)
	c.topo.emit(Event{Kind: EventWriteNotDurable, Master: e.Master, Slot: e.Slot, Err: e})
	return e
}

// sendDurable runs a durable write on n: the command and its confirmation
// (confirmCmds) in one round trip on one connection, after ASKING when
// asking; auto-pipelined, the batch's commands share one confirmation
// (routing.Batcher.DoConfirmed), counting the most replicas any of them
// needs, and each gets its own verdict.
func (c *Client) sendDurable(ctx context.Context, n *node, cmd redis.Cmder, a *attempt) error {
	ds, err := c.durablePrecheck(ctx, n, a.slot, a.holdEnd())
	if err != nil {
		cmd.SetErr(err)
		return err
	}
	n.count(true)
	var confirm []redis.Cmder
	if !a.asking && (c.opts.AutoPipeline || routing.Batching(ctx)) {
		confirm, _ = n.batch.DoConfirmed(ctx, cmd, len(ds.counted))
	} else {
		confirm = c.opts.confirmCmds(ctx, len(ds.counted))
		_, _ = n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			if a.asking {
				p.Do(ctx, "ASKING")
			}
			_ = p.Process(ctx, cmd)
			for _, q := range confirm {
				_ = p.Process(ctx, q)
			}
			return nil
		})
	}
	if !ran(cmd) {
		return cmd.Err() // not run (a redirect, a refusal) or no answer: judged as any write
	}
	if nde := c.durableVerdict(n, a.slot, ds, confirm); nde != nil {
		cmd.SetErr(nde)
		return nde
	}
	return cmd.Err() // nil, or redis.Nil (SET ... GET on a new key): confirmed
}

// ran reports whether a command executed: it answered, if only with nil.
func ran(q redis.Cmder) bool { err := q.Err(); return err == nil || errors.Is(err, redis.Nil) }

// isNotDurable reports a *NotDurableError: final, whatever its cause says
// (a WAIT that timed out is no reason to judge the write again).
func isNotDurable(err error) bool {
	var nde *NotDurableError
	return errors.As(err, &nde)
}

// durableGroup is a pipeline's part on one master that writes, made
// durable: its confirmation rides at the end of its round trip.
type durableGroup struct {
	n       *node
	cmds    []redis.Cmder
	ds      *durableShard
	confirm []redis.Cmder
	refused error // refused unsent: every command of the part gets it
	// verdict is the part's *NotDurableError (judgeDurable), for wrote,
	// its writes that ran.
	verdict error
	wrote   []redis.Cmder
}

// prepareDurable checks each writing group of a pipeline before it is
// sent: a group refused is taken out (nothing of it is sent), the others
// get their confirmation commands. It returns the groups to send.
func (c *Client) prepareDurable(ctx context.Context, groups []group, holdEnd time.Time) ([]group, []durableGroup) {
	var dgs []durableGroup
	send := groups[:0:0]
	for _, g := range groups {
		if g.writes == 0 {
			send = append(send, g)
			continue
		}
		ds, err := c.durablePrecheck(ctx, g.n, -1, holdEnd)
		if err != nil {
			dgs = append(dgs, durableGroup{n: g.n, cmds: g.cmds, refused: err})
			continue
		}
		g.confirm = c.opts.confirmCmds(ctx, len(ds.counted))
		dgs = append(dgs, durableGroup{n: g.n, cmds: g.cmds, ds: ds, confirm: g.confirm})
		send = append(send, g)
	}
	return send, dgs
}

// judgeDurable reads each durable part's confirmation once its round
// trip is over, before the pipeline's commands are judged (those run
// again alone get their own confirmation, and keep their own result).
func (c *Client) judgeDurable(dgs []durableGroup) {
	for i := range dgs {
		dg := &dgs[i]
		if dg.refused != nil {
			continue
		}
		for _, q := range dg.cmds {
			if !c.classifier.ReadOnly(q) && ran(q) {
				dg.wrote = append(dg.wrote, q)
			}
		}
		if len(dg.wrote) > 0 {
			dg.verdict = c.durableVerdict(dg.n, -1, dg.ds, dg.confirm)
		}
	}
}

// finishDurable gives the writes that ran in a part not confirmed its
// verdict, and every command of a refused part its refusal, once the
// pipeline's commands were judged. It returns the pipeline's first error.
func (c *Client) finishDurable(dgs []durableGroup, first error) error {
	for _, dg := range dgs {
		err, cmds := dg.verdict, dg.wrote
		if dg.refused != nil {
			err, cmds = dg.refused, dg.cmds
		}
		if err == nil {
			continue
		}
		routing.SetErrs(nil, cmds, err)
		if first == nil || failure.IsNil(first) {
			first = err
		}
	}
	return first
}

// runTxDurable runs a transaction on n (after ASKING when asking) and then
// its confirmation, on one connection (two round trips: nothing can follow
// an EXEC in go-redis's transaction). It returns the transaction's error,
// or its verdict.
func (c *Client) runTxDurable(ctx context.Context, n *node, slot int, ds *durableShard, cmds []redis.Cmder, asking bool) error {
	conn := n.client.Conn()
	defer func() { _ = conn.Close() }()
	err := runTxOn(ctx, conn, cmds, asking)
	if err != nil && !errors.Is(err, redis.Nil) {
		return err // aborted, refused, or lost: judged as any transaction
	}
	confirm := c.opts.confirmCmds(ctx, len(ds.counted))
	for _, q := range confirm {
		_ = conn.Process(ctx, q)
	}
	if nde := c.durableVerdict(n, slot, ds, confirm); nde != nil {
		routing.SetErrs(nil, cmds, nde)
		return nde
	}
	return err
}

// txRunner returns how a transaction on n runs (after ASKING, on the same
// connection, when asking: n is the node an ASK named): as it is, or, for
// a durable one that passed its precheck, confirmed (runTxDurable).
func (c *Client) txRunner(ctx context.Context, n *node, slot int, holdEnd time.Time, asking bool) (func(context.Context, []redis.Cmder) error, error) {
	if !c.durable(ctx) {
		return func(ctx context.Context, cmds []redis.Cmder) error {
			if !asking {
				return routing.Run(ctx, n.client, nil, cmds)
			}
			conn := n.client.Conn()
			defer func() { _ = conn.Close() }()
			return runTxOn(ctx, conn, cmds, true)
		}, nil
	}
	ds, err := c.durablePrecheck(ctx, n, slot, holdEnd)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, cmds []redis.Cmder) error {
		return c.runTxDurable(ctx, n, slot, ds, cmds, asking)
	}, nil
}

// runTxOn runs a transaction on conn, after ASKING when asking (the flag
// holds until the EXEC: the server checks the queued commands' slots with
// it). An ASKING that fails fails every command: nothing was queued.
func runTxOn(ctx context.Context, conn *redis.Conn, cmds []redis.Cmder, asking bool) error {
	if asking {
		if err := conn.Process(ctx, redis.NewStatusCmd(ctx, "ASKING")); err != nil {
			routing.SetErrs(nil, cmds, err)
			return err
		}
	}
	return routing.Run(ctx, conn, nil, cmds)
}

// watchBody returns the function Watch runs on n: fn, or, for a durable
// call that passed its precheck, fn followed by its confirmation
// (watchDurable).
func (c *Client) watchBody(ctx context.Context, n *node, slot int, holdEnd time.Time, fn func(*redis.Tx) error) (func(*redis.Tx) error, error) {
	if !c.durable(ctx) {
		return fn, nil
	}
	ds, err := c.durablePrecheck(ctx, n, slot, holdEnd)
	if err != nil {
		return nil, err
	}
	return c.watchDurable(ctx, n, slot, ds, fn), nil
}

// watchDurable wraps a Watch function so that, when it committed, its
// connection confirms the EXEC before Watch returns.
func (c *Client) watchDurable(ctx context.Context, n *node, slot int, ds *durableShard, fn func(*redis.Tx) error) func(*redis.Tx) error {
	return func(tx *redis.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		confirm := c.opts.confirmCmds(ctx, len(ds.counted))
		for _, q := range confirm {
			_ = tx.Process(ctx, q)
		}
		return c.durableVerdict(n, slot, ds, confirm)
	}
}

// aofRecheck is how long a master found unable to confirm AOF fsyncs is
// believed before it is asked again: durable AOF writes refused because
// of it do not each cost a round trip, and turning appendonly on is
// noticed within a second.
const aofRecheck = time.Second

// aofState is what the client last learned of a master's WAITAOF: ok
// (err nil), or why it cannot confirm fsyncs and when that was learned.
type aofState struct {
	err error
	at  time.Time
}

// aofReady reports whether n can confirm AOF fsyncs, asking it (WAITAOF 1
// 0 1 on its control client, which never writes, so it answers at once)
// the first time and every aofRecheck while it cannot. A master without
// WAITAOF or without an AOF yields an error wrapping ErrAOFUnavailable;
// another failure is returned as it is and not remembered.
func (c *Client) aofReady(ctx context.Context, n *node) error {
	if v, ok := c.durableW.aof.Load(n); ok {
		if st := v.(*aofState); st.err == nil || time.Since(st.at) < aofRecheck { //nolint:forcetypeassert // the map holds only *aofState
			return st.err
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ReadTimeout)
	defer cancel()
	err, settled := failure.AOFProbe(n.ctl.Do(ctx, "WAITAOF", 1, 0, 1).Err(), ErrAOFUnavailable)
	if !settled {
		return err
	}
	c.durableW.aof.Store(n, &aofState{err: err, at: time.Now()})
	return err
}

// durableReplicasOf lists, for Stats, the replicas counted for each
// master the client checked, by master address.
func (c *Client) durableReplicasOf() map[string][]string {
	st := c.durableW.state.Load()
	out := make(map[string][]string, len(st.masters))
	for n, ds := range st.masters {
		if ds.err == nil {
			out[n.addr] = slices.Clone(ds.counted)
		} else {
			out[n.addr] = nil
		}
	}
	return out
}

// durableString is a one-line summary of a durableShard, for logs and
// tests.
func (ds *durableShard) String() string {
	if ds.err != nil {
		return "unknown: " + ds.err.Error()
	}
	return fmt.Sprintf("counted [%s], unconfirmable [%s]", strings.Join(ds.counted, " "), strings.Join(ds.unconfirmable, " "))
}
