package errplace

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Workload is calls of every kind a routed client takes (pipelines with
// reads among their writes, transactions, Watch, single writes), each
// under a deadline of its own and some cancelled at a random moment,
// whose every error (each command's of a pipeline, and Exec's) is placed
// in a Tally. Each write carries a unique id, RPUSHed to its tag's list
// ("{tag}ids"): Check reads the lists and fails the test on a write found
// there whose call said it did not run, as on an unplaced error.
type Workload struct {
	c     redis.UniversalClient
	tally *Tally
	typed Typed
	tags  []string

	mu     sync.Mutex
	notRun map[string]string // id → the error that said it did not run
	calls  int
	stop   atomic.Bool
	wg     sync.WaitGroup
}

// NewWorkload returns a workload on c over tags (a cluster test gives one
// per shard), placing errors with typed.
func NewWorkload(c redis.UniversalClient, typed Typed, tags []string) *Workload {
	return &Workload{c: c, tally: NewTally(typed), typed: typed, tags: tags, notRun: map[string]string{}}
}

// Tally is the placements counted so far.
func (w *Workload) Tally() *Tally { return w.tally }

// list is tag's list of ids.
func list(tag string) string { return "{" + tag + "}ids" }

// judge places a call's error (and its commands') and remembers the ids
// that were said not to have run.
func (w *Workload) judge(what string, err error, ids []string, cmds []redis.Cmder) {
	w.mu.Lock()
	w.calls++
	w.mu.Unlock()
	if cmds == nil {
		if p := w.tally.Add(what, err); err != nil && p.Typed && !p.MayHaveRun {
			w.said(ids, err)
		}
		return
	}
	w.tally.AddCmds(what, cmds, err)
	i := 0
	for _, q := range cmds {
		if q.Name() != "rpush" {
			continue
		}
		if p := Place(q.Err(), w.typed); q.Err() != nil && p.Typed && !p.MayHaveRun {
			w.said(ids[i:i+1], q.Err())
		}
		i++
	}
}

func (w *Workload) said(ids []string, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		w.notRun[id] = err.Error()
	}
}

// run issues one call of a kind chosen by i, with ids made of g and i,
// under a deadline of d (every seventh cancelled at a random moment
// within it).
func (w *Workload) run(ctx context.Context, g, i int, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	if i%7 == 3 {
		t := time.AfterFunc(time.Duration(rand.Int64N(int64(d))), cancel) //nolint:gosec // a test's jitter
		defer t.Stop()
	}
	id := func(j int) string { return fmt.Sprintf("%d:%d:%d", g, i, j) }
	tag := w.tags[(g+i)%len(w.tags)]
	switch i % 4 {
	case 0: // a pipeline over every tag, reads among the writes
		var ids []string
		cmds, err := w.c.Pipelined(ctx, func(p redis.Pipeliner) error {
			for j, t := range w.tags {
				ids = append(ids, id(j))
				p.RPush(ctx, list(t), id(j))
				p.Get(ctx, "{"+t+"}missing")
			}
			return nil
		})
		w.judge("pipeline", err, ids, cmds)
	case 1: // a transaction on one slot
		ids := []string{id(0), id(1)}
		cmds, err := w.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.RPush(ctx, list(tag), ids[0])
			p.LLen(ctx, list(tag))
			p.RPush(ctx, list(tag), ids[1])
			return nil
		})
		w.judge("transaction", err, ids, cmds)
	case 2: // WATCH ... MULTI ... EXEC
		ids := []string{id(0)}
		err := w.c.Watch(ctx, func(tx *redis.Tx) error {
			if err := tx.Get(ctx, "{"+tag+"}watched").Err(); err != nil && !errors.Is(err, redis.Nil) {
				return err
			}
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				p.RPush(ctx, list(tag), ids[0])
				return nil
			})
			return err
		}, "{"+tag+"}watched")
		w.judge("watch", err, ids, nil)
	default:
		ids := []string{id(0)}
		w.judge("rpush", w.c.RPush(ctx, list(tag), ids[0]).Err(), ids, nil)
	}
}

// Start runs n goroutines of calls, each under deadline d, until Stop.
func (w *Workload) Start(ctx context.Context, n int, d time.Duration) {
	for g := range n {
		w.wg.Go(func() {
			for i := 0; !w.stop.Load() && ctx.Err() == nil; i++ {
				w.run(ctx, g, i, d)
			}
		})
	}
}

// Stop stops the calls and waits for them. Safe to call twice.
func (w *Workload) Stop() {
	w.stop.Store(true)
	w.wg.Wait()
}

// Check stops the calls, then reads the lists (through the client: call it
// once the topology has healed) and fails the test on an unplaced error,
// and on a write said not to have run that is in its list. It fails it
// too when no call failed: the faults provoked nothing to place.
func (w *Workload) Check(ctx context.Context, t testing.TB) {
	t.Helper()
	w.Stop()
	ran := 0
	for _, tag := range w.tags {
		ids, err := w.c.LRange(ctx, list(tag), 0, -1).Result()
		if err != nil {
			t.Fatalf("reading %s: %v", list(tag), err)
		}
		for _, id := range ids {
			if why, ok := w.notRun[id]; ok {
				ran++
				if ran <= 5 {
					t.Errorf("write %s ran, but its call said it did not: %s", id, why)
				}
			}
		}
	}
	t.Logf("%d calls; errors: %s", w.calls, w.tally.Line())
	w.tally.Check(t)
	if ran > 5 {
		t.Errorf("%d writes in all ran though their calls said they did not", ran)
	}
	if w.tally.Line() == "none" {
		t.Error("no call failed: the faults provoked nothing to place")
	}
}

// Stalled is the writes of StallCalls, each with what its call said.
type Stalled struct {
	list string
	said map[string]Placement // id → its call's (or command's) placement
}

// stallScript keeps the server busy for ARGV[2] microseconds, then
// pushes ARGV[1] to KEYS[1]: a write that stalls its server past its
// caller's deadline, and then runs. The clock is TIME where it moves
// during a script (Redis 7.0, which has no os), else os.clock (Valkey 8
// freezes TIME for a script's run; os.clock is CPU time, so on a loaded
// machine the stall lasts longer, never shorter).
var stallScript = redis.NewScript(`
local hasOS, lib = pcall(function() return os end)
local now
if hasOS and lib and lib.clock then
  now = function() return lib.clock() * 1000000 end
else
  now = function() local t = redis.call('TIME'); return t[1] * 1000000 + t[2] end
end
local start = now()
repeat until now() - start >= tonumber(ARGV[2])
return redis.call('RPUSH', KEYS[1], ARGV[1])`)

// StallCalls runs, on c, a pipeline (a stalling write, a read and a
// write), a transaction (a stalling write and a write), a Watch whose
// transaction stalls and writes, and a single stalling write, each under
// a deadline of d, each stalling its server for 3d (a script that keeps
// it busy, then writes): each call fails at its deadline, and its writes
// run once the server is free. Each write pushes a unique id to tag's
// list ({tag}ids). Every error must be placed (the test fails at once
// otherwise); CheckRan then checks what they said against what ran.
func StallCalls(ctx context.Context, t testing.TB, c redis.UniversalClient, typed Typed, tag string, d time.Duration) *Stalled {
	t.Helper()
	s := &Stalled{list: list(tag), said: map[string]Placement{}}
	stall := (3 * d).Microseconds()
	place := func(what string, err error, ids ...string) {
		t.Helper()
		p := Place(err, typed)
		if !p.Placed {
			t.Errorf("%s stalled past its deadline: %T %v: %s", what, err, err, p)
		}
		t.Logf("%s stalled past its deadline: %s: %v", what, p, err)
		for _, id := range ids {
			s.said[id] = p
		}
	}
	call := func(f func(ctx context.Context)) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, d)
		f(cctx)
		cancel()
		// Wait for the server to be free: the next call's connection
		// must not spend its deadline waiting for this stall to end.
		deadline := time.Now().Add(30 * time.Second)
		for err := c.Get(ctx, "{"+tag+"}free").Err(); err != nil && !errors.Is(err, redis.Nil); err = c.Get(ctx, "{"+tag+"}free").Err() {
			if time.Now().After(deadline) || ctx.Err() != nil {
				t.Fatalf("the server still busy 30 s after a stalled call: %v", err)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	call(func(ctx context.Context) {
		cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
			stallScript.Eval(ctx, p, []string{s.list}, "pipeline-1", stall)
			p.Get(ctx, "{"+tag+"}missing")
			p.RPush(ctx, s.list, "pipeline-2")
			return nil
		})
		for i, q := range cmds {
			id := ""
			switch i {
			case 0:
				id = "pipeline-1"
			case 2:
				id = "pipeline-2"
			}
			place("a pipeline's "+q.Name(), q.Err(), id)
		}
		place("a pipeline", err)
	})
	call(func(ctx context.Context) {
		cmds, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			stallScript.Eval(ctx, p, []string{s.list}, "tx-1", stall)
			p.RPush(ctx, s.list, "tx-2")
			return nil
		})
		for _, q := range cmds {
			place("a transaction's "+q.Name(), q.Err())
		}
		place("a transaction", err, "tx-1", "tx-2")
	})
	call(func(ctx context.Context) {
		err := c.Watch(ctx, func(tx *redis.Tx) error {
			_, err := tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
				stallScript.Eval(ctx, p, []string{s.list}, "watch-1", stall)
				return nil
			})
			return err
		}, s.list)
		place("a Watch", err, "watch-1")
	})
	call(func(ctx context.Context) {
		place("a script", stallScript.Eval(ctx, c, []string{s.list}, "single-1", stall).Err(), "single-1")
	})
	return s
}

// CheckRan reads the stalled calls' list through c, and fails the test
// on a write that ran though its call said it did not; and, with
// mustRun, when none of them ran (the stall did not hold a write that was
// sent). A test whose topology may have changed during the stall (a
// failover, a switch: what ran there is elsewhere now) passes false.
func (s *Stalled) CheckRan(ctx context.Context, t testing.TB, c redis.UniversalClient, mustRun bool) {
	t.Helper()
	ids, err := c.LRange(ctx, s.list, 0, -1).Result()
	for deadline := time.Now().Add(30 * time.Second); err != nil; ids, err = c.LRange(ctx, s.list, 0, -1).Result() {
		if time.Now().After(deadline) || ctx.Err() != nil { // a cluster recovering from a long stall: CLUSTERDOWN a while
			t.Fatalf("reading %s: %v", s.list, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("stalled writes that ran: %v", ids)
	if len(ids) == 0 && mustRun {
		t.Error("no stalled write ran: the stall did not hold a write that was sent")
	}
	for _, id := range ids {
		if p, ok := s.said[id]; !ok || !p.MayHaveRun {
			t.Errorf("stalled write %s ran, but its call said %s", id, p)
		}
	}
}
