package multidb

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"
)

// activateLocked routes traffic to db, the first active database, when
// NewClient starts. It is not a switch: no traffic moved, nothing failed,
// so it is not counted in Stats.Switches, logs at Info, and is reported as
// EventActivated rather than EventActiveChanged (whose automatic kind
// means the active database failed; an Observer counting switches, as
// rediskitotel's does, must not see one per start). db is never nil here:
// every breaker starts closed.
func (c *Client) activateLocked(db *database) {
	old := c.route.Load()
	c.route.Store(&route{active: db, gen: old.gen + 1})
	c.log.Info("multidb: first active database", "database", db.name)
	c.events.emit(Event{Kind: EventActivated, New: db.name})
	c.pubsub.moveTo(db)
}

// startHealthLocked starts db's health loop (unless the client is closing).
func (c *Client) startHealthLocked(db *database) {
	if c.closed {
		close(db.done)
		return
	}
	c.wg.Add(1)
	go c.healthLoop(db)
}

// healthLoop checks db every HealthCheckInterval, and at once when its
// breaker's grace period ends (the check then decides HALF_OPEN), until db
// is removed or the client closed.
func (c *Client) healthLoop(db *database) {
	defer c.wg.Done()
	defer close(db.done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	next := time.Now() // the first check runs at once
	for {
		now := time.Now()
		due := next
		c.mu.Lock()
		if db.brk.get() == Open && db.brk.graceEnd().Before(due) {
			due = db.brk.graceEnd()
		}
		c.mu.Unlock()
		if wait := due.Sub(now); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-db.wake:
			case <-db.ctx.Done():
				return
			}
			continue
		}
		c.mu.Lock()
		c.fireLocked(db, evGraceTick, now, "grace period over", nil)
		c.mu.Unlock()
		start := time.Now()
		res, err := c.check(db.ctx, db)
		if err != nil {
			return // removed or closed
		}
		c.applyCheck(db, start, res)
		next = start.Add(c.cfg.HealthCheckInterval)
	}
}

// check runs one health check on db with the client's settings.
func (c *Client) check(ctx context.Context, db *database) (checkResult, error) {
	return check(ctx, db.checker, db.probe, c.cfg.HealthPolicy, c.cfg.Probes, c.cfg.ProbeDelay, c.cfg.ProbeTimeout)
}

// applyCheck records a health check that started at start and applies its
// verdict to db's breaker.
func (c *Client) applyCheck(db *database, start time.Time, res checkResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if db.removed || c.closed {
		return
	}
	c.applyCheckLocked(db, start, res, "health check failed")
}

// applyCheckLocked is applyCheck with c.mu held; failed says what opens
// the breaker when the check failed.
func (c *Client) applyCheckLocked(db *database, start time.Time, res checkResult, failed string) {
	now := time.Now()
	db.checked = true
	db.healthy = res.healthy
	db.lastCheck = start
	db.lastLatency = res.latency
	if res.healthy {
		// The database answered: a burst before that was a blip.
		db.det.answer(res.answered)
		db.checksPassed++
		// The dwell counts from the first check of an unbroken run of
		// passes, unless traffic tripped the breaker while this check ran:
		// from that check's answer, not its start, since a probe may have
		// waited (its connection accepted by a proxy, or queued by a
		// restarting server) until the database could answer.
		if db.healthySince.IsZero() && db.brk.openedAt.Before(start) {
			db.healthySince = res.answered
			if db.healthySince.IsZero() {
				db.healthySince = start
			}
		}
	} else {
		db.checksFailed++
		db.healthySince = time.Time{}
		if res.err != nil {
			db.lastErr = res.err.Error()
		}
	}
	// The breaker's state machine decides what the verdict changes.
	if res.healthy {
		c.fireLocked(db, evCheckPassed, now, "health check passed after the grace period", nil)
	} else {
		c.fireLocked(db, evCheckFailed, now, fmt.Sprintf("%s (%d of %d probes passed, %s)", failed, res.passed, res.probes, c.cfg.HealthPolicy), res.err)
	}
	if c.route.Load().active == nil {
		c.refreshDownLocked()
	}
}

// manage runs failback checks, and the failover attempts while no database
// is healthy.
func (c *Client) manage() {
	defer c.wg.Done()
	var failback <-chan time.Time
	if c.cfg.FailbackInterval > 0 {
		t := time.NewTicker(c.cfg.FailbackInterval)
		defer t.Stop()
		failback = t.C
	}
	attempt := time.NewTimer(time.Hour)
	attempt.Stop()
	defer attempt.Stop()
	for {
		select {
		case <-c.ctx.Done():
			return
		case <-failback:
			c.failback()
		case <-c.kick:
			attempt.Reset(c.cfg.FailoverDelay)
		case <-attempt.C:
			if c.attempt() {
				attempt.Reset(c.cfg.FailoverDelay)
			}
		}
	}
}

// attempt is one look for a healthy database while none is active. It
// reports whether another look is due.
func (c *Client) attempt() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.route.Load().active != nil || c.exhausted {
		return false
	}
	c.attempts++
	if db := c.pickLocked(); db != nil {
		c.setActiveLocked(db, ReasonAutomatic, false, nil)
		return false
	}
	if c.attempts >= c.cfg.FailoverAttempts {
		c.exhausted = true
		c.refreshDownLocked()
		c.log.Error("multidb: failover attempts used up; calls fail with ErrNoHealthyDatabase until a database recovers",
			"attempts", c.attempts, "since", c.downSince)
		c.events.emit(Event{Kind: EventNoHealthyDatabase, Detail: fmt.Sprintf("%d attempts, %v apart", c.attempts, c.cfg.FailoverDelay)})
		return false
	}
	c.refreshDownLocked()
	c.log.Warn("multidb: still no healthy database", "attempt", c.attempts, "of", c.cfg.FailoverAttempts)
	return true
}

// failback moves traffic to the highest-weight database ranked above the
// active one whose breaker is closed and which has passed every health
// check for FailbackDwell, unless SetActive pinned the active database.
func (c *Client) failback() {
	c.mu.Lock()
	defer c.mu.Unlock()
	r := c.route.Load()
	if r.active == nil || r.pinned || r.closed {
		return
	}
	now := time.Now()
	for _, db := range c.dbs {
		if db == r.active {
			return
		}
		if db.brk.get() == Closed && db.healthy && !db.healthySince.IsZero() && now.Sub(db.healthySince) >= c.cfg.FailbackDwell {
			c.setActiveLocked(db, ReasonFailback, false, nil)
			return
		}
	}
}

// SetActive makes the named database active, after a health check (with
// the client's probes and policy, so it takes about (Probes-1) ×
// ProbeDelay). An unhealthy database is refused with an *UnhealthyError
// and nothing changes. A healthy one gets all new calls at once (calls in
// flight finish on the old database); its breaker is closed if it was not.
//
// The choice is pinned: failback does not override it. The pin ends with
// a failover away from it (if it fails) and with UpdateWeight.
func (c *Client) SetActive(ctx context.Context, name string) error {
	c.mu.Lock()
	db := c.findLocked(name)
	closed := c.closed
	c.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case db == nil:
		return fmt.Errorf("%w: %q", ErrUnknownDatabase, name)
	}
	start := time.Now()
	res, err := c.check(ctx, db)
	if err != nil {
		return fmt.Errorf("multidb: SetActive(%q): health check: %w", name, err)
	}
	c.applyCheck(db, start, res)
	if !res.healthy {
		return &UnhealthyError{Database: name, Policy: c.cfg.HealthPolicy, Passed: res.passed, Probes: res.probes, Err: res.err}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.closed:
		return ErrClosed
	case db.removed:
		return fmt.Errorf("%w: %q (removed meanwhile)", ErrUnknownDatabase, name)
	}
	c.fireLocked(db, evForcedClose, time.Now(), "SetActive: health check passed", nil)
	c.setActiveLocked(db, ReasonManual, true, nil)
	return nil
}

// UpdateWeight changes the named database's weight, and the weights decide
// again (a SetActive pin ends): when the highest-weight database is not the
// active one, traffic moves to it at once (ReasonManual) if it is healthy:
// its breaker is closed and its last health check passed, or, if not (an
// Open breaker within its grace period after a restart, say), it passes a
// health check made now, as by SetActive. If it is not healthy, the weight
// still changes, traffic stays where it is, and the error is an
// *UnhealthyError; the failback rules apply to it later.
func (c *Client) UpdateWeight(ctx context.Context, name string, weight float64) error {
	if weight < 0 || math.IsNaN(weight) || math.IsInf(weight, 0) {
		return databaseError(name, "Weight", "must be a finite number, not negative")
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	db := c.findLocked(name)
	if db == nil {
		c.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownDatabase, name)
	}
	db.weight = weight
	c.sortLocked()
	c.log.Info("multidb: weight changed", "database", name, "weight", weight)
	c.events.emit(Event{Kind: EventWeightChanged, Database: name, Weight: weight})
	r := c.route.Load()
	if r.pinned {
		c.route.Store(&route{active: r.active, gen: r.gen + 1})
	}
	top, active := c.dbs[0], r.active
	if top == active || active == nil {
		c.mu.Unlock()
		return nil
	}
	if top.brk.get() == Closed && top.checked && top.healthy {
		c.setActiveLocked(top, ReasonManual, false, nil)
		c.mu.Unlock()
		return nil
	}
	c.mu.Unlock()

	start := time.Now()
	res, err := c.check(ctx, top)
	if err != nil {
		return fmt.Errorf("multidb: UpdateWeight(%q): health check of %q: %w", name, top.name, err)
	}
	c.applyCheck(top, start, res)
	if !res.healthy {
		return &UnhealthyError{Database: top.name, Policy: c.cfg.HealthPolicy, Passed: res.passed, Probes: res.probes, Err: res.err}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || top.removed || c.dbs[0] != top || c.route.Load().active == nil {
		return nil // the world moved on while checking; the usual rules apply
	}
	c.fireLocked(top, evForcedClose, time.Now(), "UpdateWeight: health check passed", nil)
	c.setActiveLocked(top, ReasonManual, false, nil)
	return nil
}

// AddDatabase adds a database at run time. Its breaker starts closed and
// its health checks start at once; it becomes active only by the usual
// rules: failback (once it has passed its checks for FailbackDwell, if it
// ranks above the active database), a failover, SetActive, or at once if
// no database is active.
func (c *Client) AddDatabase(d Database) error {
	if err := d.validate(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return ErrClosed
	}
	if c.findLocked(d.Name) != nil {
		return databaseError(d.Name, "Name", "is used twice")
	}
	db := c.newDatabase(d)
	c.dbs = append(c.dbs, db)
	c.sortLocked()
	c.log.Info("multidb: database added", "database", db.name, "weight", db.weight)
	c.events.emit(Event{Kind: EventDatabaseAdded, Database: db.name, Weight: db.weight})
	c.startHealthLocked(db)
	if c.route.Load().active == nil {
		c.setActiveLocked(c.pickLocked(), ReasonAutomatic, false, nil)
	}
	return nil
}

// RemoveDatabase removes a database at run time. If it was active, traffic
// moves to the next by the failover strategy first. Its health checks
// stop; a client multidb built for it (Database.Options) is closed, and
// calls still running on it fail over by the package's rule: reads are
// retried on the new active database, and so are writes that provably did
// not run (a call refused by the closed client was never sent); writes
// that may have executed get a *DatabaseChangedError. The last database
// cannot be removed.
func (c *Client) RemoveDatabase(name string) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return ErrClosed
	}
	db := c.findLocked(name)
	switch {
	case db == nil:
		c.mu.Unlock()
		return fmt.Errorf("%w: %q", ErrUnknownDatabase, name)
	case len(c.dbs) == 1:
		c.mu.Unlock()
		return &ConfigError{Package: "multidb", Field: fmt.Sprintf("RemoveDatabase(%q)", name), Problem: "is refused: it is the last database, and a client needs one"}
	}
	c.dbs = slices.DeleteFunc(c.dbs, func(d *database) bool { return d == db })
	db.removed = true
	if c.route.Load().active == db {
		c.setActiveLocked(c.pickLocked(), ReasonManual, false, fmt.Errorf("database %q removed", name))
	}
	c.log.Info("multidb: database removed", "database", name)
	c.events.emit(Event{Kind: EventDatabaseRemoved, Database: name})
	c.mu.Unlock()

	db.cancel()
	<-db.done
	db.bursts.Wait()
	return db.close()
}
