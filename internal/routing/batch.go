package routing

import (
	"context"
	"sync"
	"sync/atomic"

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
// A batch runs without the callers' contexts' deadlines or cancellation (a
// caller giving up must not fail its batch-mates' commands): its socket
// reads and writes are bounded by the node client's ReadTimeout and
// WriteTimeout. A caller whose context ends while its command is still
// queued takes it out and gets the context's error: it was never sent. A
// command already sent runs to its reply, which the caller waits for.
//
// Replies are per command, as in any pipeline: one command's error does
// not fail the others, and a connection lost mid-batch fails every command
// not yet answered with the network error, which the routed client then
// judges per command (a read may be re-run; a write may have executed).
type Batcher struct {
	target   Target
	maxBatch int
	inflight int // batches that may be on the wire at once
	confirm  func(ctx context.Context, required int) []redis.Cmder

	mu      sync.Mutex
	queue   []*pending
	running int // batches on the wire, or about to be
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

// BatchConfig configures a Batcher.
type BatchConfig struct {
	// MaxBatch bounds the commands of one pipeline. Default
	// DefaultMaxBatch.
	MaxBatch int
	// MaxInflight bounds the batches on the wire at once, each on a
	// connection of its own. Default DefaultMaxInflight.
	MaxInflight int
	// Confirm returns the commands that confirm the writes of a batch on
	// its connection (WAIT, and WAITAOF), for required replicas: sent
	// after the batch's commands, once per batch, when a command of it
	// asked for confirmation (DoConfirmed). Nil: DoConfirmed is Do.
	Confirm func(ctx context.Context, required int) []redis.Cmder
	// Counts receives the Batcher's counts. Default: its own.
	Counts *BatchCounts
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
)

// NewBatcher returns a Batcher sending on target.
func NewBatcher(target Target, cfg BatchConfig) *Batcher {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.MaxInflight <= 0 {
		cfg.MaxInflight = DefaultMaxInflight
	}
	if cfg.Counts == nil {
		cfg.Counts = &BatchCounts{}
	}
	b := &Batcher{target: target, maxBatch: cfg.MaxBatch, inflight: cfg.MaxInflight, confirm: cfg.Confirm, counts: cfg.Counts}
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
	b.mu.Lock()
	if b.running < b.inflight && len(b.queue) == 0 {
		// Idle: send it at once, alone.
		b.running++
		b.mu.Unlock()
		return b.sendLone(ctx, cmd, required)
	}
	p := b.pool.Get().(*pending) //nolint:forcetypeassert // the pool holds only *pending
	p.ctx, p.cmd, p.required = ctx, cmd, required
	b.queue = append(b.queue, p)
	if b.running < b.inflight {
		// A batch slot is free but others queued first: lead now.
		b.running++
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
				err := ctx.Err()
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
	defer b.handOff()
	b.counts.Batches.Add(1)
	b.counts.Commands.Add(1)
	if required == 0 || b.confirm == nil {
		return nil, b.target.Process(ctx, cmd)
	}
	confirm = b.confirm(ctx, required)
	_, err = b.target.Pipelined(ctx, func(p redis.Pipeliner) error {
		_ = p.Process(ctx, cmd)
		for _, q := range confirm {
			_ = p.Process(ctx, q)
		}
		return nil
	})
	return confirm, cmd.Err()
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
	b.send(batch, &confirm)
	b.handOff()
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
func (b *Batcher) handOff() {
	b.mu.Lock()
	var next *pending
	for _, p := range b.queue {
		if !p.lead {
			next = p
			break
		}
	}
	if next == nil {
		b.running--
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
// *safe.PanicError instead of leaving their callers waiting.
func (b *Batcher) send(batch []*pending, confirm *[]redis.Cmder) {
	required := 0
	live := batch[:0:len(batch)]
	var ctx context.Context
	for _, p := range batch {
		if err := p.ctx.Err(); err != nil {
			p.cmd.SetErr(err)
			continue
		}
		live = append(live, p)
		required = max(required, p.required)
		if ctx == nil {
			ctx = p.ctx
		}
	}
	if len(live) == 0 {
		return
	}
	b.counts.Batches.Add(1)
	b.counts.Commands.Add(uint64(len(live)))
	// Not the callers' deadlines: see the type's documentation.
	ctx = context.WithoutCancel(ctx)
	if required > 0 && b.confirm != nil {
		*confirm = b.confirm(ctx, required)
	}
	if perr := safe.Call(func() {
		if len(live) == 1 && len(*confirm) == 0 {
			_ = b.target.Process(ctx, live[0].cmd)
			return
		}
		_, _ = b.target.Pipelined(ctx, func(p redis.Pipeliner) error {
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
	}
}

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
// rules) with a context marked WithBatching, all at once: one goroutine
// each but the last, which runs on the caller's, all joined before it
// returns. Underneath, the commands that go to the same node share round
// trips through its Batcher. A panic in one becomes that command's error
// (a *safe.PanicError). It returns nil: each command carries its own
// result, as in a pipeline.
func RunIndependent(ctx context.Context, cmds []redis.Cmder, process ProcessFunc) error {
	ctx = WithBatching(ctx)
	run := func(cmd redis.Cmder) {
		if err := safe.Call(func() { _ = process(ctx, cmd) }); err != nil {
			cmd.SetErr(err)
		}
	}
	if len(cmds) == 0 {
		return nil
	}
	var wg sync.WaitGroup
	for _, cmd := range cmds[:len(cmds)-1] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run(cmd)
		}()
	}
	run(cmds[len(cmds)-1])
	wg.Wait()
	return nil
}
