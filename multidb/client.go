package multidb

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/cachestore"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/pubsubbridge"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
)

// front is the go-redis client whose command methods Client exposes. It
// never dials: its only hook sends every command, pipeline and transaction
// to the active database (package internal/routing).
type front = routing.Front

// Client is a go-redis client over several Redis deployments: every call
// goes to the active database, the highest-weight one whose breaker is
// closed, and moves to the next when it fails, following the rules in the
// package documentation.
//
// Client satisfies redis.UniversalClient. Create it with NewClient and
// Close it when done.
type Client struct {
	*front

	cfg Config
	log *slog.Logger
	// cache is the client-side cache of the databases on a *redis.Client
	// (Config.Cache), or nil.
	cache *cachestore.Cache
	rule  tripRule

	// route is what calls read: the active database (nil when none is
	// healthy). It is replaced, never changed, under mu.
	route atomic.Pointer[route]
	// down is the error calls get while no database is healthy (nil
	// otherwise), replaced under mu.
	down atomic.Pointer[UnavailableError]

	mu        sync.Mutex
	dbs       []*database // failover order: weight, highest first; ties by index
	nextIndex int
	hooks     []redis.Hook // added to every database client, present and future
	onNew     []func(*redis.Client)
	closed    bool
	downSince time.Time
	attempts  int
	exhausted bool

	stats   counters
	events  *dispatcher
	pubsub  *pubsubRouter
	cursors routing.UntaggedCursors // the SCAN cursors it could not tag (scan.go)
	kick    chan struct{}           // wakes the manager when no database is healthy
	wire    routing.WireCount       // the databases' batches on the wire

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// route is one routing decision.
type route struct {
	active *database
	gen    uint64
	pinned bool // SetActive chose active: no failback
	closed bool
}

// database is one deployment and everything the client knows of it.
type database struct {
	name   string
	index  int // order of addition: breaks weight ties
	client redis.UniversalClient
	owned  bool // built from Database.Options: the client closes it
	// checker runs the client's own health and burst checks: for a
	// *redis.Client, a sibling of the same options, a few connections and
	// none of the caller's hooks or instrumentation (OnNewNode), so those
	// see only the caller's calls; for any other client, client itself,
	// whose nodes the checks then reach (a Sentinel client sends them on
	// its control connections: see routing.Internal).
	checker redis.UniversalClient
	probe   Probe
	// batch auto-pipelines single commands on a database whose client is
	// a *redis.Client (Config.AutoPipeline, or an auto-pipeliner's
	// batches); nil for other clients, which are asked to batch
	// themselves (see runWork).
	batch *routing.Batcher
	// cache is the database's part of the client-side cache (Config.Cache)
	// for a database on a *redis.Client; nil otherwise.
	cache *cachestore.NodeCache
	// subscriptions is where the subscription bridges to this database
	// subscribe (through client): see pubsub.go.
	subscriptions *pubsubbridge.Target

	det detector // lock-free
	// bursting is true while a burst check of this database runs (at most
	// one at a time: see burst.go); bursts counts its goroutine, for
	// RemoveDatabase to wait for.
	bursting atomic.Bool
	bursts   sync.WaitGroup

	// Guarded by Client.mu (brk's state is also read without it).
	weight       float64
	brk          breaker
	removed      bool
	checked      bool
	healthy      bool
	healthySince time.Time
	lastCheck    time.Time
	lastLatency  time.Duration
	lastErr      string
	checksPassed uint64
	checksFailed uint64
	trips        uint64
	burstChecks  uint64 // started
	burstPassed  uint64
	burstFailed  uint64

	wake   chan struct{} // the health loop recomputes its next wake-up
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the health loop returned
}

// NewClient returns a client over cfg.Databases. It validates the
// configuration and returns at once: every breaker starts closed, the
// highest-weight database is active, and the first health checks start
// in the background.
func NewClient(cfg Config) (*Client, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, d := range cfg.Databases {
		if err := d.validate(); err != nil {
			return nil, err
		}
		if seen[d.Name] {
			return nil, databaseError(d.Name, "Name", "is used twice")
		}
		seen[d.Name] = true
	}
	c := &Client{
		cfg:  cfg,
		log:  cfg.Logger,
		rule: tripRule{consecutive: cfg.ConsecutiveFailures, minFailures: cfg.MinFailures, rate: cfg.FailureRateThreshold},
		kick: make(chan struct{}, 1),
	}
	if cfg.Cache != nil {
		c.cache = cachestore.New(*cfg.Cache, cfg.Classifier, cfg.Logger)
	}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	c.route.Store(&route{})
	c.events = newDispatcher(cfg.Observer, cfg.Logger)
	c.front = c.newFront()
	c.pubsub = newPubsubRouter(c)

	c.mu.Lock()
	for _, d := range cfg.Databases {
		c.dbs = append(c.dbs, c.newDatabase(d))
	}
	c.sortLocked()
	c.activateLocked(c.pickLocked())
	for _, db := range c.dbs {
		c.startHealthLocked(db)
	}
	c.mu.Unlock()

	c.wg.Add(1)
	go c.manage()
	return c, nil
}

// newDatabase builds a validated database's state (and its client, from
// Options).
func (c *Client) newDatabase(d Database) *database {
	db := &database{
		name:   d.Name,
		index:  c.nextIndex,
		weight: d.Weight,
		client: d.Client,
		probe:  d.Probe,
		det:    detector{window: newWindow(c.cfg.FailureWindow)},
		wake:   make(chan struct{}, 1),
		done:   make(chan struct{}),
	}
	c.nextIndex++
	db.brk.grace = d.GracePeriod
	if db.brk.grace == 0 {
		db.brk.grace = c.cfg.GracePeriod
	}
	if db.probe == nil {
		db.probe = c.cfg.Probe
	}
	if d.Options != nil {
		rc := redis.NewClient(databaseOptions(d.Options, c.cfg.ReplyLimits))
		db.client, db.owned = rc, true
	} else {
		// A go-redis client the caller built: its replies are bounded
		// from the connections it dials from now on (a rediskit client
		// is bounded by its own config).
		routing.AddDialHook(db.client, respguard.Hook(c.cfg.ReplyLimits.ForData()))
	}
	if rc, ok := db.client.(*redis.Client); ok {
		db.batch = routing.NewBatcher(rc, routing.BatchConfig{MaxBatch: c.cfg.AutoPipelineMaxBatch, MaxInflight: c.cfg.AutoPipelineInflight,
			Wire: &c.wire, Blocking: c.cfg.Classifier.Blocking})
		if c.cache != nil {
			db.cache = c.cache.Track(rc.Options())
		}
	}
	pubsubbridge.AddHook(db.client)
	db.subscriptions = &pubsubbridge.Target{Name: db.name, Client: db.client}
	for _, h := range c.hooks {
		db.client.AddHook(routing.UserHook(h))
	}
	db.checker = db.client
	if rc, ok := db.client.(*redis.Client); ok {
		opt := *rc.Options()
		opt.PoolSize, opt.MaxActiveConns = checkerPoolSize, checkerActiveConns
		opt.MinIdleConns, opt.MaxIdleConns = 0, checkerIdleConns
		// The health checks are the client's own commands: their
		// replies are bounded (respguard), as its control connections'
		// are in every package.
		db.checker = redis.NewClient(respguard.Guard(&opt))
		if c.cfg.InternalHook != nil {
			db.checker.AddHook(c.cfg.InternalHook)
		}
	} else if c.cfg.InternalHook != nil {
		db.client.AddHook(routing.InternalHook(c.cfg.InternalHook))
	}
	for _, fn := range c.onNew {
		onNewNode(db.client, fn)
	}
	db.ctx, db.cancel = context.WithCancel(c.ctx)
	return db
}

// The pool of a database's checker client. The health loop's checks of one
// database run one at a time; a burst check may overlap one, and so may
// the checks of SetActive and UpdateWeight, on their callers' goroutines.
// checkerActiveConns bounds the connections (past it a check fails at
// once, with redis.ErrPoolExhausted), with room for callers checking
// concurrently; checkerIdleConns stay open between checks. Its PoolSize is large
// all the same, because go-redis stops dialling after PoolSize failed dials
// in a row and answers with the last dial error until a background dial
// succeeds (tried every second, by a goroutine that outlives Close by up
// to a second): a check must dial, or it would report a restarted database
// as down. 1024 failed checks in a row take over an hour at the default
// interval and probe count; the pool's cost is its idle slice, 8 KiB.
const (
	checkerPoolSize    = 1024
	checkerActiveConns = 16
	checkerIdleConns   = 2
)

// close closes what the database owns: its checker, and its client when
// it was built from Database.Options.
func (db *database) close() error {
	if db.cache != nil {
		db.cache.Close()
	}
	var errs []error
	if db.checker != db.client {
		errs = append(errs, db.checker.Close())
	}
	if db.owned {
		errs = append(errs, db.client.Close())
	}
	return errors.Join(errs...)
}

// sortLocked puts the databases in failover order.
func (c *Client) sortLocked() {
	slices.SortStableFunc(c.dbs, func(a, b *database) int {
		switch {
		case a.weight > b.weight:
			return -1
		case a.weight < b.weight:
			return 1
		}
		return a.index - b.index
	})
}

// pickLocked is the failover strategy: the highest-weight database whose
// breaker is closed, or nil.
func (c *Client) pickLocked() *database {
	for _, db := range c.dbs {
		if db.brk.get() == Closed {
			return db
		}
	}
	return nil
}

func (c *Client) findLocked(name string) *database {
	for _, db := range c.dbs {
		if db.name == name {
			return db
		}
	}
	return nil
}

// setActiveLocked routes traffic to db (nil: none is healthy).
func (c *Client) setActiveLocked(db *database, reason Reason, pinned bool, cause error) {
	old := c.route.Load()
	if old.closed {
		return
	}
	if old.active == db {
		if old.pinned != pinned {
			c.route.Store(&route{active: db, gen: old.gen + 1, pinned: pinned})
		}
		return
	}
	now := time.Now()
	oldName := nameOf(old.active)
	if db == nil {
		c.downSince, c.attempts, c.exhausted = now, 0, false
		c.refreshDownLocked()
		c.route.Store(&route{gen: old.gen + 1})
		c.log.Error("multidb: no healthy database; calls fail until one recovers", "was", oldName, "err", cause,
			"attempts", c.cfg.FailoverAttempts, "delay", c.cfg.FailoverDelay)
		c.events.emit(Event{Kind: EventAllUnhealthy, Old: oldName, Err: cause})
		select {
		case c.kick <- struct{}{}:
		default:
		}
		c.pubsub.moveTo(nil)
		return
	}
	c.route.Store(&route{active: db, gen: old.gen + 1, pinned: pinned})
	if !c.downSince.IsZero() {
		c.log.Info("multidb: service resumed", "database", db.name, "unavailable_for", now.Sub(c.downSince).Round(time.Millisecond))
		c.downSince, c.attempts, c.exhausted = time.Time{}, 0, false
		c.down.Store(nil)
	}
	c.stats.switches.Add(1)
	level := slog.LevelInfo
	if reason == ReasonAutomatic && old.active != nil {
		level = slog.LevelWarn
	}
	c.log.Log(context.Background(), level, "multidb: active database changed", "from", oldName, "to", db.name, "reason", reason.String())
	c.events.emit(Event{Kind: EventActiveChanged, Old: oldName, New: db.name, Reason: reason, Err: cause})
	c.pubsub.moveTo(db)
}

// refreshDownLocked rebuilds the error calls get while no database is
// healthy.
func (c *Client) refreshDownLocked() {
	e := &UnavailableError{
		Exhausted:   c.exhausted,
		Since:       c.downSince,
		Attempts:    c.attempts,
		MaxAttempts: c.cfg.FailoverAttempts,
	}
	for _, db := range c.dbs {
		e.Databases = append(e.Databases, DatabaseStatus{Name: db.name, State: db.brk.get(), LastError: db.lastErr})
	}
	c.down.Store(e)
}

// fireLocked sends ev, seen at now, to db's breaker (see statemachine.go)
// and does what the transition asks: the one place a breaker's changes
// have effects (counts, logs, events to the Observer, re-routing). why
// says which rule, check or choice sent ev (the Event's Detail when the
// breaker moves); cause is the failure that would open it, nil otherwise.
func (c *Client) fireLocked(db *database, ev breakerEvent, now time.Time, why string, cause error) {
	from, act := db.brk.fire(ev, now)
	switch act {
	case actNone:
	case actOpened:
		c.openedLocked(db, from, why, cause)
	case actHalfOpened:
		c.log.Info("multidb: grace period over; the next health check decides", "database", db.name)
		c.events.emit(Event{Kind: EventBreakerChanged, Database: db.name, From: from, To: HalfOpen, Detail: why})
	case actClosed, actResumed:
		// Calls that started before it closed belong to what opened it
		// (detector.reset).
		db.det.reset(time.Now())
		c.log.Info("multidb: database reachable again", "database", db.name, "reason", why)
		c.events.emit(Event{Kind: EventBreakerChanged, Database: db.name, From: from, To: Closed, Detail: why})
		if act == actResumed && c.route.Load().active == nil {
			c.setActiveLocked(c.pickLocked(), ReasonAutomatic, false, nil)
		}
	}
}

// openedLocked does what follows db's breaker opening (from state from):
// counts, logs and reports it, wakes db's health loop, and moves traffic
// away from db when it was active.
func (c *Client) openedLocked(db *database, from BreakerState, why string, cause error) {
	db.trips++
	db.healthySince = time.Time{}
	if cause != nil {
		db.lastErr = cause.Error()
	}
	c.log.Warn("multidb: database unreachable", "database", db.name, "reason", why, "err", cause,
		"grace_period", db.brk.grace)
	c.events.emit(Event{Kind: EventBreakerChanged, Database: db.name, From: from, To: Open, Detail: why, Err: cause})
	select {
	case db.wake <- struct{}{}:
	default:
	}
	if c.route.Load().active == db {
		moved := fmt.Errorf("database %q: %s", db.name, why)
		if cause != nil {
			moved = fmt.Errorf("database %q: %s: %w", db.name, why, cause)
		}
		c.setActiveLocked(c.pickLocked(), ReasonAutomatic, false, moved)
	}
	if c.route.Load().active == nil {
		c.refreshDownLocked()
	}
}

// String describes the client without secrets.
func (c *Client) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var b strings.Builder
	r := c.route.Load()
	active := nameOf(r.active)
	if active == "" {
		active = "(none)"
	}
	fmt.Fprintf(&b, "multidb.Client<active=%s databases=[", active)
	for i, db := range c.dbs {
		if i > 0 {
			b.WriteString(" ")
		}
		fmt.Fprintf(&b, "%s(weight %s, %s)", db.name, strconv.FormatFloat(db.weight, 'g', -1, 64), db.brk.get())
	}
	b.WriteString("]>")
	return b.String()
}

// Active returns the active database's name, "" when none is healthy.
func (c *Client) Active() string { return nameOf(c.route.Load().active) }

// Close stops the client's goroutines, closes the clients it built from
// Database.Options and its own connections, and delivers the events still
// queued. Clients passed in Database.Client stay open. Close is safe to
// call more than once; the Observer must not call it.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	old := c.route.Load()
	c.route.Store(&route{gen: old.gen + 1, closed: true})
	dbs := slices.Clone(c.dbs)
	c.mu.Unlock()

	// The auto-pipeliners first: closing them drains their batches. None
	// is made after this.
	c.front.CloseAutoPipelines()
	c.cancel()
	c.pubsub.close()
	c.wg.Wait()
	var errs []error
	for _, db := range dbs {
		if err := db.close(); err != nil {
			errs = append(errs, fmt.Errorf("database %q: %w", db.name, err))
		}
	}
	if c.cache != nil {
		c.cache.Close()
	}
	c.events.close()
	if err := c.front.CloseFront(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// OnNewNode calls fn with the go-redis client of every node the client
// routes work to, present and future: a database's *redis.Client itself,
// or, for a database whose client has nodes of its own (sentinel.Client,
// cluster.Client, *redis.ClusterClient, *redis.Ring), each of those,
// through that client's OnNewNode. It is the way to instrument them:
//
//	c.OnNewNode(func(rc *redis.Client) { _ = redisotel.InstrumentTracing(rc) })
//
// fn is called on the caller's goroutine for the nodes there are now, and
// later on the clients' goroutines as nodes appear: it must be safe for
// concurrent use, must not block, and must not call the client.
func (c *Client) OnNewNode(fn func(*redis.Client)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.onNew = append(c.onNew, fn)
	for _, db := range c.dbs {
		onNewNode(db.client, fn)
	}
}

// onNewNode applies fn to a database's client: itself when it is a
// *redis.Client, its nodes when it reports them.
func onNewNode(client redis.UniversalClient, fn func(*redis.Client)) {
	switch rc := client.(type) {
	case *redis.Client:
		fn(rc)
	case interface{ OnNewNode(func(*redis.Client)) }:
		rc.OnNewNode(fn)
	}
}

// AddHook adds a go-redis hook to every database client, present and
// future (including clients passed in Database.Client), so it sees each
// command on the database that runs it, and each connection it dials,
// subscription connections included (Subscribe goes through the
// database's client) except on go-redis's cluster client or ring, whose
// node clients dial them.
func (c *Client) AddHook(h redis.Hook) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hooks = append(c.hooks, h)
	for _, db := range c.dbs {
		db.client.AddHook(routing.UserHook(h))
	}
}

// Watch runs fn in a WATCH transaction on the active database. It is
// never re-run: a failure during fn is a *DatabaseError saying whether
// the EXEC may have run (fn's own error is returned as it is).
func (c *Client) Watch(ctx context.Context, fn func(*redis.Tx) error, keys ...string) error {
	r := c.route.Load()
	if r.active == nil {
		return c.unavailable(r)
	}
	db := r.active
	start := time.Now()
	var own error // fn's error: the caller's own
	err := db.client.Watch(ctx, func(tx *redis.Tx) error { own = fn(tx); return own }, keys...)
	if c.recordOutcome(ctx, db, nil, err) {
		c.afterFailure(db, start, err)
	}
	return c.seal(db, nil, nil, err, own)
}

// seal is the last step of every call (failure.Seal): each error the
// caller sees, cmd's or each of cmds' and the one returned, is the
// database's own answer or one of the package's errors; any other failure
// becomes a *DatabaseError on db saying whether the work may have
// executed. own is the error of the caller's Watch function, if any.
func (c *Client) seal(db *database, cmd redis.Cmder, cmds []redis.Cmder, err, own error) error {
	if db == nil || failure.Answered(cmd, cmds, err) {
		return err // nothing ran (the route's own error, typed), or nothing to type
	}
	return failure.Seal(cmd, cmds, err, failure.Sealer{Typed: c.typed, Own: own,
		Wrap: func(q redis.Cmder, err error, may bool) error {
			write := !c.readOnly(cmd, cmds)
			if q != nil && cmd == nil && !routing.IsTx(cmds) {
				write = !c.cfg.Classifier.ReadOnly(q)
			}
			return &DatabaseError{Database: db.name, Write: write, MayHaveExecuted: may, Err: err}
		}})
}

// typed reports whether err is one of the package's errors, which a call
// returns as it is (see seal); ErrClosed only once the client is closed
// (a database's client closed under a call is a refusal on it).
func (c *Client) typed(err error) bool {
	var (
		de  *DatabaseError
		dce *DatabaseChangedError
		ue  *UnavailableError
		ce  *CursorError
		use *UnsupportedError
		pe  *safe.PanicError
	)
	return errors.As(err, &de) || errors.As(err, &dce) || errors.As(err, &ue) || errors.As(err, &ce) ||
		errors.As(err, &use) || errors.As(err, &pe) || errors.Is(err, ErrClosed) && c.route.Load().closed
}

// unavailable is the error of a call made while no database is active.
func (c *Client) unavailable(r *route) error {
	if r.closed {
		return ErrClosed
	}
	if e := c.down.Load(); e != nil {
		return e
	}
	return &UnavailableError{Since: time.Now(), MaxAttempts: c.cfg.FailoverAttempts}
}

// process runs one command (the front client's process hook).
func (c *Client) process(ctx context.Context, cmd redis.Cmder) error {
	return c.run(ctx, cmd, nil)
}

// processPipeline runs a pipeline, or a transaction (wrapped in MULTI ...
// EXEC by go-redis), as a whole on the active database.
func (c *Client) processPipeline(ctx context.Context, cmds []redis.Cmder) error {
	return c.run(ctx, nil, cmds)
}

// run sends work to the active database. When it fails with a connection
// error or a timeout and the active database changed meanwhile (this
// failure, or another call's, tripped the breaker; or someone switched),
// read-only work is run once more on the new database, and a write only if
// it provably did not execute; any other write fails with a
// *DatabaseChangedError.
//
// Work refused before it ran (failure.NotExecuted: the database's client
// was closed under it by RemoveDatabase, say) is no failure of the
// database and is not counted; if the active database changed meanwhile,
// it goes to the new one by the same rule.
func (c *Client) run(ctx context.Context, cmd redis.Cmder, cmds []redis.Cmder) error {
	if scans := findScans(cmd, cmds); scans != nil {
		return c.runScans(ctx, cmd, cmds, scans)
	}
	_, err := c.runOn(ctx, cmd, cmds, nil)
	if err != nil && cmd != nil {
		// Every database tried: a cached read may fall back on its entry
		// (clientcache.Config.MaxStale).
		return c.cache.FailOpen(ctx, cmd, err)
	}
	return err
}

// runOn is run, which also returns the database the work last ran on (nil
// when none). pinned, when set, is the database a SCAN cursor of the work
// came from: the work runs only there, and is not run again elsewhere after
// a switch (see scan.go).
func (c *Client) runOn(ctx context.Context, cmd redis.Cmder, cmds []redis.Cmder, pinned *database) (*database, error) {
	db, err := c.runRouted(ctx, cmd, cmds, pinned)
	return db, c.seal(db, cmd, cmds, err, nil)
}

// runRouted is runOn before its errors are sealed.
func (c *Client) runRouted(ctx context.Context, cmd redis.Cmder, cmds []redis.Cmder, pinned *database) (*database, error) {
	r := c.route.Load()
	db := r.active
	if db == nil {
		err := c.unavailable(r)
		routing.SetErrs(cmd, cmds, err)
		return nil, err
	}
	if pinned != nil && db != pinned {
		return nil, c.cursorLost(cmd, cmds, pinned, "is no longer the active database (now "+db.name+")", nil)
	}
	start := time.Now() // the trip rules need it (see judge)
	sent, err := c.runWork(ctx, db, cmd, cmds)
	if !sent {
		return db, err // a cache hit: not an outcome of db's (see runWork)
	}
	if !c.recordOutcome(ctx, db, cmds, err) {
		if failure.NotExecuted(err) && ctx.Err() == nil {
			rt := c.route.Load()
			switch next := rt.active; {
			case next != nil && next != db:
				if pinned != nil {
					return db, c.cursorLost(cmd, cmds, pinned, "is no longer the active database (now "+next.name+")", err)
				}
				return next, c.again(ctx, db, next, cmd, cmds, err)
			case next == nil && !rt.closed && errors.Is(err, redis.ErrClosed):
				// RemoveDatabase closed the client and left no healthy
				// database: say so, not "client is closed".
				return db, c.unavailable(rt)
			}
		}
		return db, err
	}
	next := c.afterFailure(db, start, err).active
	if next == nil || next == db {
		return db, err
	}
	if pinned != nil {
		return db, c.cursorLost(cmd, cmds, pinned, "is no longer the active database (now "+next.name+")", err)
	}
	return next, c.again(ctx, db, next, cmd, cmds, err)
}

// again handles work that failed on from after the active database became
// to.
func (c *Client) again(ctx context.Context, from, to *database, cmd redis.Cmder, cmds []redis.Cmder, cause error) error {
	write := !c.readOnly(cmd, cmds)
	notExecuted := write && failure.ProvablyNotExecuted(c.cfg.Classifier, cmd, cmds, cause)
	switch failure.Next(failure.Attempt{Write: write, NotExecuted: notExecuted, Moved: true}) {
	case failure.Rerun:
		if write {
			c.stats.writesRerun.Add(1)
			c.events.emit(Event{Kind: EventWriteRerun, Old: from.name, New: to.name, Err: cause})
		} else {
			c.stats.readsRetried.Add(1)
			c.events.emit(Event{Kind: EventReadRetried, Old: from.name, New: to.name, Err: cause})
		}
	default: // Refuse: the work moves to another database and may have run
		dce := &DatabaseChangedError{Old: from.name, New: to.name, Cause: cause}
		c.stats.writesRefused.Add(1)
		c.events.emit(Event{Kind: EventWriteRefused, Old: from.name, New: to.name, Err: dce})
		routing.SetErrs(cmd, cmds, dce)
		return dce
	}
	routing.SetErrs(cmd, cmds, nil)
	start := time.Now()
	sent, err := c.runWork(ctx, to, cmd, cmds)
	if sent && c.recordOutcome(ctx, to, cmds, err) {
		c.afterFailure(to, start, err)
	}
	return err
}

// runWork sends work to db: a single command auto-pipelined (see
// batched) through db's Batcher, or, for a database on another kind of
// client (a rediskit client with nodes of its own), with the context
// marked so that client batches it; anything else as it is. sent is
// false when the cache answered without sending anything: a hit is not an
// outcome of db's, and counted as a success it would dilute the breaker's
// failure rate with calls db never saw.
func (c *Client) runWork(ctx context.Context, db *database, cmd redis.Cmder, cmds []redis.Cmder) (sent bool, err error) {
	if ttl, ok := db.cache.Asked(ctx); ok && cmd != nil && !routing.IsInternal(ctx) {
		err = db.cache.Do(cmd, ttl, func() error {
			sent = true
			return c.send(ctx, db, cmd, nil)
		})
		if sent {
			db.cache.Wrote(cmd, nil) // a write asked with a cache context (reads are skipped)
		}
		return sent, err
	}
	err = c.send(ctx, db, cmd, cmds)
	if db.cache != nil {
		db.cache.Wrote(cmd, cmds) // read your writes (cachestore)
	}
	return true, err
}

// send is runWork's sending.
func (c *Client) send(ctx context.Context, db *database, cmd redis.Cmder, cmds []redis.Cmder) error {
	if cmd != nil && c.batched(ctx) && !routing.IsInternal(ctx) {
		if db.batch != nil {
			return db.batch.Do(ctx, cmd)
		}
		return routing.Run(routing.WithBatching(ctx), db.client, cmd, nil)
	}
	return routing.Run(ctx, db.client, cmd, cmds)
}

// batched reports whether a single command is auto-pipelined: with
// Config.AutoPipeline, or when it comes from one of the client's
// auto-pipeliners.
func (c *Client) batched(ctx context.Context) bool {
	return c.cfg.AutoPipeline || routing.Batching(ctx)
}

func (c *Client) readOnly(cmd redis.Cmder, cmds []redis.Cmder) bool {
	if cmd != nil {
		return c.cfg.Classifier.ReadOnly(cmd)
	}
	return !routing.IsTx(cmds) && c.cfg.Classifier.ReadOnlyPipeline(cmds)
}

// recordOutcome records the outcome of work on db for the trip rules and
// reports whether it was a failure of the database: a connection error or
// a timeout (afterFailure counts it). A reply (WRONGTYPE, redis.Nil, ...)
// shows the database works. Work whose own context ended says nothing
// about the database, and neither do client-side refusals (a closed
// client, a full pool).
func (c *Client) recordOutcome(ctx context.Context, db *database, cmds []redis.Cmder, err error) bool {
	if err == nil {
		db.det.success(time.Now())
		return false
	}
	if ctx.Err() != nil {
		return false
	}
	if connFailure(err) {
		return true
	}
	for _, q := range cmds {
		if connFailure(q.Err()) {
			return true
		}
	}
	if failure.Reply(err) {
		db.det.success(time.Now())
	}
	return false
}

func connFailure(err error) bool {
	return err != nil && (failure.Network(err) || failure.Timeout(err))
}

// afterFailure counts a failure of db's work started at start (once per
// event: see judge), trips its breaker when a rule says so, and returns
// the route as it is once any switch this failure (or a concurrent one)
// caused is done. A failure coalesced into an event is judged on the
// counts as they are: if its event tripped the breaker, it takes the lock
// too, and so sees the switch that event made.
//
// A failure that settles a burst as an outage (see confirms) trips the
// breaker too. The failure that makes its event a burst (the first one
// coalesced into it) starts a burst check of db, in the background (see
// burst.go): the call returns its error at once, as it would without.
func (c *Client) afterFailure(db *database, start time.Time, cause error) *route {
	t := db.det.failure(start, time.Now(), !failure.ConnectionLost(cause))
	why, trip := c.rule.trips(t.inARow, t.failed, t.calls)
	if !trip && t.confirms {
		why, trip = "calls failed together, and one started after them failed too (a timeout or a failure to connect), with no answer in between", true
	}
	if trip {
		c.mu.Lock()
		if !db.removed { // the breaker trips only when closed (transition)
			c.fireLocked(db, evTripped, time.Now(), why, cause)
		}
		c.mu.Unlock()
		return c.route.Load()
	}
	if t.burst && db.brk.get() == Closed {
		c.startBurstCheck(db)
	}
	if db.brk.get() != Closed {
		// Another call opened the breaker: the switch it makes happens
		// under the lock, so the route read under it is the switched one.
		c.mu.Lock()
		r := c.route.Load()
		c.mu.Unlock()
		return r
	}
	return c.route.Load()
}
