package hashring

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
)

// store is the Redis side of a ring: one key that is both the ZSET of
// replicas and the pub/sub channel. Every method is one Redis round trip
// (or one MULTI/EXEC), bounded by the client's own timeouts: go-redis
// applies a context's deadline to the socket only with
// ContextTimeoutEnabled, so ReadTimeout/WriteTimeout are what bound a call.
type store struct {
	client redis.UniversalClient
	key    string
	hash   Hash
	expiry time.Duration
	bad    *malformedLog
}

// newStore checks the client and key and returns the ring's store.
func newStore(client redis.UniversalClient, key string, o Config) (store, error) {
	if client == nil {
		return store{}, fmt.Errorf("%w: nil client", ErrInvalidConfig)
	}
	if key == "" {
		return store{}, fmt.Errorf("%w: empty key", ErrInvalidConfig)
	}
	return store{client: client, key: key, hash: o.Hash, expiry: o.Expiry,
		bad: &malformedLog{log: o.Logger, key: key}}, nil
}

func fmtScore(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// read returns the live replicas: score ≥ now − expiry, as redis-hashring
// reads them (ZRANGEBYSCORE key <now-60> INF). Redis compares the scores
// as doubles, so 1e300 and +inf are live; the snapshot applies the same
// rule to the same float again (a no-op on what Redis sent).
func (s *store) read(ctx context.Context) (*Snapshot, error) {
	now := time.Now()
	least := timeScore(now.Add(-s.expiry))
	zs, err := s.client.ZRangeByScoreWithScores(ctx, s.key, &redis.ZRangeBy{
		Min: fmtScore(least), Max: "+inf",
	}).Result()
	if err != nil {
		return nil, err
	}
	return buildSnapshot(s.key, s.hash, now, least, entries(zs), s.bad.note), nil
}

// readAll returns every replica, expired ones included (for Print), and
// passes malformed members to bad.
func (s *store) readAll(ctx context.Context, bad func(member string, err error)) (*Snapshot, error) {
	now := time.Now()
	zs, err := s.client.ZRangeWithScores(ctx, s.key, 0, -1).Result()
	if err != nil {
		return nil, err
	}
	return buildSnapshot(s.key, s.hash, now, timeScore(now.Add(-s.expiry)), entries(zs), bad), nil
}

func entries(zs []redis.Z) []entry {
	es := make([]entry, len(zs))
	for i, z := range zs {
		m, _ := z.Member.(string)
		es[i] = entry{member: m, score: z.Score}
	}
	return es
}

// heartbeat sets the score of every member to now in one MULTI/EXEC. It
// uses ZADD GT, so a delayed heartbeat (one sent on a connection that
// timed out, and applied by Redis later) can never move a score back in
// time.
//
// GT alone would also keep forever a score far in the future (written by
// hand or by a bug, or by this host before its clock was stepped back),
// which keeps the member alive that long for every reader should the node
// die. So the same transaction then lowers, with ZADD XX LT, any of the
// members' scores above now + ahead to now + ahead: a score at most
// `ahead` in the future is left to GT (the node's clock catches up with
// it), one further ahead is brought back within it. XX never adds a
// member; LT never raises a score, and never lowers one below now +
// ahead, so even a delayed application cannot move a score further back
// than that. Python's nodes send a plain ZADD, which heals any score at
// their next heartbeat.
//
// It returns the time written, how many members were added rather than
// updated, and how many scores were lowered.
func (s *store) heartbeat(ctx context.Context, members []string, ahead time.Duration) (t time.Time, added, lowered int64, err error) {
	now := time.Now()
	score, limit := timeScore(now), timeScore(now.Add(ahead))
	zs := make([]redis.Z, len(members))
	ls := make([]redis.Z, len(members))
	for i, m := range members {
		zs[i] = redis.Z{Score: score, Member: m}
		ls[i] = redis.Z{Score: limit, Member: m}
	}
	var add, lower *redis.IntCmd
	_, err = s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		add = p.ZAddGT(ctx, s.key, zs...)
		lower = p.ZAddArgs(ctx, s.key, redis.ZAddArgs{XX: true, LT: true, Ch: true, Members: ls})
		return nil
	})
	if err != nil {
		return now, 0, 0, err
	}
	return now, add.Val(), lower.Val(), nil
}

// notify publishes "*" on the ring's channel: the ring changed.
func (s *store) notify(ctx context.Context) error {
	return s.client.Publish(ctx, s.key, "*").Err()
}

// cleanup removes the replicas whose last heartbeat is older than expiry,
// and returns how many it removed.
func (s *store) cleanup(ctx context.Context) (int64, error) {
	cutoff := timeScore(time.Now().Add(-s.expiry))
	return s.client.ZRemRangeByScore(ctx, s.key, "-inf", fmtScore(cutoff)).Result()
}

// remove deletes the members and publishes "*", in one MULTI/EXEC.
func (s *store) remove(ctx context.Context, members []string) error {
	args := make([]any, len(members))
	for i, m := range members {
		args[i] = m
	}
	_, err := s.client.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, s.key, args...)
		p.Publish(ctx, s.key, "*")
		return nil
	})
	return err
}

// subscription is a confirmed subscription to the ring's channel and the
// goroutine that receives from it. Messages are coalesced into one pending
// signal; the payload is ignored (redis-hashring publishes "*").
type subscription struct {
	ps   *redis.PubSub
	msgs chan struct{} // a notice arrived (capacity 1: coalesced)
	errs chan error    // the connection failed (at most one error)
	done chan struct{} // the receiving goroutine returned
	once sync.Once
}

// subscribe subscribes to the ring's channel and waits at most timeout for
// Redis to confirm. The wait also ends when ctx ends (the pub/sub
// connection is closed then, since go-redis does not watch cancellation
// while it reads).
func (s *store) subscribe(ctx context.Context, timeout time.Duration) (*subscription, error) {
	ps := s.client.Subscribe(ctx, s.key)
	stop := context.AfterFunc(ctx, func() { _ = ps.Close() })
	reply, err := ps.ReceiveTimeout(ctx, timeout)
	if !stop() { // ctx ended: the pub/sub connection is closed
		_ = ps.Close()
		return nil, context.Cause(ctx)
	}
	if err != nil {
		_ = ps.Close()
		if failure.Timeout(err) {
			if ctx.Err() != nil {
				return nil, context.Cause(ctx)
			}
			return nil, fmt.Errorf("%w (waited %v): %w", ErrSubscribeTimeout, timeout, err)
		}
		return nil, err
	}
	if _, ok := reply.(*redis.Subscription); !ok {
		_ = ps.Close()
		return nil, fmt.Errorf("hashring: unexpected reply %T while waiting for the subscription", reply)
	}
	sub := &subscription{
		ps:   ps,
		msgs: make(chan struct{}, 1),
		errs: make(chan error, 1),
		done: make(chan struct{}),
	}
	go sub.receive()
	return sub, nil
}

// receive runs until the subscription's connection fails or is closed.
// Receive blocks without a deadline; close ends it.
func (sub *subscription) receive() {
	defer close(sub.done)
	for {
		var msg any
		var err error
		if perr := safe.Call(func() { msg, err = sub.ps.Receive(context.Background()) }); perr != nil {
			err = perr
		}
		if err != nil {
			// A panic (a reply go-redis could not handle) ends the
			// subscription like a failed connection: the node subscribes
			// again.
			sub.errs <- err
			return
		}
		if _, ok := msg.(*redis.Message); ok {
			select {
			case sub.msgs <- struct{}{}:
			default: // a notice is already pending
			}
		}
	}
}

// moved reports whether a subscription's error says that its client moved
// the subscription to a new server on purpose: our Sentinel client after a
// failover (sentinel.ErrSubscriptionMoved), our multi-database client
// after a switch (multidb.ErrSubscriptionMoved); both are
// routing.ErrSwitched. The client closed the connection to the old server
// itself, and go-redis's PubSub reconnects to the new one on its next
// call: a handled event, not a failure, so the node and the view
// subscribe again at once, without a backoff and without a WARN. Any
// other error (the connection lost, reset, timed out) is a failure.
func moved(err error) bool { return errors.Is(err, routing.ErrSwitched) }

// close closes the subscription and waits for its goroutine. Safe to call
// more than once and on nil.
func (sub *subscription) close() {
	if sub == nil {
		return
	}
	sub.once.Do(func() { _ = sub.ps.Close() })
	<-sub.done
}

// backoff is the random wait before retry number attempt (1 for the first
// retry): uniform in [0, min(first·2^(attempt−1), most)].
func backoff(attempt int, first, most time.Duration) time.Duration {
	limit := first
	for i := 1; i < attempt && limit < most; i++ {
		limit *= 2
	}
	limit = min(limit, most)
	if limit <= 0 {
		return 0
	}
	return rand.N(limit + 1)
}

// sleep waits d or until ctx ends; it reports whether it waited the full d.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// maxMalformedLogged bounds the set of malformed members remembered for
// logging once; beyond it new ones are counted but not logged.
const maxMalformedLogged = 1024

// malformedLog logs each malformed member once per node or view.
type malformedLog struct {
	log  *slog.Logger
	key  string
	mu   sync.Mutex
	seen map[string]bool
	full bool
}

func (m *malformedLog) note(member string, err error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.seen[member] {
		return
	}
	if len(m.seen) >= maxMalformedLogged {
		if !m.full {
			m.full = true
			m.log.Warn("hashring: more malformed ring members; not logging further ones",
				slog.String("key", m.key), slog.Int("logged", len(m.seen)))
		}
		return
	}
	if m.seen == nil {
		m.seen = make(map[string]bool)
	}
	m.seen[member] = true
	m.log.Warn("hashring: ignoring malformed ring member",
		slog.String("key", m.key), slog.String("member", member), slog.Any("error", err))
}
