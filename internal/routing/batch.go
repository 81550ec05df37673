package routing

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/safe"
)

// Batcher auto-pipelines the single commands concurrent callers run on one
// node: while a batch is on the wire, the commands that arrive queue up,
// and the next batch sends them all in one pipeline. A routed client keeps
// one per node, underneath its routing: every command is routed, held,
// retried or refused by the client's own rules as it would be alone; only
// the round trip is shared.
//
// There is no goroutine of its own: the caller that finds the node idle
// sends its command at once, alone (Process, so a lone caller pays
// nothing), and the first caller that finds a batch already in flight
// becomes the leader of the next one when that batch ends: it takes the
// queue (at most MaxBatch commands), sends it, hands the remainder to the
// next leader, and wakes each caller when its command has its reply.
//
// A batch runs without the callers' cancellation (a caller giving up must
// not fail its batch-mates' commands), and until the latest of their
// deadlines: when every command of it has one, the batch's socket
// deadline is the latest (the commands of one batch were queued within a
// round trip of each other, so with the same timeout their deadlines are
// that close); otherwise the node client's ReadTimeout and WriteTimeout
// bound it. A caller whose context ends while its command is still queued
// takes it out and gets an *UnsentError wrapping the context's error: it
// was never sent. A command already sent runs to its reply or to the
// batch's deadline (an error saying it may have run), which the caller
// waits for: its command's reply is read into it until then.
//
// Replies are per command, as in any pipeline: one command's error does
// not fail the others, and a connection lost mid-batch fails every command
// not yet answered with the network error, which the routed client then
// judges per command (a read may be re-run; a write may have executed).
//
// How many batches may be on the wire at once depends on how far the node
// is (see window): two for a near one, where waiting for a batch to end
// costs less than the CPU of another round trip and deep batches are what
// make auto-pipelining pay; up to the pool's size for a far one, where
// waiting costs a whole round trip and callers are better served each on
// a connection of its own, as without auto-pipelining.
//
// A near node's second batch hides the turnaround between its batches
// (the leader waking its callers and the next leader collecting their
// next commands), during which nothing of the client's would be on the
// wire. When the client has batches on the wire to other nodes too (a
// cluster's masters, a replica beside its master), the turnaround is
// hidden already, and a second batch only splits the node's commands in
// two, one round trip more of CPU on the client, the network and the
// server. So a near node opens a second batch only while the client has
// fewer than MaxInflight batches on the wire in all (BatchConfig.Wire,
// shared by the Batchers of one client). Measured on a lab cluster of 3
// masters, SET from 64 goroutines: 14.4 commands a batch instead of 9.1,
// 315k/s instead of 274k/s; on one Sentinel master, where the budget
// changes nothing, two batches give 358k/s against 310k/s for one.
type Batcher struct {
	target   Target
	maxBatch int
	inflight int // batches that may be on the wire at once to a near node
	// farInflight bounds them for a far node (round trip at least
	// farRTT).
	farInflight int
	farRTT      time.Duration
	confirm     func(ctx context.Context, required int) []redis.Cmder
	blocking    func(redis.Cmder) bool

	mu      sync.Mutex
	queue   []*pending
	running int // batches on the wire, or about to be
	// wire counts the batches on the wire of every Batcher of the client
	// (running, summed, those about to be sent included). Each Batcher
	// changes it under its own mu and reads it without the others', so
	// two nodes opening at the same moment may pass the budget by one:
	// it bounds how much the client's batches overlap, it is no lock.
	wire *WireCount
	rtt  rttFilter
	// far: the node's recent round trips all took farRTT or more (see
	// observe). Atomic, so that a leader reads it without the lock.
	far atomic.Bool
	// pending structs for reuse (each with its wake channel): the
	// contended path allocates nothing per command once warm.
	pool sync.Pool

	counts *BatchCounts
}

// BatchCounts are a Batcher's round trips and the commands they carried
// (Commands / Batches is the mean batch). Several Batchers may share one
// (BatchConfig.Counts).
type BatchCounts struct {
	Batches, Commands atomic.Uint64
}

// WireCount is the number of batches a client's Batchers have on the
// wire, shared by them (BatchConfig.Wire): a near node opens a second
// batch only while it is below their MaxInflight (see Batcher).
type WireCount struct{ n atomic.Int64 }

// BatchConfig configures a Batcher.
type BatchConfig struct {
	// MaxBatch bounds the commands of one pipeline. Default
	// DefaultMaxBatch.
	MaxBatch int
	// MaxInflight bounds the batches on the wire at once to a near node,
	// each on a connection of its own. Default DefaultMaxInflight.
	MaxInflight int
	// FarInflight bounds them to a far node: one whose round trips all
	// took FarRoundTrip or more lately. Default: the target's PoolSize
	// when it is a *redis.Client, else MaxInflight.
	FarInflight int
	// FarRoundTrip is the round trip from which a node is far. Default
	// DefaultFarRoundTrip.
	FarRoundTrip time.Duration
	// Confirm returns the commands that confirm the writes of a batch on
	// its connection (WAIT, and WAITAOF), for required replicas: sent
	// after the batch's commands, once per batch, when a command of it
	// asked for confirmation (DoConfirmed). Nil: DoConfirmed is Do.
	Confirm func(ctx context.Context, required int) []redis.Cmder
	// Counts receives the Batcher's counts. Default: its own.
	Counts *BatchCounts
	// Wire is the count of batches on the wire that the Batchers of one
	// client share. Default: the Batcher's own (it then opens a second
	// batch to a near node whenever MaxInflight allows).
	Wire *WireCount
	// Blocking reports the commands that may hold their connection for
	// long (BLPOP, XREAD BLOCK, WAIT: classify.Classifier.Blocking): Do
	// sends them on the target at once, outside any batch and the
	// in-flight count. In a batch such a command would hold its
	// batch-mates' replies, and on the wire it would hold a batch slot,
	// until it returns. Nil: none.
	Blocking func(redis.Cmder) bool
}

// Defaults of BatchConfig.
const (
	// DefaultMaxBatch is as deep as go-redis's own auto-pipeliner's
	// batches (300 for its blocking face).
	DefaultMaxBatch = 256
	// DefaultMaxInflight keeps two batches on the wire: while one waits
	// for its replies the next fills, so batches stay deep (one in flight
	// is go-redis's default; a second hides the turnaround between them).
	DefaultMaxInflight = 2
	// DefaultFarRoundTrip is the round trip from which waiting for a
	// batch to end costs more than it saves. A round trip costs the client
	// 15-20 µs of CPU; a node on loopback or in the same rack answers in
	// 30-150 µs, a few hundred under load (the race detector, the lab's
	// proxies, a busy machine), so waiting for the batch in flight costs
	// a caller about what the shared round trip saves, and at high
	// concurrency the saving is what lets the client keep up. From 1 ms
	// (another zone, another region) a caller that waits loses ten times
	// more than it saves: better send at once, on a connection of its
	// own, while the pool has one.
	DefaultFarRoundTrip = time.Millisecond
)

// NewBatcher returns a Batcher sending on target.
func NewBatcher(target Target, cfg BatchConfig) *Batcher {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.FarInflight <= 0 {
		cfg.FarInflight = cfg.MaxInflight
		if c, ok := target.(interface{ Options() *redis.Options }); ok {
			cfg.FarInflight = max(cfg.MaxInflight, c.Options().PoolSize)
		}
	}
	if cfg.FarRoundTrip <= 0 {
		cfg.FarRoundTrip = DefaultFarRoundTrip
	}
	if cfg.Counts == nil {
		cfg.Counts = &BatchCounts{}
	}
	if cfg.Wire == nil {
		cfg.Wire = &WireCount{}
	}
	b := &Batcher{target: target, maxBatch: cfg.MaxBatch, inflight: cfg.MaxInflight, farInflight: cfg.FarInflight,
		farRTT: cfg.FarRoundTrip, confirm: cfg.Confirm, counts: cfg.Counts, wire: cfg.Wire, blocking: cfg.Blocking}
	b.pool.New = func() any { return &pending{wake: make(chan struct{}, 1)} }
	return b
}

// pending is one caller's command while it waits.
type pending struct {
	ctx      context.Context
	cmd      redis.Cmder
	required int // replicas that must confirm it (DoConfirmed); 0: none
	wake     chan struct{}
	// Set by whoever wakes the caller, before the wake: lead (the caller
	// leads the next batch) or done (its command has its reply; confirm
	// holds the batch's confirmation commands, if any).
	lead    bool
	done    bool
	confirm []redis.Cmder
}

// Do runs cmd, batched with the commands other callers run at the same
// time, and returns its error.
func (b *Batcher) Do(ctx context.Context, cmd redis.Cmder) error {
	_, err := b.do(ctx, cmd, 0)
	return err
}

// DoConfirmed runs cmd as Do does and, in the same batch, the
// confirmation commands of BatchConfig.Confirm for at least required
// replicas: it returns them (one set for the whole batch, so required is
// met when their count is at least the caller's own; read them, do not
// modify them). Nil when the command failed before it was sent.
func (b *Batcher) DoConfirmed(ctx context.Context, cmd redis.Cmder, required int) ([]redis.Cmder, error) {
	return b.do(ctx, cmd, max(required, 1))
}

// BatchStats are a Batcher's counts since it was made.
type BatchStats struct {
	// Batches is the number of round trips; Commands the commands they
	// carried (Commands / Batches is the mean batch).
	Batches, Commands uint64
}

// Stats returns the counts.
func (b *Batcher) Stats() BatchStats {
	return BatchStats{Batches: b.counts.Batches.Load(), Commands: b.counts.Commands.Load()}
}

func (b *Batcher) do(ctx context.Context, cmd redis.Cmder, required int) ([]redis.Cmder, error) {
	if b.blocking != nil && b.blocking(cmd) {
		// Never batched (see BatchConfig.Blocking), its confirmation
		// still on its connection.
		if required == 0 || b.confirm == nil {
			return nil, b.target.Process(ctx, cmd)
		}
		confirm := b.confirm(ctx, required)
		return confirm, b.sendConfirmed(ctx, cmd, confirm)
	}
	if s, ok := ctx.Value(roundKey{}).(roundSlot); ok && s.r != nil {
		return s.r.do(ctx, s, b, cmd, required) // RunIndependent's order
	}
	b.mu.Lock()
	// Alone, at once: on a near node only when nothing is on the wire (a
	// command that finds a batch out waits for the next one: sending it
	// alone would cost a round trip's CPU to save a fraction of one); on
	// a far node whenever the window has room.
	far := b.far.Load()
	lone := b.running == 0 || (far && b.running < b.farInflight)
	if lone && len(b.queue) == 0 {
		// Idle: send it at once, alone.
		b.open()
		b.mu.Unlock()
		return b.sendLone(ctx, cmd, required)
	}
	p := b.pool.Get().(*pending) //nolint:forcetypeassert // the pool holds only *pending
	p.ctx, p.cmd, p.required = ctx, cmd, required
	b.queue = append(b.queue, p)
	if b.mayOpen(far) {
		// A batch slot is free but others queued first: lead now.
		b.open()
		p.lead = true
	}
	b.mu.Unlock()
	for {
		b.mu.Lock()
		lead, done := p.lead, p.done
		p.lead = false
		b.mu.Unlock()
		// Lead first, even when done: a caller made leader holds a batch
		// slot, which must be used or handed on whether or not another
		// batch already carried its own command.
		if lead {
			b.lead()
			continue
		}
		if done {
			confirm := p.confirm
			b.release(p)
			return confirm, cmd.Err()
		}
		select {
		case <-p.wake:
		case <-ctx.Done():
			if queued, wasLead := b.withdraw(p); queued {
				if wasLead {
					b.handOff()
				}
				err := &UnsentError{Err: ctx.Err()}
				cmd.SetErr(err)
				b.release(p)
				return nil, err
			}
			// Already taken into a batch: wait for its reply (bounded by
			// the node's timeouts). Only on the wake from now on: the
			// context's channel stays ready. Its wake cannot be lost:
			// done is set before the wake is sent, and a wake already
			// pending stays in the channel.
			<-p.wake
		}
	}
}

// sendLone sends a command that found the node idle, on its own and with
// its caller's context, and hands the batch slot on afterwards, even if
// go-redis panics (the panic is the caller's, as without batching).
func (b *Batcher) sendLone(ctx context.Context, cmd redis.Cmder, required int) (confirm []redis.Cmder, err error) {
	var rtt time.Duration // 0 (no sample) until the node has answered
	defer func() { b.handOffAfter(rtt) }()
	b.counts.Batches.Add(1)
	b.counts.Commands.Add(1)
	start := time.Now()
	if required == 0 || b.confirm == nil {
		err = b.target.Process(ctx, cmd)
	} else {
		confirm = b.confirm(ctx, required)
		err = b.sendConfirmed(ctx, cmd, confirm)
	}
	rtt = answeredIn(start, err)
	return confirm, err
}

// sendConfirmed sends cmd and its confirmation commands as one pipeline,
// and returns cmd's error. A function of its own so that the pipeline's
// closure (which escapes) captures its own copies: the lone path without
// confirmation allocates nothing of its own.
func (b *Batcher) sendConfirmed(ctx context.Context, cmd redis.Cmder, confirm []redis.Cmder) error {
	_, _ = b.target.Pipelined(ctx, func(p redis.Pipeliner) error {
		_ = p.Process(ctx, cmd)
		for _, q := range confirm {
			_ = p.Process(ctx, q)
		}
		return nil
	})
	return cmd.Err()
}

// answeredIn is the round trip of a send that began at start and ended
// with err (go-redis's: a pipeline's is its first failed command's), or 0
// when the node did not answer (the connection failed, or the caller's
// context ended): only a reply measures how far the node is.
func answeredIn(start time.Time, err error) time.Duration {
	if err != nil && !isReply(err) {
		return 0
	}
	return max(time.Since(start), 1)
}

// isReply reports whether err is a server's error reply (redis.Nil too),
// or wraps one. Not errors.As, whose target escapes: every nil reply
// would cost an allocation.
func isReply(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if _, ok := err.(redis.Error); ok { //nolint:errorlint // this is the unwrapping loop
			return true
		}
	}
	return false
}

// mayOpen reports whether another batch may go on the wire now (far: the
// node is far): the first always; on a far node up to farInflight; on a
// near one up to inflight, and beyond the first only while the client
// has fewer than inflight batches on the wire in all (see Batcher).
// Called with mu held.
func (b *Batcher) mayOpen(far bool) bool {
	switch {
	case b.running == 0:
		return true
	case b.running >= b.window(far):
		return false
	}
	return far || b.wire.n.Load() < int64(b.inflight)
}

// window is the most batches the node may have on the wire: inflight, or
// farInflight when it is far (a near node's beyond the first also need
// the client's budget: see mayOpen).
func (b *Batcher) window(far bool) int {
	if far {
		return b.farInflight
	}
	return b.inflight
}

// open counts a batch going on the wire. Called with mu held.
func (b *Batcher) open() {
	b.running++
	b.wire.n.Add(1)
}

// closeOne counts a batch off the wire. Called with mu held.
func (b *Batcher) closeOne() {
	b.running--
	b.wire.n.Add(-1)
}

// observe records a round trip d measured at now, and whether the node is
// far now. Called with mu held.
func (b *Batcher) observe(now time.Time, d time.Duration) {
	b.rtt.add(now, d)
	b.far.Store(b.rtt.min() >= b.farRTT)
}

// rttFilter keeps the smallest round trip of the current window of
// rttWindow and of the one before it: a windowed minimum, as TCP BBR keeps
// its minimum RTT. The smallest, because a batch queued behind others, or
// a caller's goroutine waiting for a CPU, makes a round trip longer
// without making the node farther; windowed, so that a node that moved
// away (a failover to another zone) is seen as far within two windows.
type rttFilter struct {
	start     time.Time     // of the current window
	cur, prev time.Duration // the smallest of each window; 0: none
}

// rttWindow is rttFilter's window.
const rttWindow = time.Second

// add records a round trip d measured at now.
func (f *rttFilter) add(now time.Time, d time.Duration) {
	if now.Sub(f.start) >= rttWindow {
		if f.cur != 0 {
			f.prev = f.cur
		}
		f.cur, f.start = 0, now
	}
	if f.cur == 0 || d < f.cur {
		f.cur = d
	}
}

// min returns the smallest round trip of the two windows; 0 before the
// first.
func (f *rttFilter) min() time.Duration {
	switch {
	case f.cur == 0:
		return f.prev
	case f.prev == 0:
		return f.cur
	}
	return min(f.cur, f.prev)
}

// withdraw takes p out of the queue if it is still there, and says
// whether it had been made leader (its slot must then be handed on).
func (b *Batcher) withdraw(p *pending) (queued, wasLead bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for i, q := range b.queue {
		if q == p {
			b.queue = append(b.queue[:i], b.queue[i+1:]...)
			wasLead, p.lead = p.lead, false
			return true, wasLead
		}
	}
	return false, false
}

// lead sends the head of the queue as one batch (usually with the
// leader's own command in it), wakes its callers, and hands the slot on.
func (b *Batcher) lead() {
	if !b.far.Load() {
		// Another batch is on the wire (else the command would have gone
		// alone): the callers its predecessor just woke are about to
		// queue their next commands. Letting them run first makes this
		// batch carry them, rather than each a batch, or a round trip,
		// of its own: measured at 8 callers on loopback, 11 % less CPU a
		// GET and 35 % less a SET.
		runtime.Gosched()
	}
	b.mu.Lock()
	n := min(len(b.queue), b.maxBatch)
	if n == 0 {
		b.mu.Unlock()
		b.handOff()
		return
	}
	batch := make([]*pending, n)
	copy(batch, b.queue[:n])
	b.queue = append(b.queue[:0], b.queue[n:]...)
	b.mu.Unlock()

	var confirm []redis.Cmder
	rtt := b.send(batch, &confirm)
	b.handOffAfter(rtt)
	b.mu.Lock()
	for _, p := range batch {
		p.done, p.confirm = true, confirm
	}
	b.mu.Unlock()
	for _, p := range batch {
		select {
		case p.wake <- struct{}{}:
		default: // a wake is already pending (or it is the leader itself)
		}
	}
}

// handOff ends a batch's turn: the next queued caller, if any, leads the
// next batch.
func (b *Batcher) handOff() { b.handOffAfter(0) }

// handOffAfter is handOff after a send whose reply took rtt (0: no reply,
// nothing to learn).
func (b *Batcher) handOffAfter(rtt time.Duration) {
	b.mu.Lock()
	if rtt > 0 {
		b.observe(time.Now(), rtt)
	}
	var next *pending
	for _, p := range b.queue {
		if !p.lead {
			next = p
			break
		}
	}
	if next == nil {
		b.closeOne()
		b.mu.Unlock()
		return
	}
	next.lead = true // the slot passes to it: running stays
	b.mu.Unlock()
	select {
	case next.wake <- struct{}{}:
	default:
	}
}

// release returns p to the pool. Its wake channel stays (a leader may
// still be sending it a late wake, which its next owner takes as a
// spurious one: every wake is followed by a look at the state, set under
// the lock before any wake is sent, so none is lost).
func (b *Batcher) release(p *pending) {
	b.mu.Lock()
	p.ctx, p.cmd, p.required, p.confirm, p.lead, p.done = nil, nil, 0, nil, false, false
	b.mu.Unlock()
	b.pool.Put(p)
}

// send runs a batch of queued commands on the target as one pipeline, the
// confirmation commands last when a command asked for them. Commands whose
// callers' contexts ended before the send are not sent. A panic (from
// go-redis, or a hook) fails the batch's commands with the
// *safe.PanicError instead of leaving their callers waiting. It returns
// the round trip when the node answered (see answeredIn), else 0.
func (b *Batcher) send(batch []*pending, confirm *[]redis.Cmder) time.Duration {
	required := 0
	live := batch[:0:len(batch)]
	var ctx context.Context
	var latest time.Time // the latest deadline
	undated := false     // a command has no deadline
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			p.cmd.SetErr(&UnsentError{Err: err})
			continue
		}
		live = append(live, p)
		required = max(required, p.required)
		if ctx == nil {
			ctx = p.ctx
		}
		if d, ok := p.ctx.Deadline(); ok {
			latest = later(latest, d)
		} else {
			undated = true
		}
	}
	if len(live) == 0 {
		return 0
	}
	b.counts.Batches.Add(1)
	b.counts.Commands.Add(uint64(len(live)))
	// Not the callers' cancellation, and their latest deadline: see the
	// type's documentation.
	ctx = context.WithoutCancel(ctx)
	if !undated {
		ctx = deadlineContext{ctx, latest}
	}
	start := time.Now()
	// The error go-redis returns, not a command's Err: a command of an
	// auto-pipeliner's batch (RunIndependent) must not be awaited here.
	var err error
	if perr := safe.Call(func() {
		if required > 0 && b.confirm != nil {
			*confirm = b.confirm(ctx, required)
		}
		if len(live) == 1 && len(*confirm) == 0 {
			err = b.target.Process(ctx, live[0].cmd)
			return
		}
		_, err = b.target.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, q := range live {
				_ = p.Process(ctx, q.cmd)
			}
			for _, q := range *confirm {
				_ = p.Process(ctx, q)
			}
			return nil
		})
	}); perr != nil {
		for _, q := range live {
			q.cmd.SetErr(perr)
		}
		for _, q := range *confirm {
			q.SetErr(perr)
		}
		return 0
	}
	return answeredIn(start, err)
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// deadlineContext is a context that is never cancelled, with a deadline:
// what go-redis (ContextTimeoutEnabled) sets as the socket's deadline.
// Without a timer of its own, unlike context.WithDeadline: nothing waits
// on its Done, which stays nil.
type deadlineContext struct {
	context.Context // a context.WithoutCancel
	deadline        time.Time
}

func (c deadlineContext) Deadline() (time.Time, bool) { return c.deadline, true }

// UnsentError is the error of a command whose caller's context ended
// while it waited for a batch (in a Batcher's queue, or for its
// RunIndependent round): it was never sent. It wraps the context's error
// (errors.Is context.Canceled or DeadlineExceeded holds), and
// internal/failure's NotExecuted reports it.
type UnsentError struct{ Err error }

func (e *UnsentError) Error() string { return "not sent: " + e.Err.Error() }

// Unwrap returns the context's error.
func (e *UnsentError) Unwrap() error { return e.Err }

type batchingKey struct{}

// WithBatching marks ctx as the context of a command from an
// auto-pipeliner's batch: the routed client batches it (its node's
// Batcher) whether or not it auto-pipelines ordinary calls.
func WithBatching(ctx context.Context) context.Context {
	return context.WithValue(ctx, batchingKey{}, true)
}

// Batching reports whether ctx is marked by WithBatching.
func Batching(ctx context.Context) bool {
	v, _ := ctx.Value(batchingKey{}).(bool)
	return v
}

// RunIndependent runs the commands of an auto-pipeliner's batch as the
// independent commands they are, each through process (the routed
// client's single-command path: its own route, hold, re-run and refusal
// rules) with a context marked WithBatching, and keeps their order on
// each node: one goroutine each but the last, which runs on the caller's,
// all joined before it returns.
//
// The commands go out in rounds. Each command's goroutine routes it as
// alone and, where the single-command path would hand it to a node's
// Batcher, waits instead for the round: once every command still running
// waits so (or has finished without sending), the round sends, to each
// node, its commands in the batch's order as one pipeline (the durable
// ones' confirmation last), the nodes' pipelines at once. Commands that
// the client's rules re-run after their replies (a read after a failure
// signal, a write that provably did not run) go in the next round, in
// order among themselves: after the commands of their batch that were not
// refused. So one goroutine's submit order holds per node, as in one
// go-redis pipeline; a read routed to a replica is not ordered against a
// write on the master. A round's pipelines bypass the Batchers' queues
// and in-flight bound (the auto-pipeliner above sends one batch at a
// time).
//
// A panic in one command's path becomes that command's error (a
// *safe.PanicError). It returns nil: each command carries its own result,
// as in a pipeline.
func RunIndependent(ctx context.Context, cmds []redis.Cmder, process ProcessFunc) error {
	ctx = WithBatching(ctx)
	run := func(ctx context.Context, cmd redis.Cmder) {
		if err := safe.Call(func() { _ = process(ctx, cmd) }); err != nil {
			cmd.SetErr(err)
		}
	}
	switch len(cmds) {
	case 0:
		return nil
	case 1:
		run(ctx, cmds[0]) // nothing to order, and on the caller's goroutine
		return nil
	}
	// The caller's goroutine is the auto-pipeliner's executor of the batch:
	// only there may a command's results be read before the batch is over
	// (go-redis's deferred face blocks every other reader until then). So
	// the other goroutines work on a detached view of each command, and
	// the commands whose paths read their typed replies (SCAN's cursor)
	// run on the caller's goroutine, one after the other.
	r := &round{live: len(cmds)}
	own := make([]int, 0, 1)
	for i, cmd := range cmds {
		if _, ok := FindScan(cmd); ok {
			own = append(own, i)
		}
	}
	if len(own) == 0 {
		own = append(own, len(cmds)-1)
	}
	slot := func(i int) context.Context {
		return context.WithValue(ctx, roundKey{}, roundSlot{r: r, index: i})
	}
	var wg sync.WaitGroup
	next := 0 // the next of own
	for i, cmd := range cmds {
		if next < len(own) && own[next] == i {
			next++
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer r.finish()
			run(slot(i), &detached{Cmder: cmd})
		}()
	}
	for _, i := range own {
		run(slot(i), cmds[i])
		r.finish()
	}
	wg.Wait()
	return nil
}

// detached is a command of an auto-pipeliner's batch as RunIndependent's
// goroutines see it: its error is read without waiting for the batch
// (go-redis's deferred face makes Err, and String, wait until the batch
// the goroutine itself is running is over). Everything else is the
// command's own: the reply is read into it, and its error set on it too.
type detached struct {
	redis.Cmder
	err error
}

func (d *detached) Err() error { return d.err }

func (d *detached) SetErr(err error) {
	d.err = err
	d.Cmder.SetErr(err)
}

// String is the command's arguments and its error (go-redis's form
// without the reply, which cannot be read yet).
func (d *detached) String() string {
	var b strings.Builder
	for i, a := range d.Args() {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprint(&b, a)
	}
	if d.err != nil {
		b.WriteString(": ")
		b.WriteString(d.err.Error())
	}
	return b.String()
}

type roundKey struct{}

// roundSlot is a command's place in its RunIndependent batch.
type roundSlot struct {
	r     *round
	index int
}

// round sends the commands of one RunIndependent batch in lockstep (see
// RunIndependent): a round fires when each of its live commands waits in
// it; the goroutine whose arrival (or end) completes it sends it.
type round struct {
	mu      sync.Mutex
	live    int // commands whose path has not returned
	waiting []*roundEntry
}

// roundEntry is a command waiting in a round for its node's pipeline.
type roundEntry struct {
	index int
	b     *Batcher
	p     pending // ctx, cmd, required; confirm once sent
	done  chan struct{}
}

// do waits for cmd's round, which sends it on b, and returns as
// Batcher.do does.
func (r *round) do(ctx context.Context, s roundSlot, b *Batcher, cmd redis.Cmder, required int) ([]redis.Cmder, error) {
	e := &roundEntry{index: s.index, b: b, p: pending{ctx: ctx, cmd: cmd, required: required}, done: make(chan struct{})}
	r.mu.Lock()
	r.waiting = append(r.waiting, e)
	fired := r.take()
	r.mu.Unlock()
	if fired != nil {
		sendRound(fired)
	}
	select {
	case <-e.done:
	case <-ctx.Done():
		if r.withdraw(e) {
			err := &UnsentError{Err: ctx.Err()}
			cmd.SetErr(err)
			return nil, err
		}
		<-e.done // in a round on the wire: bounded by the node's timeouts
	}
	return e.p.confirm, cmd.Err()
}

// take returns the waiting commands when they are all the live ones (the
// round is complete), and starts the next round. Called with mu held.
func (r *round) take() []*roundEntry {
	if len(r.waiting) == 0 || len(r.waiting) < r.live {
		return nil
	}
	fired := r.waiting
	r.waiting = nil
	return fired
}

// finish records that a command's path returned: the round may now be
// complete without it.
func (r *round) finish() {
	r.mu.Lock()
	r.live--
	fired := r.take()
	r.mu.Unlock()
	if fired != nil {
		sendRound(fired)
	}
}

// withdraw takes e out of the round if the round has not fired.
func (r *round) withdraw(e *roundEntry) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i, q := range r.waiting {
		if q == e {
			r.waiting = append(r.waiting[:i], r.waiting[i+1:]...)
			return true
		}
	}
	return false
}

// sendRound sends a fired round: per node (Batcher), its commands in the
// batch's order as one pipeline, every node's at once, and wakes each
// command's goroutine.
func sendRound(entries []*roundEntry) {
	slices.SortFunc(entries, func(a, b *roundEntry) int { return cmp.Compare(a.index, b.index) })
	var groups [][]*roundEntry
	for _, e := range entries {
		i := slices.IndexFunc(groups, func(g []*roundEntry) bool { return g[0].b == e.b })
		if i < 0 {
			groups = append(groups, nil)
			i = len(groups) - 1
		}
		groups[i] = append(groups[i], e)
	}
	var wg sync.WaitGroup
	for _, g := range groups[1:] {
		safe.Go(&wg, nil, func() { sendGroup(g) }) // sendGroup fails its commands itself
	}
	sendGroup(groups[0])
	wg.Wait()
}

// sendGroup sends one node's commands of a round as one pipeline (the
// Batcher's send: the confirmation last, a panic as every command's
// error) and wakes them.
func sendGroup(g []*roundEntry) {
	// Whatever happens, every command's goroutine is woken.
	defer func() {
		for _, e := range g {
			close(e.done)
		}
	}()
	batch := make([]*pending, len(g))
	for i, e := range g {
		// Not a round any more below here: a target that is itself a
		// routed client must batch these as its own callers.
		e.p.ctx = context.WithValue(e.p.ctx, roundKey{}, roundSlot{})
		batch[i] = &e.p
	}
	var confirm []redis.Cmder
	g[0].b.send(batch, &confirm)
	for _, e := range g {
		e.p.confirm = confirm
	}
}
