package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisinfo"
)

// SentinelNode is one redis-sentinel process. It is an Endpoint.
type SentinelNode struct {
	*Server
	index int
	myID  string
	proxy *Proxy // nil unless the lab runs with Config.Partitions
}

// Addr is the sentinel's address: its proxy's with Config.Partitions (the
// sentinel announces it to its peers), else its own.
func (s *SentinelNode) Addr() string {
	if s.proxy != nil {
		return s.proxy.Addr()
	}
	return s.DirectAddr()
}

// Proxy is the sentinel's proxy, or nil when the lab runs without
// Config.Partitions.
func (s *SentinelNode) Proxy() *Proxy { return s.proxy }

// Kill stops the sentinel with SIGKILL. Its proxy, if any, stops listening
// too, so clients get "connection refused" as from a dead sentinel.
func (s *SentinelNode) Kill() error {
	if s.proxy != nil {
		s.proxy.Suspend()
	}
	return s.Server.Kill()
}

// Index is the sentinel's position in Lab.Sentinels.
func (s *SentinelNode) Index() int { return s.index }

// Restart starts a killed sentinel again (it keeps the state it wrote to
// its config file) and applies the lab's timing settings again.
func (s *SentinelNode) Restart(ctx context.Context) error {
	if err := s.Server.Restart(ctx); err != nil {
		return err
	}
	if s.proxy != nil {
		if err := s.proxy.Resume(); err != nil {
			return err
		}
	}
	return s.applyTiming(ctx)
}

// applyTiming sets the timing parameters that have no config directive.
func (s *SentinelNode) applyTiming(ctx context.Context) error {
	c := s.lab.cfg
	err := s.Do(ctx, "SENTINEL", "DEBUG",
		"info-period", c.SentinelInfoPeriod.Milliseconds(),
		"publish-period", c.SentinelPublishPeriod.Milliseconds()).Err()
	if err != nil {
		return fmt.Errorf("lab: %s SENTINEL DEBUG: %w", s.name, err)
	}
	return nil
}

// MasterAddr asks this sentinel which address it names as the master.
func (s *SentinelNode) MasterAddr(ctx context.Context) (string, error) {
	v, err := s.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", s.lab.cfg.MasterName).StringSlice()
	if err != nil {
		return "", err
	}
	if len(v) != 2 {
		return "", fmt.Errorf("lab: %s has no master named %q", s.name, s.lab.cfg.MasterName)
	}
	return net.JoinHostPort(v[0], v[1]), nil
}

// Replicas returns this sentinel's view of the master's replicas (the
// fields of SENTINEL REPLICAS, one map per replica).
func (s *SentinelNode) Replicas(ctx context.Context) ([]map[string]string, error) {
	return redisinfo.ParseTable(s.Do(ctx, "SENTINEL", "REPLICAS", s.lab.cfg.MasterName))
}

func (l *Lab) renderSentinelConfig(s *SentinelNode, master *Node, replicas []*Node) string {
	c := l.cfg
	var b strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	line("bind %s", s.host)
	if s.proxy != nil {
		// Sentinel 7.0 connects from the kernel's choice of address, not
		// its bind address, unless told (verified: CLIENT LIST on the
		// master shows 127.0.0.1 without this line). Peers and clients
		// reach it through its proxy, which it announces in its hellos.
		line("bind-source-addr %s", s.host)
		host, port, _ := net.SplitHostPort(s.proxy.Addr())
		line("sentinel announce-ip %s", host)
		line("sentinel announce-port %s", port)
	}
	if c.TLS {
		line("port 0")
		line("tls-port %d", s.port)
		l.tlsLines(&b)
	} else {
		line("port %d", s.port)
	}
	line("protected-mode no")
	line("daemonize no")
	line("dir %s", confQuote(s.dir))
	line("logfile %s", confQuote(filepath.Join(s.dir, "server.log")))
	line("sentinel myid %s", s.myID)
	host, port, _ := net.SplitHostPort(master.Addr())
	name := c.MasterName
	line("sentinel monitor %s %s %s %d", name, host, port, c.Quorum)
	line("sentinel down-after-milliseconds %s %d", name, c.DownAfter.Milliseconds())
	line("sentinel failover-timeout %s %d", name, c.FailoverTimeout.Milliseconds())
	line("sentinel parallel-syncs %s 1", name)
	if c.Username != "" {
		line("sentinel auth-user %s %s", name, confQuote(c.Username))
	}
	if c.Password != "" {
		line("sentinel auth-pass %s %s", name, confQuote(c.Password))
	}
	if c.SentinelUsername != "" {
		line("user default off")
		line("user %s on %s ~* &* +@all", confQuote(c.SentinelUsername), confQuote(">"+c.SentinelPassword))
		line("sentinel sentinel-user %s", confQuote(c.SentinelUsername))
		line("sentinel sentinel-pass %s", confQuote(c.SentinelPassword))
	} else if c.SentinelPassword != "" {
		line("requirepass %s", confQuote(c.SentinelPassword))
		line("sentinel sentinel-pass %s", confQuote(c.SentinelPassword))
	}
	// Seed what the sentinels would otherwise learn over the next seconds
	// (replicas from the master's INFO, peers from hello messages), so a
	// fresh lab can fail over at once.
	for _, r := range replicas {
		rh, rp, _ := net.SplitHostPort(r.Addr())
		line("sentinel known-replica %s %s %s", name, rh, rp)
	}
	for _, peer := range l.sentinels {
		if peer != s {
			ph, pp, _ := net.SplitHostPort(peer.Addr())
			line("sentinel known-sentinel %s %s %s %s", name, ph, pp, peer.myID)
		}
	}
	for _, extra := range c.SentinelExtraConfig {
		line("%s", extra)
	}
	return b.String()
}

func newSentinelID() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// SentinelEvent is one message a sentinel published (on its channels such
// as +switch-master, +sdown, +odown, +failover-state-*, +convert-to-slave),
// with the time the lab received it.
type SentinelEvent struct {
	At       time.Time
	Sentinel string // address of the sentinel that published it
	Type     string // the channel: "+switch-master", "-sdown", ...
	Payload  string
}

func (e SentinelEvent) String() string {
	return fmt.Sprintf("%s %s %s %s", e.At.Format("15:04:05.000"), e.Sentinel, e.Type, e.Payload)
}

// eventLog records every sentinel's events. One goroutine per sentinel
// feeds it; Close stops them.
type eventLog struct {
	mu      sync.Mutex
	events  []SentinelEvent
	changed chan struct{} // closed and replaced on every append

	cancel  context.CancelFunc
	clients []*redis.Client // one per sentinel, only for events
	subs    []*redis.PubSub
	wg      sync.WaitGroup
}

func newEventLog() *eventLog {
	return &eventLog{changed: make(chan struct{})}
}

func (e *eventLog) add(ev SentinelEvent) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	close(e.changed)
	e.changed = make(chan struct{})
	e.mu.Unlock()
}

func (e *eventLog) snapshot() ([]SentinelEvent, chan struct{}) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.events), e.changed
}

// watch subscribes to every channel of each sentinel and records what
// arrives. It returns once every subscription is confirmed.
func (e *eventLog) watch(ctx context.Context, l *Lab) error {
	runCtx, cancel := context.WithCancel(context.Background())
	e.cancel = cancel
	for _, s := range l.sentinels {
		client := redis.NewClient(s.adminOptions())
		e.clients = append(e.clients, client)
		ps := client.PSubscribe(ctx, "*")
		if _, err := ps.Receive(ctx); err != nil {
			_ = ps.Close()
			return fmt.Errorf("lab: subscribe to %s events: %w", s.name, err)
		}
		e.subs = append(e.subs, ps)
		addr := s.Addr()
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			for {
				msg, err := ps.ReceiveMessage(runCtx)
				if err != nil {
					if runCtx.Err() != nil || errors.Is(err, redis.ErrClosed) {
						return
					}
					// The sentinel is down or restarting; the PubSub
					// reconnects and subscribes again on the next call.
					select {
					case <-runCtx.Done():
						return
					case <-time.After(50 * time.Millisecond):
					}
					continue
				}
				e.add(SentinelEvent{At: time.Now(), Sentinel: addr, Type: msg.Channel, Payload: msg.Payload})
			}
		}()
	}
	return nil
}

func (e *eventLog) close() {
	if e.cancel != nil {
		e.cancel()
	}
	for _, ps := range e.subs {
		_ = ps.Close()
	}
	e.wg.Wait()
	for _, c := range e.clients {
		_ = c.Close()
	}
}

// Events returns every sentinel event recorded so far, oldest first.
func (l *Lab) Events() []SentinelEvent {
	evs, _ := l.events.snapshot()
	return evs
}

// WaitEvent waits for the first event at or after since for which match
// returns true (it may already have been recorded).
func (l *Lab) WaitEvent(ctx context.Context, since time.Time, match func(SentinelEvent) bool) (SentinelEvent, error) {
	seen := 0
	for {
		evs, changed := l.events.snapshot()
		for _, ev := range evs[seen:] {
			if !ev.At.Before(since) && match(ev) {
				return ev, nil
			}
		}
		seen = len(evs)
		select {
		case <-changed:
		case <-ctx.Done():
			return SentinelEvent{}, fmt.Errorf("lab: waiting for a sentinel event: %w", ctx.Err())
		}
	}
}

// EventType matches events of one type, e.g. EventType("+switch-master").
func EventType(t string) func(SentinelEvent) bool {
	return func(ev SentinelEvent) bool { return ev.Type == t }
}

// FailoverResult is the timeline of one Failover.
type FailoverResult struct {
	OldMaster *Node
	NewMaster *Node
	// Sentinel is the address of the sentinel that was asked to fail over
	// (it leads the failover).
	Sentinel string
	// Requested is when SENTINEL FAILOVER was sent.
	Requested time.Time
	// SwitchMaster is when each sentinel published +switch-master. The
	// leader usually announces about a second after the others.
	SwitchMaster map[string]time.Time
	// Agreed is when every sentinel named the new master and ROLE on the
	// new master said master.
	Agreed time.Time
}

// Duration is the time from the request until every sentinel agreed.
func (r FailoverResult) Duration() time.Duration { return r.Agreed.Sub(r.Requested) }

// Failover asks the first sentinel that answers to fail the master over
// (SENTINEL FAILOVER) and waits until every running sentinel names the new
// master, ROLE on it says master, and every sentinel has published
// +switch-master. The old master keeps accepting writes until Sentinel
// demotes it, a little later; WaitSettled waits for that too.
func (l *Lab) Failover(ctx context.Context) (FailoverResult, error) {
	if len(l.sentinels) == 0 {
		return FailoverResult{}, errors.New("lab: Failover needs sentinels")
	}
	old, err := l.Master(ctx)
	if err != nil {
		return FailoverResult{}, err
	}
	res := FailoverResult{OldMaster: old, SwitchMaster: map[string]time.Time{}}
	if err := l.requestFailover(ctx, &res); err != nil {
		return res, err
	}
	l.cfg.Logger.Info("lab: failover requested", "sentinel", res.Sentinel, "old", old.name)

	// Poll until a new master is agreed on, then until every sentinel
	// has announced it.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		l.noteAgreedMaster(ctx, &res)
		if res.NewMaster != nil && l.noteSwitchMaster(&res) {
			l.cfg.Logger.Info("lab: failover done", "new", res.NewMaster.name, "took", res.Duration())
			return res, nil
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("lab: failover of %s not complete: %w", l.cfg.MasterName, ctx.Err())
		case <-tick.C:
		}
	}
}

// requestFailover sends SENTINEL FAILOVER to the running sentinels in
// turn until one accepts it, and records in res which one and when; the
// error is the last sentinel's when none did.
func (l *Lab) requestFailover(ctx context.Context, res *FailoverResult) error {
	var lastErr error
	for _, s := range l.runningSentinels() {
		res.Requested = time.Now()
		lastErr = s.Do(ctx, "SENTINEL", "FAILOVER", l.cfg.MasterName).Err()
		if lastErr == nil {
			res.Sentinel = s.Addr()
			return nil
		}
	}
	return fmt.Errorf("lab: SENTINEL FAILOVER %s: %w", l.cfg.MasterName, lastErr)
}

// noteAgreedMaster records in res the new master, and when it was agreed
// on, the first time every running sentinel names a node other than the
// old master and ROLE on that node says master. It asks on every poll,
// also once the new master is known (what it finds then is not used).
func (l *Lab) noteAgreedMaster(ctx context.Context, res *FailoverResult) {
	n, ok := l.agreedMaster(ctx)
	if !ok || n == res.OldMaster {
		return
	}
	if role, err := n.Role(ctx); err == nil && role.Role == "master" && res.NewMaster == nil {
		res.NewMaster = n
		res.Agreed = time.Now()
	}
}

// noteSwitchMaster records in res the +switch-master events published
// since the request, and says whether every running sentinel has
// published one.
func (l *Lab) noteSwitchMaster(res *FailoverResult) bool {
	for _, ev := range l.Events() {
		if ev.Type == "+switch-master" && !ev.At.Before(res.Requested) {
			res.SwitchMaster[ev.Sentinel] = ev.At
		}
	}
	return len(res.SwitchMaster) >= len(l.runningSentinels())
}

// agreedMaster returns the node every running sentinel names as master.
func (l *Lab) agreedMaster(ctx context.Context) (*Node, bool) {
	var addr string
	for _, s := range l.runningSentinels() {
		a, err := s.MasterAddr(ctx)
		if err != nil || (addr != "" && a != addr) {
			return nil, false
		}
		addr = a
	}
	n := l.NodeByAddr(addr)
	return n, n != nil
}

func (l *Lab) runningSentinels() []*SentinelNode {
	var out []*SentinelNode
	for _, s := range l.sentinels {
		if s.Running() && !s.Paused() {
			out = append(out, s)
		}
	}
	return out
}
