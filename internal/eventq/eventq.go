package eventq

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rediskit/rediskit/internal/safe"
)

const (
	// DefaultCapacity is how many events may wait for a slow Observer
	// before new ones are dropped.
	DefaultCapacity = 1024
	// DefaultDrainTimeout bounds how long Close waits for the Observer to
	// take the events already queued (and how long a hashring Node's Start
	// waits for the events it caused).
	DefaultDrainTimeout = time.Second
	// DropLogInterval is the least time between two WARN records about
	// dropped events (and two ERROR records about Observer panics) after
	// the first.
	DropLogInterval = 10 * time.Second
)

// Config configures a Queue.
type Config[T any] struct {
	// Deliver is the Observer, called with each event in order.
	Deliver func(T)
	// Logger receives the drop and panic records. Default: discarded.
	Logger *slog.Logger
	// Name prefixes the log messages ("sentinel", "replica", ...).
	Name string
	// Capacity bounds the waiting events. Default DefaultCapacity.
	Capacity int
	// DrainTimeout bounds Close's wait. Default DefaultDrainTimeout.
	DrainTimeout time.Duration
	// Merge, when set, is called (with the queue's lock held) when ev
	// finds the queue full, with the newest waiting event: it may fold
	// into *last what of ev must not be lost, and returns true when
	// nothing of ev is lost, in which case ev is not counted as dropped.
	Merge func(last *T, ev T) bool
}

// Queue delivers events to one Observer under the package contract. A
// nil *Queue (no Observer) accepts and delivers nothing. Its methods are
// safe for concurrent use.
type Queue[T any] struct {
	deliver func(T)
	merge   func(*T, T) bool
	name    string
	cap     int
	drain   time.Duration
	dropped atomic.Uint64

	mu        sync.Mutex
	log       *slog.Logger
	items     []T
	running   bool // the delivery goroutine is running
	closed    bool // Close was called: no event is accepted
	stopped   bool // no delivery starts any more
	pushed    uint64
	delivered uint64        // deliveries finished (or discarded at a stop)
	progress  chan struct{} // closed and replaced when delivered or running change
	drops     limiter
	panics    limiter
}

// New returns a Queue delivering to cfg.Deliver, or nil when it is nil.
func New[T any](cfg Config[T]) *Queue[T] {
	if cfg.Deliver == nil {
		return nil
	}
	q := &Queue[T]{
		deliver:  cfg.Deliver,
		merge:    cfg.Merge,
		name:     cfg.Name,
		cap:      cfg.Capacity,
		drain:    cfg.DrainTimeout,
		log:      cfg.Logger,
		progress: make(chan struct{}),
	}
	if q.cap <= 0 {
		q.cap = DefaultCapacity
	}
	if q.drain <= 0 {
		q.drain = DefaultDrainTimeout
	}
	if q.log == nil {
		q.log = slog.New(slog.DiscardHandler)
	}
	return q
}

// SetLogger replaces the logger, for an owner that learns its logger
// after creating the queue (a replica Selector when it is bound).
func (q *Queue[T]) SetLogger(l *slog.Logger) {
	if q == nil || l == nil {
		return
	}
	q.mu.Lock()
	q.log = l
	q.mu.Unlock()
}

// Push queues ev for delivery and returns at once: true if it was queued
// (or, when full, wholly merged), false if it was dropped or the queue is
// closed. After Close, events are refused silently and not counted.
func (q *Queue[T]) Push(ev T) bool {
	if q == nil {
		return false
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return false
	}
	if len(q.items) >= q.cap {
		if q.merge != nil && q.merge(&q.items[len(q.items)-1], ev) {
			q.mu.Unlock()
			return true
		}
		q.dropLocked(1)
		return false // dropLocked unlocked q.mu
	}
	q.items = append(q.items, ev)
	q.pushed++
	if !q.running {
		q.running = true
		go q.run()
	}
	q.mu.Unlock()
	return true
}

// dropLocked counts n dropped events and logs, rate-limited. q.mu is held
// on entry and released before logging.
func (q *Queue[T]) dropLocked(n uint64) {
	total := q.dropped.Add(n)
	since, ok := q.drops.note(n, time.Now())
	log := q.log
	q.mu.Unlock()
	if ok {
		log.Warn(q.name+": the Observer is too slow; events dropped",
			"dropped", since, "dropped_total", total, "capacity", q.cap)
	}
}

// run is the delivery goroutine: it delivers the waiting events in order
// and returns when none is waiting or the queue stopped.
func (q *Queue[T]) run() {
	for {
		q.mu.Lock()
		if q.stopped || len(q.items) == 0 {
			q.running = false
			q.signalLocked()
			q.mu.Unlock()
			return
		}
		ev := q.items[0]
		var zero T
		q.items[0] = zero // let the event be collected once delivered
		q.items = q.items[1:]
		q.mu.Unlock()

		err := safe.Call(func() { q.deliver(ev) })

		q.mu.Lock()
		q.delivered++
		q.signalLocked()
		var since uint64
		var report bool
		if err != nil {
			since, report = q.panics.note(1, time.Now())
		}
		log := q.log
		q.mu.Unlock()
		if report {
			log.Error(q.name+": the Observer panicked; the next events are delivered", "panics", since, "err", err)
		}
	}
}

func (q *Queue[T]) signalLocked() {
	close(q.progress)
	q.progress = make(chan struct{})
}

// Flush waits until every event queued before the call has been
// delivered (or Close dropped it), until ctx is done: it returns ctx's
// error when it gave up. It must not be called from the Observer (it
// would wait for itself).
func (q *Queue[T]) Flush(ctx context.Context) error {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	target := q.pushed
	for q.delivered < target && !q.stopped {
		ch := q.progress
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		q.mu.Lock()
	}
	q.mu.Unlock()
	return nil
}

// Close refuses new events, waits up to DrainTimeout for the queued ones
// to be delivered, and stops: see the package documentation for what
// happens to a stuck Observer. No Observer call starts after Close
// returns. Close is safe to call more than once (a later call returns at
// once); it must not be called from the Observer.
func (q *Queue[T]) Close() {
	if q == nil {
		return
	}
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.closed = true
	timer := time.NewTimer(q.drain)
	defer timer.Stop()
	for q.running && !q.stopped {
		ch := q.progress
		q.mu.Unlock()
		select {
		case <-ch:
			q.mu.Lock()
		case <-timer.C:
			q.mu.Lock()
			q.stopped = true
		}
	}
	q.stopped = true
	abandoned := uint64(len(q.items))
	q.items = nil
	q.delivered += abandoned
	q.signalLocked()
	// The drops not yet reported (the limiter held them back) are
	// reported now, with the events Close abandoned.
	since := q.drops.pending + abandoned
	q.drops.pending = 0
	total := q.dropped.Add(abandoned)
	stuck := q.running
	log := q.log
	q.mu.Unlock()
	if stuck {
		log.Warn(q.name+": Close stopped waiting for a stuck Observer; the events still queued are dropped",
			"waited", q.drain, "abandoned", abandoned, "dropped", since, "dropped_total", total)
	} else if since > 0 {
		log.Warn(q.name+": the Observer is too slow; events dropped", "dropped", since, "dropped_total", total, "capacity", q.cap)
	}
}

// Dropped is the number of events dropped: they found the queue full, or
// were still waiting when Close gave up on a stuck Observer.
func (q *Queue[T]) Dropped() uint64 {
	if q == nil {
		return 0
	}
	return q.dropped.Load()
}

// limiter decides when a repeated record is logged: the first at once,
// then at most once per DropLogInterval, with the count since the last.
type limiter struct {
	last    time.Time
	pending uint64
}

// note counts n occurrences at now and says whether to log, with the count
// the record reports.
func (l *limiter) note(n uint64, now time.Time) (uint64, bool) {
	l.pending += n
	if !l.last.IsZero() && now.Sub(l.last) < DropLogInterval {
		return 0, false
	}
	l.last = now
	since := l.pending
	l.pending = 0
	return since, true
}
