package sentinel

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisinfo"
)

// sentinelSet is the known sentinels in asking order, with a client each.
// The sentinel that answered last is asked first next time.
type sentinelSet struct {
	opts    *Options
	mu      sync.Mutex
	order   []string
	clients map[string]*redis.Client
}

func newSentinelSet(opts *Options) *sentinelSet {
	s := &sentinelSet{opts: opts, clients: map[string]*redis.Client{}}
	for _, a := range opts.SentinelAddrs {
		s.add(a)
	}
	return s
}

func (s *sentinelSet) list() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.order)
}

func (s *sentinelSet) client(addr string) *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.clients[addr]
}

// add appends a sentinel; it reports whether it was new.
func (s *sentinelSet) add(addr string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.clients[addr]; ok {
		return false
	}
	s.order = append(s.order, addr)
	s.clients[addr] = redis.NewClient(s.opts.sentinelOptions(addr))
	return true
}

func (s *sentinelSet) moveToFront(addr string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.order, addr); i > 0 {
		copy(s.order[1:i+1], s.order[:i])
		s.order[0] = addr
	}
}

func (s *sentinelSet) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		_ = c.Close()
	}
	s.clients = map[string]*redis.Client{}
}

// masterReport is one sentinel's answer about the master.
type masterReport struct {
	sentinel string
	addr     string
	// epoch is the master's config epoch in this sentinel's view; it grows
	// with every failover, so a smaller one than already seen is stale. -1
	// when the sentinel only answered GET-MASTER-ADDR-BY-NAME.
	epoch int64
	// connected lists the replicas the master's own ROLE reply lists (the
	// ones it streams writes to, and whose acknowledgements WAIT counts),
	// as the master announces them; set by discover.
	connected []string
	// sDownMillis is how long this sentinel has seen the master subjectively
	// down (SENTINEL MASTER's s-down-time), 0 when it does not. Sentinel
	// lets a replica's link to the master be down that much longer before
	// the replica may no longer be promoted.
	sDownMillis int64
}

var errUnknownMaster = errors.New("does not monitor a master by that name")

// askSentinel asks one sentinel for the master, bounded by SentinelTimeout.
// SENTINEL MASTER gives the address GET-MASTER-ADDR-BY-NAME gives plus the
// config epoch; a sentinel user not allowed SENTINEL MASTER is asked
// GET-MASTER-ADDR-BY-NAME instead.
func (c *Client) askSentinel(ctx context.Context, addr string) (masterReport, error) {
	client := c.sentinels.client(addr)
	if client == nil {
		return masterReport{}, ErrClosed
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.SentinelTimeout)
	defer cancel()
	rep := masterReport{sentinel: addr, epoch: -1}
	fields, err := redisinfo.ParseFields(client.Do(ctx, "SENTINEL", "MASTER", c.opts.MasterName))
	switch {
	case err == nil:
		rep.addr = net.JoinHostPort(fields["ip"], fields["port"])
		if e, perr := strconv.ParseInt(fields["config-epoch"], 10, 64); perr == nil {
			rep.epoch = e
		}
		if redisinfo.HasFlag(fields["flags"], "s_down") {
			if ms, perr := strconv.ParseInt(fields["s-down-time"], 10, 64); perr == nil && ms > 0 {
				rep.sDownMillis = ms
			}
		}
		// The sentinel leading a failover bumps the config epoch when the
		// replica reports its promotion, but keeps naming the old master
		// until it has reconfigured the other replicas, a second or more
		// later: an answer mid-failover is stale whatever its epoch.
		if redisinfo.HasFlag(fields["flags"], "failover_in_progress") {
			return rep, skipped(SkipStale, fmt.Errorf("stale: leading a failover (state %s) and still naming %s", fields["failover-state"], rep.addr))
		}
		return rep, nil
	case redis.IsPermissionError(err):
		v, err := client.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", c.opts.MasterName).StringSlice()
		if err != nil {
			return rep, describeSentinelError(err, c.opts.SentinelTimeout)
		}
		if len(v) != 2 {
			return rep, skipped(SkipUnknownMaster, errUnknownMaster)
		}
		rep.addr = net.JoinHostPort(v[0], v[1])
		return rep, nil
	case strings.Contains(err.Error(), "No such master"):
		return rep, skipped(SkipUnknownMaster, errUnknownMaster)
	default:
		return rep, describeSentinelError(err, c.opts.SentinelTimeout)
	}
}

// describeSentinelError says in words why a sentinel was skipped.
func describeSentinelError(err error, timeout time.Duration) error {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, context.DeadlineExceeded):
		return skipped(SkipSlow, fmt.Errorf("slow: no answer within %v: %w", timeout, err))
	case redis.IsAuthError(err):
		return skipped(SkipAuth, fmt.Errorf("AUTH failed on the sentinel: %w", err))
	case failure.Network(err):
		return skipped(SkipDown, fmt.Errorf("down: %w", err))
	}
	return skipped(SkipOther, err)
}

// discover asks the sentinels in order for the master and verifies it
// with ROLE. Sentinels that are down, slow, stale (stale returns an error
// for their answer) or name a node that is not a master are skipped; when
// none qualifies, discovery tries again briefly, within ctx and
// DiscoveryTimeout.
func (c *Client) discover(ctx context.Context, stale func(masterReport) error) (masterReport, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.DiscoveryTimeout)
	defer cancel()
	backoff := 50 * time.Millisecond
	var last []SentinelAttempt // the last round that asked every sentinel
	for {
		rep, attempts, complete := c.discoverOnce(ctx, stale)
		if rep.addr != "" {
			c.lastFailure.Store(nil)
			return rep, nil
		}
		c.stats.discoveryFailures.Add(1)
		if complete || last == nil {
			last = attempts
		}
		c.lastFailure.Store(&DiscoveryError{MasterName: c.opts.MasterName, Attempts: last})
		select {
		case <-ctx.Done():
			return masterReport{}, &DiscoveryError{MasterName: c.opts.MasterName, Attempts: last, Cause: ctx.Err()}
		case <-time.After(backoff):
			backoff = min(backoff*2, 400*time.Millisecond)
		}
	}
}

// discoverOnce asks every sentinel once. complete is false when ctx ended
// the round before every sentinel was asked.
func (c *Client) discoverOnce(ctx context.Context, stale func(masterReport) error) (found masterReport, attempts []SentinelAttempt, complete bool) {
	type verification struct {
		role redisinfo.Role
		err  error
	}
	verified := map[string]verification{} // several sentinels usually name the same node
	complete = true
	for _, s := range c.sentinels.list() {
		if ctx.Err() != nil {
			complete = false
			attempts = append(attempts, SentinelAttempt{Sentinel: s, Reason: SkipOther, Err: fmt.Errorf("not asked: %w", ctx.Err())})
			continue
		}
		rep, err := c.askSentinel(ctx, s)
		if err == nil {
			err = stale(rep)
		}
		if err == nil {
			v, seen := verified[rep.addr]
			if !seen {
				v.role, v.err = c.verifyMaster(ctx, rep.addr)
				verified[rep.addr] = v
			}
			err = v.err
			for _, r := range v.role.Replicas {
				rep.connected = append(rep.connected, r.Addr)
			}
		}
		if err != nil {
			reason := skipReason(err)
			c.skipSentinel(s, rep.addr, reason, err)
			attempts = append(attempts, SentinelAttempt{Sentinel: s, Named: rep.addr, Reason: reason, Err: err})
			continue
		}
		c.sentinels.moveToFront(s)
		return rep, attempts, complete
	}
	return masterReport{}, attempts, complete
}

// verifyMaster checks with ROLE that addr is a master, and returns the
// reply (which lists the replicas connected to it).
func (c *Client) verifyMaster(ctx context.Context, addr string) (redisinfo.Role, error) {
	ctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
	defer cancel()
	role, err := c.nodes.get(addr).role(ctx)
	if err != nil {
		return role, skipped(SkipUnverified, fmt.Errorf("named %s, but ROLE there failed: %w", addr, err))
	}
	if role.Role != "master" {
		return role, &RoleMismatchError{Addr: addr, Role: role.Role}
	}
	return role, nil
}

func (c *Client) skipSentinel(sentinel, named string, reason SkipReason, err error) {
	c.stats.sentinelsSkipped.Add(1)
	c.emit(Event{Kind: EventSentinelSkipped, Sentinel: sentinel, Master: named, Reason: string(reason), Err: err})
	c.log.Debug("sentinel skipped", "sentinel", sentinel, "named", named, "reason", reason, "err", err)
}

// replicaReport is a replica a sentinel reports healthy and ROLE confirms.
type replicaReport struct {
	addr   string
	offset int64
}

// healthyReplicas asks the sentinel for the master's replicas, drops the
// ones it flags s_down, o_down or disconnected or whose link to the master
// is down, and keeps those that ROLE confirms as replicas with a connected
// link. The checks run in parallel, each bounded. claimMaster lists the
// replicas whose ROLE says master: a promotion Sentinel has not announced
// yet, or the old master awaiting demotion. promotable lists the replicas
// the sentinel could promote (see promotableReplicas; masterSDownMillis is
// the master's s-down-time in that sentinel's view), whether or not the
// client reaches them.
func (c *Client) healthyReplicas(ctx context.Context, sentinel string, masterSDownMillis int64) (healthy []replicaReport, claimMaster, promotable []string, err error) {
	client := c.sentinels.client(sentinel)
	if client == nil {
		return nil, nil, nil, ErrClosed
	}
	qctx, cancel := context.WithTimeout(ctx, c.opts.SentinelTimeout)
	rows, err := redisinfo.ParseTable(client.Do(qctx, "SENTINEL", "REPLICAS", c.opts.MasterName))
	cancel()
	if err != nil {
		return nil, nil, nil, describeSentinelError(err, c.opts.SentinelTimeout)
	}
	promotable = promotableReplicas(rows, masterSDownMillis)
	var candidates []string
	for _, r := range rows {
		flags := r["flags"]
		if redisinfo.HasFlag(flags, "s_down") || redisinfo.HasFlag(flags, "o_down") ||
			redisinfo.HasFlag(flags, "disconnected") || r["master-link-status"] == "err" {
			continue
		}
		candidates = append(candidates, redisinfo.Addr(r))
	}
	found := make([]replicaReport, len(candidates))
	masters := make([]bool, len(candidates))
	var wg sync.WaitGroup
	for i, addr := range candidates {
		wg.Go(func() {
			rctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
			defer cancel()
			role, err := c.nodes.get(addr).role(rctx)
			switch {
			case err != nil:
			case role.Role == "slave" && role.LinkState == "connected":
				found[i] = replicaReport{addr: addr, offset: role.Offset}
			case role.Role == "master":
				masters[i] = true
			}
		})
	}
	wg.Wait()
	for i, r := range found {
		if r.addr != "" {
			healthy = append(healthy, r)
		}
		if masters[i] {
			claimMaster = append(claimMaster, candidates[i])
		}
	}
	return healthy, claimMaster, promotable, nil
}

// promotableReplicas returns the rows of SENTINEL REPLICAS that Sentinel
// could promote, by the rules of its own choice (sentinelSelectSlave) that
// the table shows: not flagged s_down, o_down or disconnected, a
// replica-priority other than 0, and a link to the master down for no more
// than ten times down-after-milliseconds plus, while the sentinel sees the
// master subjectively down, how long it has (masterSDownMillis). A link
// that is down for less is no bar: Sentinel promotes such a replica, with
// whatever data it has. The rules the table cannot show (recent PING and
// INFO replies) are left out, so the list errs on the side of too many.
func promotableReplicas(rows []map[string]string, masterSDownMillis int64) []string {
	var out []string
	for _, r := range rows {
		flags := r["flags"]
		if redisinfo.HasFlag(flags, "s_down") || redisinfo.HasFlag(flags, "o_down") || redisinfo.HasFlag(flags, "disconnected") {
			continue
		}
		if r["slave-priority"] == "0" || r["replica-priority"] == "0" {
			continue
		}
		down, derr := strconv.ParseInt(r["master-link-down-time"], 10, 64)
		after, aerr := strconv.ParseInt(r["down-after-milliseconds"], 10, 64)
		if derr == nil && aerr == nil && after > 0 && down > masterSDownMillis+10*after {
			continue
		}
		out = append(out, redisinfo.Addr(r))
	}
	return out
}

// durableReplicas returns the replicas a durable write on master must be
// confirmed by, sorted: every replica the master lists as connected (ROLE),
// every replica Sentinel could promote (promotable), and every replica the
// client verified itself, once each, the master left out. WAIT counts
// acknowledgements, not names, so the count must be the size of this
// union: with any smaller count, the replicas still attached to the old
// master after a promotion could meet it without the one promoted. With
// the whole union, WAIT succeeds only if every replica the master has
// connected confirmed the write, and only if every promotable replica is
// among them. A replica listed under two spellings is counted twice, which
// makes durable writes fail, never succeed wrongly.
func durableReplicas(master string, connected, promotable, verified []string) []string {
	var out []string
	for _, list := range [][]string{connected, promotable, verified} {
		for _, addr := range list {
			if addr != master && addr != "" && !slices.Contains(out, addr) {
				out = append(out, addr)
			}
		}
	}
	slices.Sort(out)
	return out
}

// learnSentinels adds the peers the sentinel knows of and returns the new
// ones.
func (c *Client) learnSentinels(ctx context.Context, sentinel string) []string {
	client := c.sentinels.client(sentinel)
	if client == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.SentinelTimeout)
	defer cancel()
	rows, err := redisinfo.ParseTable(client.Do(ctx, "SENTINEL", "SENTINELS", c.opts.MasterName))
	if err != nil {
		return nil
	}
	var added []string
	for _, r := range rows {
		if redisinfo.HasFlag(r["flags"], "s_down") || redisinfo.HasFlag(r["flags"], "disconnected") {
			continue
		}
		if addr := redisinfo.Addr(r); c.sentinels.add(addr) {
			added = append(added, addr)
		}
	}
	return added
}
