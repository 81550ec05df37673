package eventq

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/internal/testkit"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// recorder is an Observer that records the events it was given, and can
// be made to block each call until released.
type recorder struct {
	mu      sync.Mutex
	got     []int
	entered chan int      // each call sends its event, when not nil
	release chan struct{} // each call waits for it, when not nil
}

func (r *recorder) observe(ev int) {
	if r.entered != nil {
		r.entered <- ev
	}
	if r.release != nil {
		<-r.release
	}
	r.mu.Lock()
	r.got = append(r.got, ev)
	r.mu.Unlock()
}

func (r *recorder) events() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

func seq(from, to int) []int {
	var s []int
	for i := from; i < to; i++ {
		s = append(s, i)
	}
	return s
}

func logTo(buf *testkit.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// records returns the lines of buf at level.
func records(buf *testkit.Buffer, level string) []string {
	var out []string
	for _, line := range strings.Split(buf.String(), "\n") {
		if strings.Contains(line, "level="+level) {
			out = append(out, line)
		}
	}
	return out
}

// waitIdle waits until q's delivery goroutine has ended.
func waitIdle(t *testing.T, q *Queue[int]) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, "the delivery goroutine to end", func() bool {
		q.mu.Lock()
		defer q.mu.Unlock()
		return !q.running
	})
}

// Events come in the order they were pushed, one call at a time, from
// pushers on one goroutine or on several (each pusher's own events in
// its order).
func TestOrder(t *testing.T) {
	for _, pushers := range []int{1, 4} {
		t.Run(map[int]string{1: "one pusher", 4: "four pushers"}[pushers], func(t *testing.T) {
			var inside, overlaps atomic.Int32
			const per = 500
			rec := &recorder{}
			// Room for every event: this test is about order, not the bound.
			q := New(Config[int]{Capacity: pushers * per, Deliver: func(ev int) {
				if inside.Add(1) > 1 {
					overlaps.Add(1)
				}
				rec.observe(ev)
				inside.Add(-1)
			}})
			var wg sync.WaitGroup
			for p := range pushers {
				wg.Go(func() {
					for i := range per {
						if !q.Push(p*per + i) {
							t.Errorf("event %d refused", p*per+i)
						}
					}
				})
			}
			wg.Wait()
			if err := q.Flush(context.Background()); err != nil {
				t.Fatal(err)
			}
			got := rec.events()
			if len(got) != pushers*per {
				t.Fatalf("%d events delivered, want %d", len(got), pushers*per)
			}
			for p := range pushers {
				var mine []int
				for _, ev := range got {
					if ev/per == p {
						mine = append(mine, ev)
					}
				}
				if want := seq(p*per, (p+1)*per); !slices.Equal(mine, want) {
					t.Fatalf("pusher %d's events delivered as %v, want in order", p, mine)
				}
			}
			if n := overlaps.Load(); n != 0 {
				t.Fatalf("%d overlapping Observer calls", n)
			}
			q.Close()
		})
	}
}

// With the Observer blocked, the queue holds Capacity events; the next
// are refused at once, counted, and logged at WARN once (the first drop;
// the rest within DropLogInterval are reported by Close). Then the
// queued ones are delivered, in order.
func TestBoundAndDrops(t *testing.T) {
	for _, tc := range []struct {
		name      string
		capacity  int
		extra     int
		wantQueue int
	}{
		{"default capacity", 0, 1, DefaultCapacity},
		{"small capacity, many drops", 3, 50, 3},
		{"capacity one", 1, 2, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf testkit.Buffer
			rec := &recorder{entered: make(chan int, 1), release: make(chan struct{})}
			q := New(Config[int]{Deliver: rec.observe, Capacity: tc.capacity, Logger: logTo(&buf), Name: "test"})
			q.Push(-1) // taken by the Observer, which blocks
			<-rec.entered
			rec.entered = nil // only the delivery goroutine reads it, after release
			for i := range tc.wantQueue {
				if !q.Push(i) {
					t.Fatalf("event %d refused with %d waiting", i, i)
				}
			}
			start := time.Now()
			for i := range tc.extra {
				if q.Push(tc.wantQueue + i) {
					t.Fatalf("event %d accepted past the capacity %d", tc.wantQueue+i, tc.wantQueue)
				}
			}
			if took := time.Since(start); took > time.Second {
				t.Fatalf("refusing %d events took %v; Push must not wait", tc.extra, took)
			}
			if got := q.Dropped(); got != uint64(tc.extra) {
				t.Fatalf("Dropped() = %d, want %d", got, tc.extra)
			}
			if warns := records(&buf, "WARN"); len(warns) != 1 || !strings.Contains(warns[0], "dropped=1 ") {
				t.Fatalf("WARN records %q; want one, for the first drop", warns)
			}
			close(rec.release)
			q.Close()
			if got, want := rec.events(), append([]int{-1}, seq(0, tc.wantQueue)...); !slices.Equal(got, want) {
				t.Fatalf("delivered %d events, want the %d queued in order", len(got), len(want))
			}
			warns := records(&buf, "WARN")
			if tc.extra == 1 {
				if len(warns) != 1 {
					t.Fatalf("WARN records %q; want only the first drop's", warns)
				}
				return
			}
			if len(warns) != 2 || !strings.Contains(warns[1], "dropped="+strconv.Itoa(tc.extra-1)+" ") ||
				!strings.Contains(warns[1], "dropped_total="+strconv.Itoa(tc.extra)) {
				t.Fatalf("WARN records %q; want the first drop's, then Close's with the %d held back", warns, tc.extra-1)
			}
		})
	}
}

// The rate limit: the first occurrence is logged, then at most one record
// per DropLogInterval, carrying the count since the last record.
func TestLimiter(t *testing.T) {
	t0 := time.Unix(1000, 0)
	type step struct {
		at      time.Duration
		n       uint64
		logged  bool
		reports uint64
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"first is logged", []step{{0, 1, true, 1}}},
		{"a burst is one record, then the rest later", []step{
			{0, 1, true, 1}, {time.Millisecond, 1, false, 0}, {time.Second, 5, false, 0},
			{DropLogInterval, 1, true, 7},
		}},
		{"just before the interval is held back", []step{
			{0, 2, true, 2}, {DropLogInterval - time.Nanosecond, 1, false, 0}, {DropLogInterval, 1, true, 2},
		}},
		{"the interval counts from the last record", []step{
			{0, 1, true, 1}, {DropLogInterval + time.Second, 1, true, 1},
			{2 * DropLogInterval, 1, false, 0}, {2*DropLogInterval + time.Second, 1, true, 2},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l limiter
			for i, s := range tc.steps {
				reports, logged := l.note(s.n, t0.Add(s.at))
				if logged != s.logged || reports != s.reports {
					t.Fatalf("step %d (at %v, %d more): logged %v with %d, want %v with %d", i, s.at, s.n, logged, reports, s.logged, s.reports)
				}
			}
		})
	}
}

// A panicking Observer is recovered and logged; the next events are
// delivered.
func TestPanicRecovered(t *testing.T) {
	var buf testkit.Buffer
	rec := &recorder{}
	q := New(Config[int]{Logger: logTo(&buf), Name: "test", Deliver: func(ev int) {
		if ev%2 == 1 {
			panic("odd event")
		}
		rec.observe(ev)
	}})
	for i := range 10 {
		q.Push(i)
	}
	q.Close()
	if got, want := rec.events(), []int{0, 2, 4, 6, 8}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v, want %v", got, want)
	}
	errs := records(&buf, "ERROR")
	if len(errs) != 1 || !strings.Contains(errs[0], "odd event") || !strings.Contains(errs[0], "test: the Observer panicked") {
		t.Fatalf("ERROR records %q; want one (rate-limited) naming the panic", errs)
	}
}

// Close delivers what is queued before it returns, and refuses later
// events without counting them.
func TestCloseDrains(t *testing.T) {
	rec := &recorder{}
	q := New(Config[int]{Deliver: func(ev int) {
		time.Sleep(100 * time.Microsecond)
		rec.observe(ev)
	}})
	for i := range 200 {
		q.Push(i)
	}
	q.Close()
	if got := rec.events(); !slices.Equal(got, seq(0, 200)) {
		t.Fatalf("after Close, %d of 200 events delivered", len(got))
	}
	if q.Push(200) {
		t.Fatal("an event pushed after Close was accepted")
	}
	if q.Dropped() != 0 {
		t.Fatalf("Dropped() = %d; events refused after Close are not drops", q.Dropped())
	}
	q.Close() // a second Close returns at once
	if got := rec.events(); len(got) != 200 {
		t.Fatalf("%d events delivered after a push past Close", len(got))
	}
}

// A stuck Observer does not hold Close past its bound: the events still
// waiting are dropped (counted, logged), the call under way finishes on
// its own, and no call starts after Close returned.
func TestCloseBoundedWithStuckObserver(t *testing.T) {
	var buf testkit.Buffer
	const bound = 200 * time.Millisecond
	rec := &recorder{entered: make(chan int, 10), release: make(chan struct{})}
	q := New(Config[int]{Deliver: rec.observe, DrainTimeout: bound, Logger: logTo(&buf), Name: "test"})
	for i := range 4 {
		q.Push(i)
	}
	<-rec.entered // the Observer is stuck in event 0
	start := time.Now()
	q.Close()
	took := time.Since(start)
	if took < bound {
		t.Fatalf("Close returned after %v, before its bound %v, with the Observer stuck", took, bound)
	}
	// The margin covers a busy machine; what matters is that Close returns
	// without the Observer.
	if took > bound+2*time.Second {
		t.Fatalf("Close took %v with a bound of %v", took, bound)
	}
	if q.Dropped() != 3 {
		t.Fatalf("Dropped() = %d, want the 3 events still waiting", q.Dropped())
	}
	if warns := records(&buf, "WARN"); len(warns) != 1 || !strings.Contains(warns[0], "abandoned=3") {
		t.Fatalf("WARN records %q; want one saying Close abandoned 3 events", warns)
	}
	close(rec.release)
	waitIdle(t, q)
	if got := rec.events(); !slices.Equal(got, []int{0}) {
		t.Fatalf("delivered %v after Close gave up; want only the call under way, event 0", got)
	}
	select {
	case ev := <-rec.entered:
		t.Fatalf("the Observer was called with %d after Close returned", ev)
	default:
	}
	if err := q.Flush(context.Background()); err != nil {
		t.Fatalf("Flush after Close: %v", err)
	}
}

// No Observer call starts after Close returns, with events pushed from
// several goroutines until and past Close.
func TestNoCallAfterClose(t *testing.T) {
	for range 20 {
		var closed atomic.Bool
		var late atomic.Int32
		q := New(Config[int]{Deliver: func(int) {
			if closed.Load() {
				late.Add(1)
			}
		}})
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 3 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					q.Push(i)
				}
			})
		}
		time.Sleep(5 * time.Millisecond)
		q.Close()
		closed.Store(true)
		time.Sleep(5 * time.Millisecond)
		close(stop)
		wg.Wait()
		if n := late.Load(); n != 0 {
			t.Fatalf("%d Observer calls after Close returned", n)
		}
	}
}

// Flush waits for the events queued before it, and gives up with its
// context when the Observer is stuck.
func TestFlush(t *testing.T) {
	rec := &recorder{entered: make(chan int, 10), release: make(chan struct{})}
	const bound = 100 * time.Millisecond
	q := New(Config[int]{Deliver: rec.observe})
	q.Push(0)
	<-rec.entered
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	start := time.Now()
	if err := q.Flush(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush with the Observer stuck: %v, want its context's deadline", err)
	}
	if took := time.Since(start); took < bound {
		t.Fatalf("Flush gave up after %v, before its context's deadline %v", took, bound)
	}
	q.Push(1)
	close(rec.release)
	if err := q.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rec.events(); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("after Flush, delivered %v, want [0 1]", got)
	}
	q.Close()
}

// Merge folds what must not be lost into the newest waiting event; an
// event wholly merged is not a drop.
func TestMerge(t *testing.T) {
	type notice struct {
		keep  []int
		event bool
	}
	var mu sync.Mutex
	var got []notice
	entered, release := make(chan struct{}, 1), make(chan struct{})
	q := New(Config[notice]{Capacity: 1,
		Deliver: func(n notice) {
			select {
			case entered <- struct{}{}:
			default:
			}
			<-release
			mu.Lock()
			got = append(got, n)
			mu.Unlock()
		},
		Merge: func(last *notice, n notice) bool {
			last.keep = append(last.keep, n.keep...)
			return !n.event
		},
	})
	q.Push(notice{keep: []int{1}, event: true})
	<-entered
	q.Push(notice{keep: []int{2}, event: true}) // waits
	q.Push(notice{keep: []int{3}})              // merged, not a drop
	q.Push(notice{keep: []int{4}, event: true}) // merged and dropped
	if q.Dropped() != 1 {
		t.Fatalf("Dropped() = %d, want 1", q.Dropped())
	}
	close(release)
	q.Close()
	if len(got) != 2 || !slices.Equal(got[1].keep, []int{2, 3, 4}) {
		t.Fatalf("delivered %+v; want the second notice carrying 2, 3 and 4", got)
	}
}

// A nil Queue (no Observer) accepts nothing and does nothing.
func TestNilQueue(t *testing.T) {
	q := New(Config[int]{})
	if q != nil {
		t.Fatal("New without Deliver returned a queue")
	}
	if q.Push(1) || q.Dropped() != 0 || q.Flush(context.Background()) != nil {
		t.Fatal("a nil queue accepted an event")
	}
	q.SetLogger(slog.Default())
	q.Close()
}
