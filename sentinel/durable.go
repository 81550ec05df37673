package sentinel

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/routing"
)

// durableWrite runs writing work and then WAIT on the same connection (one
// round trip for a command or a pipeline, two for a transaction). The work
// counts as durable only if as many replicas confirm it as the snapshot's
// durable list holds: every replica the master has connected and every
// replica Sentinel could promote, whether or not this client reaches it
// (see durableReplicas). After a promotion, the old master can keep
// replicating to the other replicas until Sentinel reconfigures them, so
// any smaller count can be met by replicas that will not survive the
// failover, while the promoted replica, gone from the old master, can
// never be one of "every". The list comes from the background refresh:
// no round trip is added to the write for it.
func (c *Client) durableWrite(ctx context.Context, snap *snapshot, cmd redis.Cmder, cmds []redis.Cmder) error {
	n := snap.master
	required, err := c.durablePrecheck(snap)
	if err != nil {
		return err
	}
	wait := redis.NewIntCmd(ctx, "wait", required, c.opts.DurableTimeout.Milliseconds())
	n.acquire()
	defer n.release()
	// reply is the work's own result (go-redis's), returned once WAIT has
	// confirmed it. A nil reply (SET ... GET or GETSET on a new key) is a
	// write that ran: it needs confirming like any other.
	var reply error
	if routing.IsTx(cmds) {
		conn := n.client.Conn()
		defer func() { _ = conn.Close() }()
		reply = routing.Run(ctx, conn, nil, cmds)
		if reply != nil && !errors.Is(reply, redis.Nil) {
			return reply // aborted, or lost: nothing to confirm (or unknown)
		}
		_ = conn.Process(ctx, wait)
	} else {
		_, _ = n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			if cmd != nil {
				_ = p.Process(ctx, cmd)
			}
			for _, q := range cmds {
				_ = p.Process(ctx, q)
			}
			return p.Process(ctx, wait)
		})
		reply = firstErr(cmd, cmds)
		if !c.writeRan(cmd, cmds) {
			return reply // no write ran: nothing to confirm
		}
	}
	if nde := c.durableVerdict(snap, required, wait); nde != nil {
		return nde
	}
	return reply
}

// durablePrecheck returns how many replicas a durable write on snap's
// master must be confirmed by, or the error refusing it unsent: no
// replica to confirm it, or a counted one that cannot.
func (c *Client) durablePrecheck(snap *snapshot) (int, error) {
	n := snap.master
	required := len(snap.durable)
	if required == 0 {
		return 0, &NotDurableError{Master: n.addr, Timeout: c.opts.DurableTimeout, NotSent: true}
	}
	if len(snap.unconfirmable) > 0 {
		// WAIT cannot count these replicas: run, the write could not be
		// confirmed and would be left executed but not durable. Refused
		// unsent instead; a refresh soon tells whether they are back.
		c.recheckDurable()
		c.stats.writesNotDurable.Add(1)
		return 0, &NotDurableError{Master: n.addr, Required: required, Replicas: slices.Clone(snap.durable),
			Unconfirmable: slices.Clone(snap.unconfirmable), Timeout: c.opts.DurableTimeout, NotSent: true}
	}
	return required, nil
}

// durableVerdict is the *NotDurableError of a write whose WAIT did not
// count required confirmations, or nil.
func (c *Client) durableVerdict(snap *snapshot, required int, wait *redis.IntCmd) error {
	n := snap.master
	if err := wait.Err(); err != nil {
		c.stats.writesNotDurable.Add(1)
		return &NotDurableError{Master: n.addr, Required: required, Replicas: slices.Clone(snap.durable), Timeout: c.opts.DurableTimeout, Cause: err}
	}
	if acked := int(wait.Val()); acked < required {
		c.stats.writesNotDurable.Add(1)
		return &NotDurableError{Master: n.addr, Required: required, Acked: acked, Replicas: slices.Clone(snap.durable), Timeout: c.opts.DurableTimeout}
	}
	return nil
}

// durableRecheck is how often, at most, a durable write refused because a
// counted replica could not confirm it asks for a topology refresh: soon
// enough that durable writes resume within a fraction of a second of the
// replica's return, without a refresh per refused write.
const durableRecheck = 200 * time.Millisecond

// recheckDurable asks for a refresh unless one was asked for within
// durableRecheck.
func (c *Client) recheckDurable() {
	now := time.Now().UnixNano()
	last := c.durableKick.Load()
	if now-last < int64(durableRecheck) || !c.durableKick.CompareAndSwap(last, now) {
		return
	}
	c.topo.kick()
}

// firstErr is the error go-redis reports for the work: the command's, or
// the first failed command's of a pipeline.
func firstErr(cmd redis.Cmder, cmds []redis.Cmder) error {
	if cmd != nil {
		return cmd.Err()
	}
	for _, q := range cmds {
		if err := q.Err(); err != nil {
			return err
		}
	}
	return nil
}

// writeRan reports whether a write in the work executed: it answered, if
// only with a nil reply.
func (c *Client) writeRan(cmd redis.Cmder, cmds []redis.Cmder) bool {
	ran := func(q redis.Cmder) bool { err := q.Err(); return err == nil || errors.Is(err, redis.Nil) }
	if cmd != nil {
		return ran(cmd)
	}
	for _, q := range cmds {
		if !c.classifier.ReadOnly(q) && ran(q) {
			return true
		}
	}
	return false
}
