package hashring

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Ring is a read-only view of a ring, for routers and tools that need to
// know which node owns a key without being a node: it never writes to the
// ring. Load reads the ring once; Run keeps the view up to date (re-reading
// on every notice and every HeartbeatInterval). Owner and NodeCount answer
// from the last read, lock-free.
//
// A view has no ownership deadline: its answers are as old as
// Snapshot().ReadAt(), and a caller that needs fresh answers checks that.
type Ring struct {
	st      store
	opts    Config
	snap    atomic.Pointer[Snapshot]
	changes chan struct{}
	running atomic.Bool
}

// NewRing returns a view of the ring stored at key. It does not talk to
// Redis. Of cfg, Hash, Logger, HeartbeatInterval (the re-read interval),
// Expiry, SubscribeTimeout and the retry waits apply.
func NewRing(client redis.UniversalClient, key string, cfg Config) (*Ring, error) {
	o, err := cfg.resolved(false)
	if err != nil {
		return nil, err
	}
	st, err := newStore(client, key, o)
	if err != nil {
		return nil, err
	}
	return &Ring{
		st:      st,
		opts:    o,
		changes: make(chan struct{}, 1),
	}, nil
}

// Key is the ring's Redis key.
func (r *Ring) Key() string { return r.st.key }

// Load reads the ring now, makes it the view's snapshot and returns it.
func (r *Ring) Load(ctx context.Context) (*Snapshot, error) {
	s, err := r.st.read(ctx)
	if err != nil {
		return nil, &Error{Op: "read", Step: "read", Key: r.st.key, Server: serverOf(r.st.client), Err: err}
	}
	old := r.snap.Swap(s)
	if old == nil || !slices.EqualFunc(old.replicas, s.replicas, func(a, b Replica) bool { return a.Member == b.Member }) {
		select {
		case r.changes <- struct{}{}:
		default:
		}
	}
	return s, nil
}

// Snapshot returns the last snapshot read, or nil before the first.
func (r *Ring) Snapshot() *Snapshot { return r.snap.Load() }

// Owner returns the ID of the node that owns the key by the last
// snapshot, or false when there is none or the ring was empty.
func (r *Ring) Owner(key string) (string, bool) {
	s := r.snap.Load()
	if s == nil {
		return "", false
	}
	return s.Owner(key)
}

// NodeCount is the number of nodes in the last snapshot (0 before the
// first).
func (r *Ring) NodeCount() int {
	s := r.snap.Load()
	if s == nil {
		return 0
	}
	return s.NodeCount()
}

// Changes receives a value when a read found a different set of replicas
// than the one before (coalesced, capacity 1; never closed).
func (r *Ring) Changes() <-chan struct{} { return r.changes }

// Run keeps the view up to date until ctx ends, then returns ctx's error.
// It subscribes to the ring's channel, reads the ring, and reads it again
// on every notice and every HeartbeatInterval. After an error it
// subscribes again and retries after a random wait (as a node does),
// logging each failure at WARN. Only one Run of a view may run at a time;
// another returns ErrBusy.
func (r *Ring) Run(ctx context.Context) error {
	if !r.running.CompareAndSwap(false, true) {
		return ErrBusy
	}
	defer r.running.Store(false)
	var sub *subscription
	defer func() { sub.close() }()
	attempt := 0
	for {
		var step string
		var err error
		if sub == nil {
			step = "subscribe"
			sub, err = r.st.subscribe(ctx, r.opts.SubscribeTimeout)
		}
		if err == nil {
			step = "read"
			_, err = r.Load(ctx)
		}
		if err == nil {
			attempt = 0
			timer := time.NewTimer(r.opts.HeartbeatInterval)
			select {
			case <-ctx.Done():
			case <-sub.msgs:
			case <-timer.C:
			case err = <-sub.errs:
				step = "subscription"
			}
			timer.Stop()
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if err == nil {
			continue
		}
		if step == "subscription" && moved(err) {
			// The client moved the subscription to a new server on
			// purpose: subscribe again and read at once (notices may
			// have been lost in the switch), no backoff, no WARN. A
			// failure of that is a failure like any other.
			sub.close()
			sub = nil
			r.opts.Logger.LogAttrs(ctx, slog.LevelInfo, "hashring: the ring view's subscription moved to a new server; subscribing again at once",
				slog.String("key", r.st.key), slog.Any("error", err))
			continue
		}
		attempt++
		sub.close()
		sub = nil
		wait := backoff(attempt, r.opts.RetryWait, r.opts.MaxRetryWait)
		r.opts.Logger.LogAttrs(ctx, slog.LevelWarn, "hashring: ring view update failed; retrying",
			slog.String("key", r.st.key), slog.String("step", step),
			slog.Int("attempt", attempt), slog.Duration("wait", wait), slog.Any("error", err))
		if !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// Print writes the ring's debug listing to w, read from Redis now:
//
//	Hash ring "example-ring" replicas:
//	Start      Range   Delay   Node
//	 706234936   2.97%      0s mbp.local:80721:249d729d
//	 833679955   3.58%      0s mbp.local:80721:aa60d44c
//	...
//
//	Hash ring "example-ring" nodes:
//	Range    Replicas Delay   Hostname             PID
//	100.00%        16      0s mbp.local            80721
//
// Replicas are listed in ring order with their share of the ring, the
// seconds since their last heartbeat, and their node and id; expired
// replicas (still in the ZSET, not yet cleaned up) are marked (EXPIRED)
// and own no range. Nodes are listed in the order of their first replica,
// with their share, replica count, largest delay, hostname and PID.
// Malformed members are listed last.
func (r *Ring) Print(ctx context.Context, w io.Writer) error {
	return printRing(ctx, &r.st, w)
}
