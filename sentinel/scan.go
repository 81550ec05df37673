package sentinel

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
)

// SCAN, SSCAN, HSCAN and ZSCAN iterate with a cursor that only the node
// that issued it can continue: continued on another node (as routing each
// page on its own did, with two replicas sharing the reads), an iteration
// skips and repeats elements (150-155 of 200 keys returned). The client
// tags each cursor it hands out with the node that issued it (in bits no
// server cursor uses; see internal/routing) and continues a tagged cursor
// only on that node, whatever the read preference or the election says by
// then. When that node is no longer one the client routes to (the master
// it came from was replaced, or the replica left the healthy set), the
// call fails with a *CursorError: the iteration must start again from 0.
// A cursor the client did not hand out (untagged) runs on the master.

// ErrCursorLost matches a *CursorError.
var ErrCursorLost error = routing.NewTransient("sentinel: the node that issued the SCAN cursor is gone; restart the iteration from cursor 0", 0, false)

// CursorError reports a SCAN-family call (SCAN, SSCAN, HSCAN, ZSCAN) whose
// cursor cannot be continued: a cursor is valid only on the node that
// issued it, and that node (Node) is no longer one the client routes to.
// Nothing was sent. Restart the iteration from cursor 0. It matches
// ErrCursorLost.
type CursorError struct {
	MasterName string
	// Node is the node that issued the cursor.
	Node string
	// Reason says why it cannot continue there.
	Reason string
	// Cause is the failure that ended the iteration, when it failed on
	// the node.
	Cause error
}

func (e *CursorError) Error() string {
	msg := fmt.Sprintf("sentinel: the SCAN cursor of %q came from %s, which %s; a cursor is valid only on the node that issued it: restart the iteration from cursor 0",
		e.MasterName, e.Node, e.Reason)
	if e.Cause != nil {
		msg += "; cause: " + failure.BriefErr(e.Cause)
	}
	return msg
}

// Is makes errors.Is(err, ErrCursorLost) true.
func (e *CursorError) Is(target error) bool { return target == ErrCursorLost }

// Unwrap returns the cause.
func (e *CursorError) Unwrap() error { return e.Cause }

// addrOf returns the address numbered id (see nodeCounts.id).
func (s *nodeSet) addrOf(id uint64) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for addr, c := range s.counts {
		if c.id == id {
			return addr, true
		}
	}
	return "", false
}

// idOf returns the number of addr.
func (s *nodeSet) idOf(addr string) uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.counts[addr]; c != nil {
		return c.id
	}
	return 0
}

// scanNode returns the node of snap whose address is addr: the master, or
// a replica of the healthy set; nil when it is neither, with why.
func scanNode(snap *snapshot, addr string) (*node, string) {
	if snap.masterAddr() == addr {
		return snap.master, ""
	}
	if n := snap.replica(addr); n != nil {
		return n, ""
	}
	return nil, "is neither the master nor a healthy replica now (replaced, or no longer healthy)"
}

// scan runs a SCAN-family command: a first page (cursor 0) where reads go,
// a later one on the node that issued its cursor.
func (c *Client) scan(ctx context.Context, sc routing.Scan) error {
	cmd := sc.Cmd()
	cursor, ok := sc.Cursor()
	if !ok || cursor == 0 {
		n, err := c.readOn(ctx, cmd, nil)
		if err == nil && n != nil {
			c.tagReply(sc, n.addr)
		}
		return err
	}
	snap, err := c.current(ctx)
	if err != nil {
		return err
	}
	n, nodeCursor, cerr := c.cursorNode(snap, cursor)
	if cerr != nil {
		cmd.SetErr(cerr)
		return cerr
	}
	sc.SetCursor(nodeCursor)
	defer sc.SetCursor(cursor) // the arguments as the caller made them
	n.counts.reads.Add(1)
	err = c.runOn(ctx, n, cmd, nil)
	if err != nil && c.failureSignal(ctx, cmd, nil, err) && !failure.Timeout(err) {
		// The page may run again, on that node only, if it still routes
		// there once the topology is checked.
		next, rerr := c.resolveAfter(ctx, snap)
		if rerr == nil {
			if n2, why := scanNode(next, n.addr); n2 != nil {
				c.stats.readsRetried.Add(1)
				c.emit(Event{Kind: EventReadRetried, Master: n.addr, Err: err})
				cmd.SetErr(nil)
				n2.counts.reads.Add(1)
				err = c.runOn(ctx, n2, cmd, nil)
			} else {
				err = &CursorError{MasterName: c.opts.MasterName, Node: n.addr, Reason: why, Cause: err}
				cmd.SetErr(err)
				return err
			}
		}
	}
	if err != nil {
		return c.nodeError(snap, n, false, cmd, nil, err)
	}
	c.tagReply(sc, n.addr)
	return nil
}

// cursorNode is the node a non-zero cursor the client handed out must
// continue on, and the cursor as that node issued it: the node in its tag,
// or the one remembered for an untagged cursor, or the master for a cursor
// the client never saw (the caller's own). A *CursorError when that node
// may no longer serve it.
func (c *Client) cursorNode(snap *snapshot, cursor uint64) (*node, uint64, *CursorError) {
	tag, nodeCursor := routing.UntagCursor(cursor, routing.NodeTagShift, routing.NodeTagBits)
	if tag == 0 {
		if id, ok := c.cursors.Lookup(cursor); ok {
			tag, nodeCursor = id, cursor
		}
	}
	if tag == 0 {
		return snap.master, nodeCursor, nil
	}
	addr, ok := c.topo.nodes.addrOf(tag)
	if !ok {
		return nil, 0, &CursorError{MasterName: c.opts.MasterName, Node: fmt.Sprintf("node #%d", tag), Reason: "this client never routed to"}
	}
	n, why := scanNode(snap, addr)
	if n == nil {
		return nil, 0, &CursorError{MasterName: c.opts.MasterName, Node: addr, Reason: why}
	}
	return n, nodeCursor, nil
}

// pinPipeline finds the one node a pipeline's non-zero cursors came from
// (nil: every cursor is 0, so the pipeline runs where it would without
// them), and returns the cursors as the caller sent them. Cursors from two
// nodes, or a replica's cursor in a pipeline that must run on the master,
// are a *CursorError.
func (c *Client) pinPipeline(snap *snapshot, scans []routing.Scan, writes bool) (*node, []uint64, *CursorError) {
	var pinned *node
	cursors := make([]uint64, len(scans))
	for i, sc := range scans {
		cursor, _ := sc.Cursor()
		cursors[i] = cursor
		if cursor == 0 {
			continue
		}
		n, _, cerr := c.cursorNode(snap, cursor)
		if cerr != nil {
			return nil, nil, cerr
		}
		if pinned != nil && pinned != n {
			return nil, nil, &CursorError{MasterName: c.opts.MasterName, Node: n.addr,
				Reason: "is not the node another cursor of the same pipeline came from (" + pinned.addr + "): a pipeline runs on one node"}
		}
		pinned = n
	}
	if pinned != nil && writes && pinned != snap.master {
		return nil, nil, &CursorError{MasterName: c.opts.MasterName, Node: pinned.addr,
			Reason: "is a replica, and this pipeline writes (or is a transaction), so it runs on the master"}
	}
	return pinned, cursors, nil
}

// runScanPipeline runs the pipeline: like any other when no cursor pinned
// it, else once on the pinned node (a failure is returned as it is: the
// iteration's node is what matters, not where reads go now). It returns
// the node that served it.
func (c *Client) runScanPipeline(ctx context.Context, snap *snapshot, pinned *node, writes bool, cmds []redis.Cmder) (*node, error) {
	switch {
	case pinned == nil && writes:
		err := c.write(ctx, nil, cmds)
		return c.topo.load().master, err
	case pinned == nil:
		return c.readOn(ctx, nil, cmds)
	}
	if writes {
		pinned.counts.writes.Add(1)
	} else {
		pinned.counts.reads.Add(1)
	}
	err := c.runOn(ctx, pinned, nil, cmds)
	return pinned, c.nodeError(snap, pinned, writes, nil, cmds, err)
}

// tagReply tags sc's reply cursor with the node at addr.
func (c *Client) tagReply(sc routing.Scan, addr string) {
	out, ok := sc.ReplyCursor()
	if !ok || out == 0 {
		return
	}
	id := c.topo.nodes.idOf(addr)
	if tagged, ok := routing.TagCursor(out, routing.NodeTagShift, routing.NodeTagBits, id); ok {
		sc.SetReplyCursor(tagged)
		return
	}
	c.cursors.Remember(out, id)
}

// findScans returns the SCAN-family commands of a pipeline, or nil (no
// allocation when there are none).
func findScans(cmds []redis.Cmder) []routing.Scan {
	var scans []routing.Scan
	for _, q := range cmds {
		if sc, ok := routing.FindScan(q); ok {
			scans = append(scans, sc)
		}
	}
	return scans
}

// scanPipeline runs a pipeline or transaction holding SCAN-family commands:
// where it would run when every cursor is 0, else on the one node its
// cursors came from (all of them must come from the same node; a
// transaction or a pipeline that writes, from the master), and tags the
// reply cursors with the node that served it.
func (c *Client) scanPipeline(ctx context.Context, cmds []redis.Cmder, scans []routing.Scan) error {
	snap, err := c.current(ctx)
	if err != nil {
		return err
	}
	writes := routing.IsTx(cmds) || !c.classifier.ReadOnlyPipeline(cmds)
	pinned, cursors, cerr := c.pinPipeline(snap, scans, writes)
	if cerr != nil {
		routing.SetErrs(nil, cmds, cerr)
		return cerr
	}
	for i, sc := range scans {
		_, nodeCursor := routing.UntagCursor(cursors[i], routing.NodeTagShift, routing.NodeTagBits)
		sc.SetCursor(nodeCursor)
	}
	defer func() {
		for i, sc := range scans {
			sc.SetCursor(cursors[i])
		}
	}()
	served, err := c.runScanPipeline(ctx, snap, pinned, writes, cmds)
	if served != nil {
		for _, sc := range scans {
			if sc.Cmd().Err() == nil {
				c.tagReply(sc, served.addr)
			}
		}
	}
	return err
}
