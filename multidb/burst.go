package multidb

import (
	"time"
)

// A burst check is a health check of a database (its probes, the policy,
// ProbeTimeout: Client.check, as on schedule) run at once, out of
// schedule, when one of its failure events fails a second call (see asks
// and burstVerdict for the rules). It runs on a goroutine of the client's,
// never on the failing call's: that call returns its error as it would
// without. At most one runs per database; the bursts seen while one runs
// are checked by one more run when it ends, so a burst is never left
// unchecked, nor checked by a check that began before it. Close and
// RemoveDatabase stop it (its context is the database's) and wait for it,
// as for the health loop, so it is bounded by one probe's timeout (with a
// go-redis client, the earlier of ProbeTimeout and the client's
// ReadTimeout: go-redis does not watch a context while it reads).

// startBurstCheck starts a burst check of db, unless one is running (it
// runs again for this burst: see burstLoop), the client is closing or db
// was removed. It is called on the failing call's goroutine and does not
// wait for the check: a compare-and-swap, and the lock for as long as it
// takes to register the goroutine.
func (c *Client) startBurstCheck(db *database) {
	if !db.bursting.CompareAndSwap(false, true) {
		return
	}
	if !c.countBurstCheck(db) {
		return
	}
	c.wg.Add(1)
	db.bursts.Add(1)
	go c.burstLoop(db)
}

// countBurstCheck counts a burst check about to start, and reports whether
// it may (the client is open and db still one of its databases); if not,
// it clears db.bursting. The caller holds db.bursting. The goroutine is
// registered (c.wg, db.bursts) before the lock is released, so Close and
// RemoveDatabase, which set what is checked here under the lock before
// they wait, wait for it too.
func (c *Client) countBurstCheck(db *database) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || db.removed {
		db.bursting.Store(false)
		return false
	}
	db.burstChecks++
	return true
}

// burstLoop runs db's burst checks: one for the latest burst asked for,
// then one more as long as another burst was asked for while the last one
// ran and the breaker is still closed.
func (c *Client) burstLoop(db *database) {
	defer c.wg.Done()
	defer db.bursts.Done()
	for {
		event := db.det.asked.Load()
		c.log.Debug("multidb: calls failed together; checking the database at once", "database", db.name)
		start := time.Now()
		res, err := c.check(db.ctx, db)
		if err != nil { // removed or closed
			db.bursting.Store(false)
			return
		}
		c.applyBurst(db, event, start, res)
		// Another burst asked after this check began: it found the check
		// running (startBurstCheck), so it is checked now. Whoever sets
		// db.bursting first runs it: this loop, or a burst seen meanwhile.
		db.bursting.Store(false)
		if db.det.asked.Load() == event || db.brk.get() != Closed || !db.bursting.CompareAndSwap(false, true) {
			return
		}
		if !c.countBurstCheck(db) {
			return
		}
	}
}

// applyBurst applies the verdict of a burst check of db, started at start
// for the burst that began at event (a since value), by burstVerdict: a
// passed check counts as a passed health check; a failed one, when it
// trips, as a failed health check (the breaker opens and traffic moves).
func (c *Client) applyBurst(db *database, event int64, start time.Time, res checkResult) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if db.removed || c.closed {
		return
	}
	if res.healthy {
		db.burstPassed++
	} else {
		db.burstFailed++
	}
	switch o := burstVerdict(res.healthy, res.decisive, db.brk.get(), db.det.at(event), db.det.at(db.det.answered.Load())); o {
	case burstPassed:
		c.log.Info("multidb: calls failed together, but a health check run at once passed: no switch", "database", db.name)
		c.applyCheckLocked(db, start, res, "")
	case burstTripped:
		c.applyCheckLocked(db, start, res, "calls failed together, and a health check run at once failed too")
	case burstAnswered, burstInconclusive:
		c.log.Info("multidb: calls failed together and a health check run at once failed, but that does not show an outage: no switch",
			"database", db.name, "verdict", o.String(), "err", res.err)
	}
}
