package cluster

import (
	"context"
	"fmt"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
)

// SCAN, SSCAN, HSCAN and ZSCAN iterate with a cursor that only the node
// that issued it can continue: another node's table (even a replica
// promoted with the same data) is laid out differently, so continuing
// there skips and repeats elements. The client tags each cursor it hands
// out with the number of the node that issued it (in bits no server
// cursor uses; see internal/routing) and continues a tagged cursor only on
// that node, and only while it still serves what the iteration covers:
//
//   - SSCAN, HSCAN, ZSCAN: the master of the key's slot. When a failover or
//     a migration has moved the slot, the call fails with a *CursorError
//     (nothing sent): start again from cursor 0.
//   - SCAN (no key): the whole cluster, one master after another in
//     address order. When a master's iteration ends, the cursor returned
//     points at the start of the next master's, so go-redis's ScanIterator
//     (or any loop until cursor 0) covers every master, unlike go-redis's
//     ClusterClient, which scans one node. A cursor whose master failed
//     over or left fails with a *CursorError: start again. Keys that move
//     between masters while the iteration runs (a slot migration) may be
//     missed or returned twice, as SCAN itself allows for keys changed
//     during it. ForEachMaster with each node's own SCAN is the other way.
//
// A cursor the client did not hand out (untagged) runs on the slot's
// master, for SCAN on the first master.

// ErrCursorLost matches a *CursorError.
var ErrCursorLost error = routing.NewTransient("cluster: the node that issued the SCAN cursor no longer serves the iteration; restart it from cursor 0", 0, false)

// CursorError reports a SCAN-family call whose cursor cannot be
// continued: a cursor is valid only on the node that issued it (Node), and
// that node no longer serves the iteration (Reason). Nothing was sent, or
// the page failed there (Cause). Restart the iteration from cursor 0. It
// matches ErrCursorLost.
type CursorError struct {
	Node   string
	Reason string
	Cause  error
}

func (e *CursorError) Error() string {
	msg := fmt.Sprintf("cluster: the SCAN cursor came from %s, which %s; a cursor is valid only on the node that issued it: restart the iteration from cursor 0",
		e.Node, e.Reason)
	if e.Cause != nil {
		msg += "; cause: " + failure.BriefErr(e.Cause)
	}
	return msg
}

// Is makes errors.Is(err, ErrCursorLost) true.
func (e *CursorError) Is(target error) bool { return target == ErrCursorLost }

// Unwrap returns the cause.
func (e *CursorError) Unwrap() error { return e.Cause }

// scanPage is one SCAN-family command's page: the node it must run on and
// the cursor as that node issued it.
type scanPage struct {
	sc      routing.Scan
	keyless bool   // SCAN: the iteration covers every master
	cursor  uint64 // as the caller sent it
	n       *node
	nodeCur uint64
}

// target finds where a page runs on snap: the node its cursor names, or
// for a new iteration (cursor 0, or one the client never handed out) the
// slot's master (SCAN: the first master).
func (c *Client) scanTarget(snap *snapshot, sc routing.Scan) (scanPage, error) {
	p := scanPage{sc: sc, keyless: isScan(sc.Cmd())}
	slot := c.slotOf(sc.Cmd())
	cursor, ok := sc.Cursor()
	p.cursor, p.nodeCur = cursor, cursor
	tag, rest := routing.UntagCursor(cursor, routing.NodeTagShift, routing.NodeTagBits)
	if ok && cursor != 0 && tag == 0 {
		if id, known := c.cursors.Lookup(cursor); known {
			tag, rest = id, cursor
		}
	}
	if !ok || tag == 0 {
		if p.n = c.iterationStart(snap, p.keyless, slot); p.n == nil {
			return p, &NoMasterError{Slot: slot}
		}
		return p, nil
	}
	n := c.nodes.byNumber(tag)
	if n == nil {
		return p, &CursorError{Node: fmt.Sprintf("node #%d", tag), Reason: "this client never routed to"}
	}
	switch {
	case p.keyless && !slices.ContainsFunc(snap.masters, func(s *shard) bool { return s.master == n }):
		return p, &CursorError{Node: n.addr, Reason: "is no longer a master (failed over, or left the cluster)"}
	case !p.keyless && snap.master(slot) != n:
		return p, &CursorError{Node: n.addr, Reason: fmt.Sprintf("no longer serves the key's slot %d (failed over, or the slot migrated)", slot)}
	}
	p.n, p.nodeCur = n, rest
	return p, nil
}

func isScan(cmd redis.Cmder) bool {
	name, _ := cmd.Args()[0].(string)
	return len(name) == 4 && (name[0]|0x20) == 's' && (name[1]|0x20) == 'c'
}

// iterationStart is the node a new iteration starts on.
func (c *Client) iterationStart(snap *snapshot, keyless bool, slot int) *node {
	if keyless {
		return snap.master(-1) // the first master in address order
	}
	return snap.master(slot)
}

// scanDone puts the caller's cursor back in the page's command (it was
// sent with the node's own) and, after a reply, tags the reply's cursor:
// with the node's number, or for a SCAN whose master is done, the start of
// the next master's iteration.
func (c *Client) scanDone(snap *snapshot, p scanPage) {
	p.sc.SetCursor(p.cursor)
	if p.sc.Cmd().Err() != nil {
		return
	}
	r, ok := p.sc.ReplyCursor()
	if !ok {
		return
	}
	if r == 0 {
		if !p.keyless {
			return
		}
		// The next master in address order, numbered in the tag with a
		// node cursor of 0: its iteration's start.
		i := slices.IndexFunc(snap.masters, func(s *shard) bool { return s.master.addr > p.n.addr })
		if i >= 0 {
			p.sc.SetReplyCursor(snap.masters[i].master.id << routing.NodeTagShift)
		}
		return
	}
	if t, ok := routing.TagCursor(r, routing.NodeTagShift, routing.NodeTagBits, p.n.id); ok {
		p.sc.SetReplyCursor(t)
	} else {
		c.cursors.Remember(r, p.n.id) // a server cursor in the tag's bits
	}
}

// scan runs one SCAN-family command on the node its cursor pins, with the
// rules of the other commands where they keep the iteration valid: a
// refusal that proves it did not run, and a page without an answer (once),
// are run again on the same node while it still serves the iteration; a
// redirect is followed only by a new iteration (cursor 0).
func (c *Client) scan(ctx context.Context, sc routing.Scan) error {
	cmd := sc.Cmd()
	a := c.newAttempt(c.slotOf(cmd), false)
	err := c.scanAttempts(ctx, sc, a)
	return c.seal(cmd, nil, err, a.last, a.slot, false, nil)
}

// scanAttempts is scan's loop: each send, and the judgement of its
// failure.
func (c *Client) scanAttempts(ctx context.Context, sc routing.Scan, a *attempt) error {
	cmd := sc.Cmd()
	for {
		snap, err := c.topo.ready(ctx)
		if err != nil {
			cmd.SetErr(err)
			return err
		}
		p, err := c.scanTarget(snap, sc)
		if err != nil {
			cmd.SetErr(err)
			return err
		}
		if a.direct != nil && p.cursor == 0 {
			p.n = a.direct
		}
		sc.SetCursor(p.nodeCur)
		a.last = p.n
		err = c.send(ctx, p.n, cmd, a.asking, false)
		a.direct, a.asking = nil, false
		c.scanDone(snap, p)
		if err == nil || !failure.Signal(err) {
			return err
		}
		if failure.CallerEnded(ctx) {
			return c.nodeError(p.n, a.slot, false, cmd, err)
		}
		if _, redirect := failure.ParseRedirect(err); redirect && p.cursor != 0 {
			cerr := &CursorError{Node: p.n.addr, Reason: "answered with a redirect: the slot moved", Cause: err}
			cmd.SetErr(cerr)
			c.topo.kick(RefreshMoved)
			return cerr
		}
		a.failures++
		again, err := c.judge(ctx, snap, p.n, cmd, err, a)
		if !again {
			return err
		}
		cmd.SetErr(nil)
	}
}

// txScanPages prepares the SCAN-family commands of a transaction that
// runs on n: their cursors must come from n (or start an iteration, which
// then iterates n alone: a transaction runs on one node).
func (c *Client) txScanPages(snap *snapshot, n *node, cmds []redis.Cmder) ([]scanPage, error) {
	var pages []scanPage
	for _, q := range cmds {
		sc, ok := routing.FindScan(q)
		if !ok {
			continue
		}
		p, err := c.scanTarget(snap, sc)
		if err != nil {
			return nil, err
		}
		if p.cursor != 0 && p.n != n {
			return nil, &CursorError{Node: p.n.addr, Reason: "is not the node of the transaction it was sent in (" + n.addr + ")"}
		}
		p.n, p.keyless = n, false
		sc.SetCursor(p.nodeCur)
		pages = append(pages, p)
	}
	return pages, nil
}
