package cachestore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/safe"
)

// InvalidationChannel is where Redis sends a redirected client's
// invalidations (RESP2).
const InvalidationChannel = "__redis__:invalidate"

// DefaultRedialBackoff is the wait before dialling again after the
// invalidation connection was lost or could not be made; it doubles with
// each failure in a row, up to maxRedialWait.
const DefaultRedialBackoff = 100 * time.Millisecond

// maxRedialWait bounds the wait between dials: a node that left for good
// (a cluster node removed, a server down for hours) costs a dial every
// few seconds, not ten a second.
const maxRedialWait = 5 * time.Second

// redialWait is the wait after failures dials in a row failed.
func redialWait(backoff time.Duration, failures int) time.Duration {
	d := backoff
	for i := 1; i < failures && d < maxRedialWait; i++ {
		d *= 2
	}
	return min(d, maxRedialWait)
}

// TrackerConfig configures a Tracker.
type TrackerConfig struct {
	// Options are the node's go-redis options (address, credentials, TLS,
	// dialer, timeouts); the tracker clones them for its connection
	// (RESP2, no retries).
	Options *redis.Options
	// Prefixes restrict the tracking to keys with one of these prefixes
	// (CLIENT TRACKING BCAST PREFIX); none: every key. A key outside them
	// must not be cached (Tracks).
	Prefixes []string
	Store    *Store
	Node     *Node
	// Heartbeat, HeartbeatTimeout (see clientcache.Config), RedialBackoff:
	// defaults clientcache.DefaultHeartbeat,
	// clientcache.DefaultHeartbeatTimeout, DefaultRedialBackoff.
	Heartbeat, HeartbeatTimeout, RedialBackoff time.Duration
	// Logger receives the tracker's changes of state. Default: discard.
	Logger *slog.Logger
	// OnFlush is called (from the tracker's goroutine) when the node's
	// entries stop being served, with the cause; nil: nothing.
	OnFlush func(cause FlushCause)
}

// FlushCause says why a node's cached entries were dropped or stopped
// being served.
type FlushCause string

// The causes a tracker reports.
const (
	FlushConnectionLost FlushCause = "tracking connection lost"
	FlushHeartbeat      FlushCause = "tracking connection silent"
	FlushServer         FlushCause = "server flushed" // FLUSHALL, FLUSHDB, or an invalidation the tracker could not read
	FlushClosed         FlushCause = "closed"
	// FlushTopology is not a tracker's: the client saw the node lose its
	// role or slots (NodeCache.Flush).
	FlushTopology FlushCause = "role or slots lost"
)

// Tracker keeps one node's invalidation connection: one connection that
// asks the server to track every key in broadcast mode (CLIENT TRACKING
// ON BCAST), redirects the invalidations to itself, and subscribes to
// them. The tracking lives and dies with that one connection, whatever
// connections the reads go on: a read's entry is trusted only while the
// connection it was reserved under lives. One goroutine owns the
// connection (reads its messages, pings it).
type Tracker struct {
	cfg    TrackerConfig
	log    *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// connID is the client id of the invalidation connection go-redis
	// made last (set by its OnConnect).
	connID atomic.Int64

	mu  sync.Mutex
	cur *session // the session being served, for stop
}

// ErrTrackingUnavailable is clientcache.ErrTrackingUnavailable.
var ErrTrackingUnavailable = clientcache.ErrTrackingUnavailable

// NewTracker starts keeping the node's invalidation connection, until
// Close. It returns at once: its goroutine connects (and reconnects after
// a loss), and the node's entries are served only while a connection
// holds. Use CheckTracking first to refuse a server that will not track.
func NewTracker(cfg TrackerConfig) *Tracker {
	t := newTracker(cfg)
	t.start(&t.wg)
	return t
}

// start runs the tracker's goroutine, counted by wg.
func (t *Tracker) start(wg *sync.WaitGroup) {
	safe.Go(wg, func(err error) {
		t.log.Error("client-side caching: tracker panic", "node", t.cfg.Node.Addr(), "err", err)
	}, t.run)
}

func newTracker(cfg TrackerConfig) *Tracker {
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = clientcache.DefaultHeartbeat
	}
	if cfg.HeartbeatTimeout <= 0 {
		cfg.HeartbeatTimeout = clientcache.DefaultHeartbeatTimeout
	}
	if cfg.RedialBackoff <= 0 {
		cfg.RedialBackoff = DefaultRedialBackoff
	}
	t := &Tracker{cfg: cfg, log: cfg.Logger}
	if t.log == nil {
		t.log = slog.New(slog.DiscardHandler)
	}
	if t.cfg.Node == nil {
		t.cfg.Node = NewNode(cfg.Options.Addr)
	}
	t.ctx, t.cancel = context.WithCancel(context.Background())
	return t
}

// CheckTracking makes one invalidation connection to the server of opts
// and closes it: an error says why caching cannot work there
// (ErrTrackingUnavailable: CLIENT TRACKING unknown or refused; or the
// dial's error). Bounded by ctx.
func CheckTracking(ctx context.Context, opts *redis.Options, prefixes []string) error {
	t := newTracker(TrackerConfig{Options: opts, Prefixes: prefixes})
	defer t.cancel()
	s, err := t.connect(ctx)
	if err != nil {
		return err
	}
	s.close()
	return nil
}

// Tracks reports whether the tracker's invalidations cover key.
func (t *Tracker) Tracks(key string) bool {
	if len(t.cfg.Prefixes) == 0 {
		return true
	}
	for _, p := range t.cfg.Prefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// Close stops the tracker and waits for its goroutine: the node's entries
// stop being served, its connection closes.
func (t *Tracker) Close() error {
	t.stop()
	t.wg.Wait()
	return nil
}

// stop tells the tracker's goroutine to end, and closes its connection so
// that a read in progress returns now.
func (t *Tracker) stop() {
	t.cancel()
	t.mu.Lock()
	if t.cur != nil {
		_ = t.cur.ps.Close()
	}
	t.mu.Unlock()
}

// session is one invalidation connection.
type session struct {
	sub *redis.Client
	ps  *redis.PubSub
	id  int64
	// subscribed is when the SUBSCRIBE was sent: its reply proves the
	// tracking alive after then.
	subscribed time.Time
}

func (s *session) close() {
	_ = s.ps.Close()
	_ = s.sub.Close()
}

// connect makes the invalidation connection: CLIENT ID, CLIENT TRACKING
// ON REDIRECT to itself BCAST, then SUBSCRIBE.
func (t *Tracker) connect(ctx context.Context) (*session, error) {
	opt := *t.cfg.Options
	opt.Protocol = 2
	opt.MaxRetries = -1
	opt.PoolSize, opt.MinIdleConns, opt.MaxIdleConns = 1, 0, 1
	var refused error
	opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		id, err := cn.ClientID(ctx).Result()
		if err != nil {
			return err
		}
		args := []any{"CLIENT", "TRACKING", "ON", "REDIRECT", id, "BCAST"}
		for _, p := range t.cfg.Prefixes {
			args = append(args, "PREFIX", p)
		}
		if err := cn.Do(ctx, args...).Err(); err != nil {
			if isTrackingRefused(err) {
				refused = err
			}
			return err
		}
		t.connID.Store(id)
		return nil
	}
	s := &session{sub: redis.NewClient(&opt), subscribed: time.Now()}
	s.ps = s.sub.Subscribe(ctx, InvalidationChannel)
	if _, err := s.ps.ReceiveTimeout(ctx, t.cfg.HeartbeatTimeout+opt.ReadTimeout); err != nil {
		s.close()
		if refused != nil {
			return nil, fmt.Errorf("%w: CLIENT TRACKING on %s: %v", ErrTrackingUnavailable, t.cfg.Node.Addr(), refused)
		}
		return nil, fmt.Errorf("client-side caching: subscribing to invalidations on %s: %w", t.cfg.Node.Addr(), err)
	}
	s.id = t.connID.Load()
	return s, nil
}

// isTrackingRefused: the server does not know CLIENT TRACKING, or the ACL
// forbids it.
func isTrackingRefused(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "ERR unknown") || strings.HasPrefix(msg, "ERR Unknown") ||
		strings.HasPrefix(msg, "ERR syntax") || strings.HasPrefix(msg, "NOPERM")
}

// run owns the sessions: it makes each one, starts its epoch, serves it,
// and on its loss ends the node's epoch and makes the next.
func (t *Tracker) run() {
	node := t.cfg.Node
	failures := 0
	for {
		ctx, cancel := context.WithTimeout(t.ctx, t.cfg.HeartbeatTimeout+t.cfg.Options.DialTimeout+t.cfg.Options.ReadTimeout)
		s, err := t.connect(ctx)
		cancel()
		if err != nil {
			if t.ctx.Err() != nil {
				return
			}
			// Once a run of failures: a node that stays down must not
			// fill the log.
			failures++
			if failures == 1 {
				level := slog.LevelWarn
				if errors.Is(err, ErrTrackingUnavailable) {
					level = slog.LevelError // not a fault that passes: caching is off on this node
				}
				t.log.Log(t.ctx, level, "client-side caching: no tracking connection; the node's reads are not cached", "node", node.Addr(), "err", err)
			}
			select {
			case <-t.ctx.Done():
				return
			case <-time.After(redialWait(t.cfg.RedialBackoff, failures)):
			}
			continue
		}
		failures = 0
		t.mu.Lock()
		t.cur = s
		t.mu.Unlock()
		if t.ctx.Err() != nil { // stopped before t.cur was set
			s.close()
			return
		}
		// A new epoch for the new connection: a read reserved while
		// there was none may have missed an invalidation, and its fill
		// must find its epoch ended.
		node.Flush(time.Now())
		node.confirm(s.subscribed.Add(t.cfg.HeartbeatTimeout))
		t.log.Info("client-side caching: tracking", "node", node.Addr(), "client_id", s.id)
		cause, err := t.serve(s)
		node.unconfirm()
		node.Flush(time.Now())
		t.cfg.Store.counts.flushed(cause)
		t.mu.Lock()
		t.cur = nil
		t.mu.Unlock()
		s.close()
		if t.cfg.OnFlush != nil {
			t.cfg.OnFlush(cause)
		}
		if cause == FlushClosed {
			return
		}
		t.log.Warn("client-side caching: tracking lost; the node's entries are not served", "node", node.Addr(), "cause", string(cause), "err", err)
		select {
		case <-t.ctx.Done():
			return
		case <-time.After(t.cfg.RedialBackoff):
		}
	}
}

// serve reads the session's messages until it is lost or the tracker
// closes, and says why it ended.
//
// One PING at a time, every Heartbeat: its reply proves that every
// invalidation the server sent before it read the PING has arrived (one
// connection keeps order), so the node's entries may be served until
// HeartbeatTimeout after the PING was sent. Nothing else extends that: an
// invalidation read now may have waited in a buffer.
func (t *Tracker) serve(s *session) (FlushCause, error) {
	hb := heartbeat{last: s.subscribed}
	for {
		if t.ctx.Err() != nil {
			return FlushClosed, nil
		}
		wait, err := t.beat(s, &hb, time.Now())
		if err != nil {
			if hb.silent {
				return FlushHeartbeat, err
			}
			return FlushConnectionLost, err
		}
		msg, err := s.ps.ReceiveTimeout(t.ctx, wait)
		if msg != nil {
			t.handle(msg, &hb)
			continue
		}
		if cause, err := t.failed(s, err); cause != "" {
			return cause, err
		}
	}
}

// heartbeat is serve's PING state.
type heartbeat struct {
	last   time.Time // the latest PING sent (or the SUBSCRIBE)
	out    time.Time // the PING unanswered, or zero
	silent bool      // beat gave up waiting for a reply
}

// beat sends the next PING when one is due, and returns how long to wait
// for a message, or an error when the connection is lost or silent.
func (t *Tracker) beat(s *session, hb *heartbeat, now time.Time) (time.Duration, error) {
	if hb.out.IsZero() && now.Sub(hb.last) >= t.cfg.Heartbeat {
		hb.out, hb.last = now, now
		if err := s.ps.Ping(t.ctx); err != nil {
			return 0, err
		}
	}
	if hb.out.IsZero() {
		return max(hb.last.Add(t.cfg.Heartbeat).Sub(now), time.Millisecond), nil
	}
	if waited := now.Sub(hb.out); waited >= t.cfg.HeartbeatTimeout {
		hb.silent = true
		return 0, fmt.Errorf("no reply to a PING in %v", waited.Round(time.Millisecond))
	}
	return max(hb.out.Add(t.cfg.HeartbeatTimeout).Sub(now), time.Millisecond), nil
}

// handle applies one message: invalidations, or a PING's reply.
func (t *Tracker) handle(msg any, hb *heartbeat) {
	node := t.cfg.Node
	switch m := msg.(type) {
	case *redis.Message:
		if m.Channel != InvalidationChannel {
			return
		}
		if len(m.PayloadSlice) == 0 && m.Payload != "" {
			t.cfg.Store.Invalidate(node, m.Payload)
		}
		for _, key := range m.PayloadSlice {
			t.cfg.Store.Invalidate(node, key)
		}
	case *redis.Pong:
		if !hb.out.IsZero() {
			node.confirm(hb.out.Add(t.cfg.HeartbeatTimeout))
			hb.out = time.Time{}
		}
	}
}

// failed judges a receive that returned no message: a timeout (the next
// beat decides), a flush the server announced, or the connection lost.
func (t *Tracker) failed(s *session, err error) (FlushCause, error) {
	switch {
	case err == nil, failure.Timeout(err):
	case t.ctx.Err() != nil:
		return FlushClosed, nil
	case failure.PubSubPayload(err):
		// An invalidation without keys: the server flushed the database
		// (FLUSHALL, FLUSHDB), or sent what go-redis could not read as
		// keys. Either way no entry of the node can be trusted.
		t.cfg.Store.Purge(t.cfg.Node)
		t.cfg.Store.counts.flushed(FlushServer)
		if t.cfg.OnFlush != nil {
			t.cfg.OnFlush(FlushServer)
		}
	default:
		return FlushConnectionLost, err
	}
	if id := t.connID.Load(); id != s.id {
		// go-redis reconnected the subscription under us: the tracking was
		// the old connection's.
		return FlushConnectionLost, errors.New("the subscription was reconnected")
	}
	return "", nil
}
