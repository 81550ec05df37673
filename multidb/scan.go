package multidb

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
)

// A SCAN, SSCAN, HSCAN or ZSCAN cursor is valid only on the database that
// issued it: another database's tables are laid out differently, so an
// iteration continued there after a switch skips and repeats elements. The
// client tags each cursor it hands out with its database (in bits no
// server cursor uses, and below the bits a Sentinel or Cluster client
// inside uses for its nodes: see internal/routing) and continues a tagged
// cursor only on that database, while it is active. After a switch, the
// call fails with a *CursorError: the iteration must start again from 0. A
// cursor the client did not hand out runs on the active database.

// ErrCursorLost matches a *CursorError.
var ErrCursorLost error = routing.NewTransient("multidb: the database that issued the SCAN cursor is no longer active; restart the iteration from cursor 0", 0, false)

// CursorError reports a SCAN-family call whose cursor cannot be continued:
// it came from Database, which is no longer the active one. Nothing was
// sent unless Cause says the call failed there. Restart the iteration from
// cursor 0. It matches ErrCursorLost.
type CursorError struct {
	// Database is the database that issued the cursor.
	Database string
	Reason   string
	// Cause is the failure that ended the iteration, when the call failed
	// on Database.
	Cause error
}

func (e *CursorError) Error() string {
	msg := fmt.Sprintf("multidb: the SCAN cursor came from database %q, which %s; a cursor is valid only on the database that issued it: restart the iteration from cursor 0",
		e.Database, e.Reason)
	if e.Cause != nil {
		msg += "; cause: " + failure.BriefErr(e.Cause)
	}
	return msg
}

// Is makes errors.Is(err, ErrCursorLost) true.
func (e *CursorError) Is(target error) bool { return target == ErrCursorLost }

// Unwrap returns the cause.
func (e *CursorError) Unwrap() error { return e.Cause }

func (c *Client) cursorLost(cmd redis.Cmder, cmds []redis.Cmder, db *database, reason string, cause error) error {
	err := &CursorError{Database: db.name, Reason: reason, Cause: cause}
	routing.SetErrs(cmd, cmds, err)
	return err
}

// findScans returns the SCAN-family commands of the work, or nil (no
// allocation for a command that is none).
func findScans(cmd redis.Cmder, cmds []redis.Cmder) []routing.Scan {
	if cmd != nil {
		if sc, ok := routing.FindScan(cmd); ok {
			return []routing.Scan{sc}
		}
		return nil
	}
	var scans []routing.Scan
	for _, q := range cmds {
		if sc, ok := routing.FindScan(q); ok {
			scans = append(scans, sc)
		}
	}
	return scans
}

// tagOf is a database's cursor tag: its order of addition, from 1.
func tagOf(db *database) uint64 { return uint64(db.index) + 1 } //nolint:gosec // index counts additions from 0

// runScans runs work holding SCAN-family commands: where the active
// database is when every cursor is 0, else only on the database the
// cursors came from, and tags the reply cursors with the database that
// served them.
func (c *Client) runScans(ctx context.Context, cmd redis.Cmder, cmds []redis.Cmder, scans []routing.Scan) error {
	var pinned *database
	cursors := make([]uint64, len(scans))
	for i, sc := range scans {
		cursor, _ := sc.Cursor()
		cursors[i] = cursor
		if cursor == 0 {
			continue
		}
		tag, _ := routing.UntagCursor(cursor, routing.DatabaseTagShift, routing.DatabaseTagBits)
		if tag == 0 {
			if t, ok := c.cursors.Lookup(cursor); ok {
				tag = t
			}
		}
		if tag == 0 {
			continue // not handed out by this client: the active database
		}
		db := c.databaseByTag(tag)
		if db == nil {
			return c.cursorLost(cmd, cmds, &database{name: fmt.Sprintf("#%d", tag)}, "was removed, or never was this client's", nil)
		}
		if pinned != nil && pinned != db {
			return c.cursorLost(cmd, cmds, db, "is not the database another cursor of the same pipeline came from ("+pinned.name+")", nil)
		}
		pinned = db
	}
	for i, sc := range scans {
		_, dbCursor := routing.UntagCursor(cursors[i], routing.DatabaseTagShift, routing.DatabaseTagBits)
		if dbCursor != cursors[i] {
			sc.SetCursor(dbCursor)
		}
	}
	defer func() {
		for i, sc := range scans {
			sc.SetCursor(cursors[i])
		}
	}()
	served, err := c.runOn(ctx, cmd, cmds, pinned)
	if served == nil {
		return err
	}
	for _, sc := range scans {
		if sc.Cmd().Err() != nil {
			continue
		}
		out, ok := sc.ReplyCursor()
		if !ok || out == 0 {
			continue
		}
		if tagged, ok := routing.TagCursor(out, routing.DatabaseTagShift, routing.DatabaseTagBits, tagOf(served)); ok {
			sc.SetReplyCursor(tagged)
		} else {
			c.cursors.Remember(out, tagOf(served))
		}
	}
	return err
}

// databaseByTag returns the database (not removed) whose tag is tag.
func (c *Client) databaseByTag(tag uint64) *database {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, db := range c.dbs {
		if tagOf(db) == tag && !db.removed {
			return db
		}
	}
	return nil
}
