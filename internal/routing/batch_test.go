package routing

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/safe"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestBatcherConcurrentCallers runs many goroutines' commands through one
// Batcher on a real server: every command gets its own reply, in each
// goroutine's order, and concurrent commands share round trips.
func TestBatcherConcurrentCallers(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	_, rdb := standaloneClient(t)
	b := NewBatcher(rdb, BatchConfig{})

	const goroutines, each = 64, 300
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := "k" + strconv.Itoa(g)
			for i := range each {
				incr := redis.NewIntCmd(ctx, "incr", key)
				if err := b.Do(ctx, incr); err != nil || incr.Val() != int64(i+1) {
					errs <- fmt.Errorf("goroutine %d, INCR %d: %d, %v; want %d", g, i, incr.Val(), err, i+1)
					return
				}
				get := redis.NewStringCmd(ctx, "get", key)
				if err := b.Do(ctx, get); err != nil || get.Val() != strconv.Itoa(i+1) {
					errs <- fmt.Errorf("goroutine %d, GET after INCR %d: %q, %v", g, i, get.Val(), err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st := b.Stats()
	t.Logf("%d commands in %d round trips (mean batch %.1f)", st.Commands, st.Batches, float64(st.Commands)/float64(st.Batches))
	if st.Commands != goroutines*each*2 {
		t.Errorf("Stats.Commands = %d, want %d", st.Commands, goroutines*each*2)
	}
	if st.Batches*2 > st.Commands {
		t.Errorf("%d round trips for %d commands from %d goroutines: not batched", st.Batches, st.Commands, goroutines)
	}
	if b.running != 0 || len(b.queue) != 0 {
		t.Errorf("after the callers: %d batch slots held, %d queued", b.running, len(b.queue))
	}
}

// TestBatcherLoneCaller checks that a caller alone is sent at once, on its
// own (no pipeline): one round trip per command.
func TestBatcherLoneCaller(t *testing.T) {
	ctx := testkit.Context(t, 20*time.Second)
	_, rdb := standaloneClient(t)
	counter := &testkit.CommandCounter{}
	rdb.AddHook(counter)
	b := NewBatcher(rdb, BatchConfig{})
	for i := range 50 {
		if err := b.Do(ctx, redis.NewStatusCmd(ctx, "set", "k", i)); err != nil {
			t.Fatal(err)
		}
	}
	if st := b.Stats(); st.Batches != 50 || st.Commands != 50 {
		t.Errorf("Stats = %+v, want 50 round trips of one command", st)
	}
	if p := counter.Pipelines(); p != 0 {
		t.Errorf("%d pipelines for a lone caller, want 0", p)
	}
}

// TestBatcherCallerGivesUpWhileQueued: with the node paused, the first
// command is on the wire and the others queue; those whose context ends
// leave the queue with the context's error and are never sent, and the
// rest run when the node resumes.
func TestBatcherCallerGivesUpWhileQueued(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l, rdb := standaloneClient(t)
	b := NewBatcher(rdb, BatchConfig{MaxInflight: 1})
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	first := make(chan error, 1)
	go func() { first <- b.Do(ctx, redis.NewStatusCmd(ctx, "set", "first", 1)) }()
	testkit.WaitFor(t, 5*time.Second, "the first command on the wire", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.running == 1
	})
	var wg sync.WaitGroup
	var gaveUp, ran atomic.Int32
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			callCtx := ctx
			if i%2 == 0 {
				var cancel context.CancelFunc
				callCtx, cancel = context.WithTimeout(ctx, 100*time.Millisecond)
				defer cancel()
			}
			err := b.Do(callCtx, redis.NewStatusCmd(ctx, "set", "q"+strconv.Itoa(i), 1))
			switch {
			case i%2 == 0 && errors.Is(err, context.DeadlineExceeded) && errors.As(err, new(*UnsentError)):
				gaveUp.Add(1) // withdrawn from the queue: never sent, and says so
			case i%2 == 1 && err == nil:
				ran.Add(1)
			default:
				t.Errorf("command %d: %v", i, err)
			}
		}()
	}
	testkit.WaitFor(t, 5*time.Second, "five callers gave up", func() bool { return gaveUp.Load() == 5 })
	if err := l.Node(0).Resume(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if err := <-first; err != nil {
		t.Fatalf("the command on the wire: %v", err)
	}
	if ran.Load() != 5 {
		t.Fatalf("%d of the 5 patient commands ran", ran.Load())
	}
	for i := range 10 {
		n, err := rdb.Exists(ctx, "q"+strconv.Itoa(i)).Result()
		if err != nil || (i%2 == 0) != (n == 0) {
			t.Errorf("q%d exists = %d, %v: a command given up was sent, or a kept one was not", i, n, err)
		}
	}
}

// TestBatcherConnectionLost kills the server under a batch: every command
// of it fails with the network error, each on its own, and no caller is
// left waiting.
func TestBatcherConnectionLost(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Proxy: true})
	rdb := l.Node(0).NewClient()
	defer rdb.Close()
	b := NewBatcher(rdb, BatchConfig{MaxInflight: 1})
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	l.Node(0).BlackHole()
	var wg sync.WaitGroup
	errs := make([]error, 20)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = b.Do(ctx, redis.NewStringCmd(ctx, "get", "k"))
		}()
	}
	time.Sleep(200 * time.Millisecond)
	l.Node(0).ResetConnections()
	wg.Wait()
	for i, err := range errs {
		if err == nil || errors.Is(err, redis.Nil) {
			t.Errorf("command %d: %v, want the lost connection's error", i, err)
		}
	}
	l.Node(0).Restore()
	if err := b.Do(ctx, redis.NewStatusCmd(ctx, "ping")); err != nil {
		t.Fatalf("after the node is back: %v", err)
	}
}

// panicHook panics in every pipeline.
type panicHook struct{}

func (panicHook) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (panicHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (panicHook) ProcessPipelineHook(redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(context.Context, []redis.Cmder) error { panic("hook bug") }
}

// TestBatcherPanic: a panic while a batch is sent fails that batch's
// commands with a *safe.PanicError; no caller waits forever and later
// commands run.
func TestBatcherPanic(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	_, rdb := standaloneClient(t)
	rdb.AddHook(panicHook{})
	b := NewBatcher(rdb, BatchConfig{MaxInflight: 1})
	var wg sync.WaitGroup
	var panicked atomic.Int32
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := b.Do(ctx, redis.NewStatusCmd(ctx, "ping"))
			var pe *safe.PanicError
			if errors.As(err, &pe) {
				panicked.Add(1)
			} else if err != nil {
				t.Errorf("PING: %v", err)
			}
		}()
	}
	wg.Wait()
	t.Logf("%d of 32 commands were in a pipeline that panicked", panicked.Load())
	if b.running != 0 || len(b.queue) != 0 {
		t.Errorf("after the callers: %d batch slots held, %d queued", b.running, len(b.queue))
	}
}

// TestAutoFrontSeparatesBatchesFromPipelines: on an auto front, the
// auto-pipeliner's batches reach the batch function and the front's own
// pipelines and transactions the pipeline function, so a user pipeline
// keeps its whole-pipeline semantics.
func TestAutoFrontSeparatesBatchesFromPipelines(t *testing.T) {
	ctx := testkit.Context(t, 20*time.Second)
	var singles, pipelines, batches, batched atomic.Int64
	answer := func(cmd redis.Cmder) {
		if c, ok := cmd.(*redis.StatusCmd); ok {
			c.SetVal("OK")
		}
	}
	front := NewAutoFront(&redis.Options{Addr: "auto"},
		func(_ context.Context, cmd redis.Cmder) error { singles.Add(1); answer(cmd); return nil },
		func(_ context.Context, cmds []redis.Cmder) error {
			pipelines.Add(1)
			for _, c := range cmds {
				answer(c)
			}
			return nil
		},
		func(_ context.Context, cmds []redis.Cmder) error {
			batches.Add(1)
			batched.Add(int64(len(cmds)))
			for _, c := range cmds {
				answer(c)
			}
			return nil
		})
	defer front.Close()
	ap, err := front.AutoPipeline()
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 20 {
				if err := ap.Set(ctx, "k", "v", 0).Err(); err != nil {
					t.Errorf("SET through the auto-pipeliner: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	if _, err := ap.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", 1, 0)
		p.Set(ctx, "b", 2, 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := front.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Set(ctx, "a", 1, 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d singles, %d commands in %d batches, %d pipelines", singles.Load(), batched.Load(), batches.Load(), pipelines.Load())
	if singles.Load()+batched.Load() != 64*20 || batches.Load() == 0 {
		t.Errorf("auto-pipelined: %d singles + %d in %d batches, want 1280 in all, some batched", singles.Load(), batched.Load(), batches.Load())
	}
	if pipelines.Load() != 2 {
		t.Errorf("%d calls of the pipeline function, want 2 (the user's pipeline and transaction)", pipelines.Load())
	}
}

// TestBatcherCallerGivesUpWhileSent: a caller whose context ends while
// its command is already on the wire waits for the reply without
// spinning, and gets the command's own result.
func TestBatcherCallerGivesUpWhileSent(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l, rdb := standaloneClient(t)
	b := NewBatcher(rdb, BatchConfig{MaxInflight: 1})
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	lone := make(chan error, 1)
	go func() { lone <- b.Do(ctx, redis.NewStatusCmd(ctx, "ping")) }()
	testkit.WaitFor(t, 5*time.Second, "the lone command on the wire", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.running == 1
	})
	// Two more queue; when the lone one returns, they go out together.
	callCtx, cancel := context.WithCancel(ctx)
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- b.Do(callCtx, redis.NewStatusCmd(ctx, "set", "sent", 1)) }()
	}
	testkit.WaitFor(t, 5*time.Second, "two queued", func() bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		return len(b.queue) == 2
	})
	if err := l.Node(0).Resume(); err != nil {
		t.Fatal(err)
	}
	if err := <-lone; err != nil {
		t.Fatal(err)
	}
	cancel() // the two may be on the wire by now, or still queued
	for range 2 {
		if err := <-errs; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("queued SET: %v", err)
		}
	}
	if b.running != 0 || len(b.queue) != 0 {
		t.Errorf("after the callers: %d batch slots held, %d queued", b.running, len(b.queue))
	}
}

// TestRunIndependentKeepsOrder runs a batch of commands for two nodes
// (two Batchers) through RunIndependent: each node gets its commands in
// the batch's order, in one round trip; a command whose path ends without
// sending, or panics, does not hold the others; one re-run after its reply
// goes out in a second round, after the commands that were not re-run.
func TestRunIndependentKeepsOrder(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	_, rdb := standaloneClient(t)
	nodes := map[byte]*Batcher{
		'a': NewBatcher(rdb, BatchConfig{}),
		'b': NewBatcher(rdb, BatchConfig{}),
	}
	refused := errors.New("refused before sending")
	var reruns atomic.Int32
	process := func(ctx context.Context, cmd redis.Cmder) error {
		key := cmd.Args()[1].(string) //nolint:forcetypeassert // the test's own commands
		switch key {
		case "none":
			cmd.SetErr(refused)
			return refused
		case "panic":
			panic("in one command's path")
		}
		b := nodes[key[1]]
		err := b.Do(ctx, cmd)
		if key == "lb" && cmd.Args()[2] == "rerun" {
			// As a read re-run after a failure signal: once more, after
			// the round's other commands.
			reruns.Add(1)
			cmd.SetErr(nil)
			err = b.Do(ctx, cmd)
		}
		return err
	}
	const n = 400
	var cmds []redis.Cmder
	for i := range n {
		key := "la"
		if i%3 == 0 {
			key = "lb"
		}
		cmds = append(cmds, redis.NewIntCmd(ctx, "rpush", key, strconv.Itoa(i)))
	}
	cmds[30] = redis.NewIntCmd(ctx, "rpush", "lb", "rerun")
	cmds = append(cmds, redis.NewIntCmd(ctx, "get", "none"), redis.NewIntCmd(ctx, "get", "panic"))
	if err := RunIndependent(ctx, cmds, process); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(cmds[n].Err(), refused) {
		t.Errorf("the command refused before sending: %v", cmds[n].Err())
	}
	var pe *safe.PanicError
	if !errors.As(cmds[n+1].Err(), &pe) {
		t.Errorf("the command whose path panicked: %v, want a *safe.PanicError", cmds[n+1].Err())
	}
	for _, cmd := range cmds[:n] {
		if cmd.Err() != nil {
			t.Fatalf("%v: %v", cmd.Args(), cmd.Err())
		}
	}
	for _, key := range []string{"la", "lb"} {
		var want []string
		for i := range n {
			switch {
			case i == 30:
				if key == "lb" {
					want = append(want, "rerun") // its first send, in its place
				}
			case (key == "lb") == (i%3 == 0):
				want = append(want, strconv.Itoa(i))
			}
		}
		if key == "lb" {
			want = append(want, "rerun") // re-run after the rest
		}
		got, err := rdb.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s = %v\nwant %v", key, got, want)
		}
	}
	for k, b := range nodes {
		st := b.Stats()
		want := uint64(1)
		if k == 'b' {
			want = 2 // the re-run's round
		}
		if st.Batches != want {
			t.Errorf("node %c: %d round trips for %d commands, want %d", k, st.Batches, st.Commands, want)
		}
	}
	if reruns.Load() != 1 {
		t.Errorf("%d re-runs, want 1", reruns.Load())
	}
}

// TestRunIndependentGivesUpInRound checks that a command whose context ends
// while it waits for its round (another command of the batch is still on
// its way) is taken out, never sent, and the round still fires.
func TestRunIndependentGivesUpInRound(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	_, rdb := standaloneClient(t)
	b := NewBatcher(rdb, BatchConfig{})
	gaveUp := make(chan struct{})
	process := func(pctx context.Context, cmd redis.Cmder) error {
		switch cmd.Args()[1] {
		case "slow":
			<-gaveUp // still on its way: the round cannot fire yet
		case "cancelled":
			cctx, cancel := context.WithTimeout(pctx, 50*time.Millisecond)
			defer cancel()
			defer close(gaveUp)
			return b.Do(cctx, cmd)
		}
		return b.Do(pctx, cmd)
	}
	cmds := []redis.Cmder{
		redis.NewStatusCmd(ctx, "set", "first", "1"),
		redis.NewStatusCmd(ctx, "set", "cancelled", "1"),
		redis.NewStatusCmd(ctx, "set", "slow", "1"),
	}
	if err := RunIndependent(ctx, cmds, process); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(cmds[1].Err(), context.DeadlineExceeded) || !errors.As(cmds[1].Err(), new(*UnsentError)) {
		t.Errorf("the command given up in its round: %v, want an *UnsentError wrapping its context's error", cmds[1].Err())
	}
	for _, i := range []int{0, 2} {
		if cmds[i].Err() != nil {
			t.Errorf("%v: %v", cmds[i].Args(), cmds[i].Err())
		}
	}
	if n := rdb.Exists(ctx, "first", "cancelled", "slow").Val(); n != 2 {
		t.Errorf("%d of first, cancelled, slow exist, want 2 (the cancelled one never sent)", n)
	}
	if st := b.Stats(); st.Batches != 1 || st.Commands != 2 {
		t.Errorf("stats %+v, want the two commands in one round trip", st)
	}
}

// standaloneClient starts a standalone lab server for the test and
// returns it and a client of it, closed with the test.
// stoppableClient is standaloneClient with 20 s socket timeouts: the
// tests that stop the server (SIGSTOP) look at the Batcher while it is
// stopped, and their commands must not time out meanwhile, however slow
// the machine.
func stoppableClient(t *testing.T) (*lab.Lab, *redis.Client) {
	t.Helper()
	l := lab.New(t, lab.Standalone())
	opt := l.Node(0).Options()
	opt.ReadTimeout, opt.WriteTimeout = 20*time.Second, 20*time.Second
	rdb := redis.NewClient(opt)
	t.Cleanup(func() { _ = rdb.Close() })
	return l, rdb
}

func standaloneClient(t *testing.T) (*lab.Lab, *redis.Client) {
	t.Helper()
	l := lab.New(t, lab.Standalone())
	rdb := l.Node(0).NewClient()
	t.Cleanup(func() { _ = rdb.Close() })
	return l, rdb
}

// TestRTTFilter: the filter gives the smallest round trip of the current
// window and the one before, so a node that moved away is seen as far once
// its near samples are two windows old.
func TestRTTFilter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := time.Millisecond
	type sample struct {
		at time.Duration // after t0
		d  time.Duration
	}
	for _, tc := range []struct {
		name    string
		samples []sample
		want    time.Duration
	}{
		{"none", nil, 0},
		{"one", []sample{{0, 3 * ms}}, 3 * ms},
		{"smallest of a window", []sample{{0, 3 * ms}, {100 * ms, ms}, {200 * ms, 5 * ms}}, ms},
		{"the previous window's smaller", []sample{{0, ms}, {1100 * ms, 6 * ms}}, ms},
		{"two windows on, the near sample is gone", []sample{{0, ms}, {1100 * ms, 6 * ms}, {2200 * ms, 7 * ms}}, 6 * ms},
		{"a silent window keeps the last one known", []sample{{0, ms}, {5 * time.Second, 6 * ms}}, ms},
		{"moved closer: at once", []sample{{0, 6 * ms}, {10 * ms, 100 * time.Microsecond}}, 100 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var f rttFilter
			for _, s := range tc.samples {
				f.add(t0.Add(s.at), s.d)
			}
			if got := f.min(); got != tc.want {
				t.Errorf("min = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBatcherWindow: a near node gets MaxInflight batches on the wire, a
// far one as many as the pool has connections (or FarInflight), and a
// node not measured yet counts as near.
func TestBatcherWindow(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", PoolSize: 12}) // never dialled
	defer rdb.Close()
	now := time.Now()
	for _, tc := range []struct {
		name string
		cfg  BatchConfig
		rtt  time.Duration // 0: none measured
		want int
	}{
		{"not measured", BatchConfig{}, 0, DefaultMaxInflight},
		{"near", BatchConfig{}, 200 * time.Microsecond, DefaultMaxInflight},
		{"far: the pool's size", BatchConfig{}, 6 * time.Millisecond, 12},
		{"at the bound", BatchConfig{}, DefaultFarRoundTrip, 12},
		{"FarInflight", BatchConfig{FarInflight: 5}, 6 * time.Millisecond, 5},
		{"FarRoundTrip", BatchConfig{FarRoundTrip: 10 * time.Millisecond}, 6 * time.Millisecond, DefaultMaxInflight},
		{"MaxInflight above the pool", BatchConfig{MaxInflight: 16}, 6 * time.Millisecond, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBatcher(rdb, tc.cfg)
			if tc.rtt > 0 {
				b.mu.Lock()
				b.observe(now, tc.rtt)
				b.mu.Unlock()
			}
			if got := b.window(b.far.Load()); got != tc.want {
				t.Errorf("window = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestBatcherMayOpen: the first batch always goes; a far node's up to its
// far window; a near node's second only while the client's Batchers have
// fewer than MaxInflight batches on the wire in all.
func TestBatcherMayOpen(t *testing.T) {
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", PoolSize: 12}) // never dialled
	defer rdb.Close()
	for _, tc := range []struct {
		name          string
		running, wire int // the node's batches on the wire, the client's
		far           bool
		want          bool
	}{
		{"idle node, busy client", 0, 5, false, true},
		{"near, alone in the client", 1, 1, false, true},
		{"near, another node busy", 1, 2, false, false},
		{"near, window full", 2, 2, false, false},
		{"far, another node busy", 1, 4, true, true},
		{"far, beyond the near window", 5, 5, true, true},
		{"far, window full", 12, 12, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := NewBatcher(rdb, BatchConfig{FarInflight: 12})
			b.far.Store(tc.far)
			b.running = tc.running
			b.wire.n.Store(int64(tc.wire))
			if got := b.mayOpen(tc.far); got != tc.want {
				t.Errorf("mayOpen = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestBatcherSharedWire: two Batchers of one client on a stalled node,
// each with a command on the wire: a command queued behind one of them
// waits for the next batch instead of opening a second, while a Batcher
// counting only its own batches opens one. Once the node answers every
// command has its reply and the counts are back to 0.
func TestBatcherSharedWire(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l, rdb := stoppableClient(t)
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	var wire WireCount
	a := NewBatcher(rdb, BatchConfig{Wire: &wire})
	other := NewBatcher(rdb, BatchConfig{Wire: &wire})
	alone := NewBatcher(rdb, BatchConfig{})
	if err := l.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 6)
	do := func(b *Batcher) { go func() { errs <- b.Do(ctx, redis.NewStatusCmd(ctx, "ping")) }() }
	state := func(b *Batcher) (running, queued int) {
		b.mu.Lock()
		defer b.mu.Unlock()
		return b.running, len(b.queue)
	}
	waitState := func(name string, b *Batcher, running, queued int) {
		t.Helper()
		testkit.WaitFor(t, 5*time.Second, fmt.Sprintf("%s: %d batches on the wire, %d queued", name, running, queued), func() bool {
			r, q := state(b)
			return r == running && q == queued
		})
	}
	do(a)
	do(other)
	waitState("a", a, 1, 0)
	waitState("other", other, 1, 0)
	do(a) // the client has 2 batches out: it waits
	do(alone)
	waitState("alone", alone, 1, 0)
	do(alone) // alone in its client: a second batch
	waitState("alone's second", alone, 2, 0)
	testkit.WaitFor(t, 5*time.Second, "a's second command queued or sent", func() bool {
		r, q := state(a)
		return r+q == 2
	})
	if r, q := state(a); r != 1 || q != 1 {
		t.Errorf("a, with the client's budget spent: %d batches on the wire, %d queued; want 1, 1", r, q)
	}
	if err := l.Node(0).Resume(); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for name, b := range map[string]*Batcher{"a": a, "other": other, "alone": alone} {
		if r, q := state(b); r != 0 || q != 0 {
			t.Errorf("%s after the replies: %d batches on the wire, %d queued", name, r, q)
		}
	}
	if n := wire.n.Load(); n != 0 {
		t.Errorf("the shared count after the replies: %d", n)
	}
}

// TestBatcherBlockingCommandsAlone: commands BatchConfig.Blocking names
// go straight to the node, outside batches and the in-flight count: with
// two BLPOPs blocked on the server, the Batcher has nothing on the wire,
// and other callers' commands run at once instead of queueing behind
// them.
func TestBatcherBlockingCommandsAlone(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l, rdb := standaloneClient(t)
	b := NewBatcher(rdb, BatchConfig{Blocking: func(cmd redis.Cmder) bool { return cmd.Name() == "blpop" }})
	popped := make(chan error, 2)
	for _, q := range []string{"blocking:q1", "blocking:q2"} {
		go func() {
			cmd := redis.NewStringSliceCmd(ctx, "blpop", q, 20)
			popped <- b.Do(ctx, cmd)
		}()
	}
	testkit.WaitFor(t, 10*time.Second, "two clients blocked on the server", func() bool {
		info, err := l.Node(0).Info(ctx, "clients")
		return err == nil && info["blocked_clients"] == "2"
	})
	b.mu.Lock()
	running := b.running
	b.mu.Unlock()
	if running != 0 || b.wire.n.Load() != 0 {
		t.Errorf("with two BLPOPs blocked: %d batches on the wire (client: %d), want none", running, b.wire.n.Load())
	}
	// The node's other callers are not held: each has its reply long
	// before the BLPOPs' 20 s.
	testkit.AllAnswer(ctx, t, 8, 5*time.Second, "GET beside two BLPOPs", func(ctx context.Context) error {
		return b.Do(ctx, redis.NewStringCmd(ctx, "get", "blocking:k"))
	})
	if err := rdb.LPush(ctx, "blocking:q1", "a").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.LPush(ctx, "blocking:q2", "b").Err(); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-popped; err != nil {
			t.Errorf("BLPOP: %v", err)
		}
	}
}

// TestBatcherFarNodeSendsAtOnce: once the Batcher has measured a node 6 ms
// away, concurrent callers (fewer than the pool's connections) each send
// at once, alone, as without auto-pipelining: none waits for another's
// batch.
func TestBatcherFarNodeSendsAtOnce(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Nodes: []lab.NodeConfig{{Latency: 6 * time.Millisecond}}})
	opt := l.Node(0).Options()
	opt.PoolSize = 16
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	counter := &testkit.CommandCounter{}
	rdb.AddHook(counter)
	b := NewBatcher(rdb, BatchConfig{})
	if err := b.Do(ctx, redis.NewStatusCmd(ctx, "ping")); err != nil {
		t.Fatal(err)
	}
	if w := b.window(b.far.Load()); w != 16 {
		t.Fatalf("window after a 6 ms round trip: %d, want the pool's 16", w)
	}
	const goroutines, each = 8, 10
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				if err := b.Do(ctx, redis.NewStringCmd(ctx, "get", "k")); err != nil && !errors.Is(err, redis.Nil) {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if p := counter.Pipelines(); p != 0 {
		t.Errorf("%d pipelines for %d callers on a far node with %d connections: some waited for a batch", p, goroutines, opt.PoolSize)
	}
	if st := b.Stats(); st.Batches != st.Commands {
		t.Errorf("Stats = %+v: want every command alone", st)
	}
}

// TestBatcherStalledNodeDeadlines: with the node stalled (SIGSTOP) and a
// ReadTimeout of 20 s, callers with 300-500 ms deadlines all return by the
// latest of them, plus a margin: a queued command withdrawn unsent, a
// command on the wire with an error that says it may have run (not an
// *UnsentError), none waiting for the ReadTimeout.
func TestBatcherStalledNodeDeadlines(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l, rdb := stoppableClient(t)
	b := NewBatcher(rdb, BatchConfig{MaxInflight: 1})
	if err := b.Do(ctx, redis.NewStatusCmd(ctx, "ping")); err != nil {
		t.Fatal(err)
	}
	if err := l.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Node(0).Resume() }()
	const callers = 12
	start := time.Now()
	var latest time.Time
	type result struct {
		err  error
		took time.Duration
	}
	results := make([]result, callers)
	var wg sync.WaitGroup
	for i := range callers {
		timeout := 300*time.Millisecond + time.Duration(i)*200*time.Millisecond/callers
		if d := start.Add(timeout); d.After(latest) {
			latest = d
		}
		wg.Go(func() {
			callCtx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			err := b.Do(callCtx, redis.NewStatusCmd(ctx, "set", "k"+strconv.Itoa(i), i))
			results[i] = result{err, time.Since(start)}
		})
		time.Sleep(2 * time.Millisecond) // the first on the wire alone, the rest queued or batched
	}
	wg.Wait()
	// A margin for a loaded machine, far below the ReadTimeout this test
	// tells apart: a batch that ignored the deadlines would wait 20 s.
	bound := latest.Sub(start) + 2*time.Second
	var unsent, mayHaveRun int
	for i, r := range results {
		switch {
		case r.err == nil:
			t.Errorf("caller %d: no error from a stalled node", i)
		case errors.As(r.err, new(*UnsentError)):
			unsent++
		default:
			mayHaveRun++
		}
		if r.took > bound {
			t.Errorf("caller %d returned after %v (%v), want by %v: past every deadline of its batch", i, r.took, r.err, bound)
		}
	}
	t.Logf("%d withdrawn unsent, %d failed on the wire (may have run); the latest deadline %v after the start",
		unsent, mayHaveRun, latest.Sub(start).Round(time.Millisecond))
	if mayHaveRun < 2 {
		t.Errorf("%d commands failed on the wire, want the lone one and a batch", mayHaveRun)
	}
	if b.running != 0 || len(b.queue) != 0 {
		t.Errorf("after the callers: %d batch slots held, %d queued", b.running, len(b.queue))
	}
}

// FuzzRTTFilter feeds the filter round trips at times moving forward, as
// the bytes of data say, and checks what window relies on: after any
// sample the estimate is one of the samples given, positive, and no more
// than the latest sample (which is in the current window).
func FuzzRTTFilter(f *testing.F) {
	f.Add([]byte{1, 10, 200, 3, 0, 250, 9, 9})
	f.Fuzz(func(t *testing.T, data []byte) {
		var filter rttFilter
		now := time.Unix(1000, 0)
		given := map[time.Duration]bool{}
		for i := 0; i+1 < len(data); i += 2 {
			now = now.Add(time.Duration(data[i]) * 20 * time.Millisecond) // up to 5.1 s a step
			d := time.Duration(int(data[i+1])+1) * 100 * time.Microsecond
			filter.add(now, d)
			given[d] = true
			got := filter.min()
			if got <= 0 || got > d || !given[got] {
				t.Fatalf("after %v at step %d: estimate %v (given %v)", d, i/2, got, given)
			}
		}
	})
}

// TestRunIndependentStalledNodeDeadline: an auto-pipeliner's batch sent in
// a round to a stalled node (SIGSTOP, ReadTimeout 20 s) ends by its
// commands' deadline, as a Batcher's own batch does: every command fails
// on the wire, none waits for the ReadTimeout.
func TestRunIndependentStalledNodeDeadline(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l, rdb := stoppableClient(t)
	b := NewBatcher(rdb, BatchConfig{})
	if err := b.Do(ctx, redis.NewStatusCmd(ctx, "ping")); err != nil {
		t.Fatal(err)
	}
	if err := l.Node(0).Pause(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Node(0).Resume() }()
	const deadline = 400 * time.Millisecond
	callCtx, cancel := context.WithTimeout(ctx, deadline)
	defer cancel()
	cmds := make([]redis.Cmder, 6)
	for i := range cmds {
		cmds[i] = redis.NewStatusCmd(ctx, "set", "r"+strconv.Itoa(i), i)
	}
	start := time.Now()
	if err := RunIndependent(callCtx, cmds, func(ctx context.Context, cmd redis.Cmder) error { return b.Do(ctx, cmd) }); err != nil {
		t.Fatal(err)
	}
	// A margin for a loaded machine, far below the ReadTimeout this test
	// tells apart.
	if took, bound := time.Since(start), deadline+2*time.Second; took > bound {
		t.Errorf("the round returned after %v, want by %v: past its commands' deadline", took, bound)
	}
	for i, cmd := range cmds {
		if err := cmd.Err(); err == nil || errors.As(err, new(*UnsentError)) {
			t.Errorf("command %d: %v, want a failure on the wire (it was sent)", i, err)
		}
	}
}
