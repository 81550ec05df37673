package sentinel

import (
	"context"
	"errors"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
)

// Blocking commands (BLPOP, BLMOVE, XREADGROUP BLOCK, ...; classify's
// Blocking) wait on the master. When the client moves to a new master, a
// call still waiting on the old one would wait there until Sentinel
// demotes it (which unblocks it: seconds later, 3.3-3.9 s in the lab) or
// forever: queue workers idle that long. So the client runs each blocking
// command on a connection whose CLIENT ID it knows, and when it switches
// masters it ends every call waiting on the old one with CLIENT UNBLOCK
// <id> ERROR, from another connection. The call then fails with UNBLOCKED,
// which proves it was not served (it popped nothing), and is sent again
// to the new master like any write refused before execution. A call
// served just before (its element on its way back) is not affected:
// CLIENT UNBLOCK only ends a call still waiting.

// blockingConn is a connection for blocking commands, with its CLIENT ID.
type blockingConn struct {
	conn *redis.Conn
	id   int64
	node *node
}

// blockingConns keeps, per node, the idle connections for blocking
// commands (at most maxIdleBlocking each, so a CLIENT ID is not asked for
// every call), and the ones in use.
type blockingConns struct {
	mu     sync.Mutex
	idle   map[*node][]*blockingConn
	inUse  map[*blockingConn]struct{}
	closed bool
}

const maxIdleBlocking = 8

func (b *blockingConns) get(ctx context.Context, n *node) (*blockingConn, error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	if list := b.idle[n]; len(list) > 0 {
		bc := list[len(list)-1]
		b.idle[n] = list[:len(list)-1]
		b.inUse[bc] = struct{}{}
		b.mu.Unlock()
		return bc, nil
	}
	b.mu.Unlock()
	conn := n.client.Conn()
	id, err := conn.ClientID(routing.Internal(ctx)).Result()
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	bc := &blockingConn{conn: conn, id: id, node: n}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		_ = conn.Close()
		return nil, ErrClosed
	}
	b.inUse[bc] = struct{}{}
	return bc, nil
}

// put returns bc after a call that ended with err: kept for the next one
// when the connection is sound (the call got a reply), closed otherwise.
func (b *blockingConns) put(bc *blockingConn, err error) {
	b.mu.Lock()
	delete(b.inUse, bc)
	keep := !b.closed && !bc.node.retired.Load() && (err == nil || failure.Reply(err)) && len(b.idle[bc.node]) < maxIdleBlocking
	if keep {
		b.idle[bc.node] = append(b.idle[bc.node], bc)
	}
	b.mu.Unlock()
	if !keep {
		_ = bc.conn.Close()
	}
}

// waitingOn returns the connections in use on n.
func (b *blockingConns) waitingOn(n *node) []*blockingConn {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []*blockingConn
	for bc := range b.inUse {
		if bc.node == n {
			out = append(out, bc)
		}
	}
	return out
}

// forget closes the idle connections of nodes not in keep.
func (b *blockingConns) forget(keep func(*node) bool) {
	b.mu.Lock()
	var gone []*blockingConn
	for n, list := range b.idle {
		if !keep(n) {
			gone = append(gone, list...)
			delete(b.idle, n)
		}
	}
	b.mu.Unlock()
	for _, bc := range gone {
		_ = bc.conn.Close()
	}
}

func (b *blockingConns) close() {
	b.mu.Lock()
	b.closed = true
	var all []*blockingConn
	for _, list := range b.idle {
		all = append(all, list...)
	}
	b.idle = nil
	b.mu.Unlock()
	for _, bc := range all {
		_ = bc.conn.Close()
	}
}

// errSwitchedBeforeSend ends a blocking call whose master was replaced
// before it was sent: it was not (a dial error, to the failure rules).
var errSwitchedBeforeSend = errors.New("the master changed before the blocking command was sent")

// runBlocking runs a blocking command on the snapshot's master, on a
// connection the client can unblock (see the top of this file), and with
// durable confirms it with WAIT on that connection.
func (c *Client) runBlocking(ctx context.Context, snap *snapshot, cmd redis.Cmder, durable bool) error {
	n := snap.master
	required := 0
	if durable {
		var err error
		if required, err = c.durablePrecheck(ctx, snap); err != nil {
			return err
		}
	}
	n.acquire()
	defer n.release()
	bc, err := c.blocking.get(ctx, n)
	if err != nil {
		return err
	}
	// Registered before this look at the topology: a switch installed
	// after it finds the call in waitingOn and unblocks it.
	if c.topo.load().master != n {
		c.blocking.put(bc, nil)
		return &failure.DialError{Addr: n.addr, Err: errSwitchedBeforeSend}
	}
	err = bc.conn.Process(ctx, cmd)
	if err != nil || !durable {
		c.blocking.put(bc, err)
		return err
	}
	confirm := c.opts.confirmCmds(ctx, required)
	_, werr := bc.conn.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, q := range confirm {
			_ = p.Process(ctx, q)
		}
		return nil
	})
	c.blocking.put(bc, werr)
	if nde := c.durableVerdict(snap, required, confirm); nde != nil {
		return nde
	}
	return nil
}

// unblockWaiting ends every blocking call waiting on old, a master the
// client just left, with CLIENT UNBLOCK ... ERROR from old's control
// client, in the background (bounded by ProbeTimeout each).
func (c *Client) unblockWaiting(old *node) {
	waiting := c.blocking.waitingOn(old)
	if len(waiting) == 0 {
		return
	}
	ids := make([]int64, len(waiting))
	for i, bc := range waiting {
		ids[i] = bc.id
	}
	slices.Sort(ids)
	c.log.Info("ending blocking calls waiting on the old master", "master", old.addr, "calls", len(ids))
	safe.Go(&c.wg, func(err error) { _ = c.topo.recovered("unblocking calls on "+old.addr, err) }, func() {
		for _, id := range ids {
			ctx, cancel := context.WithTimeout(c.ctx, c.opts.ProbeTimeout)
			err := old.control().Do(ctx, "CLIENT", "UNBLOCK", id, "ERROR").Err()
			cancel()
			if err != nil {
				c.log.Debug("CLIENT UNBLOCK failed", "master", old.addr, "id", id, "err", err)
			}
		}
	})
}
