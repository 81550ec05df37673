package sentinel

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
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
	required, err := c.durablePrecheck(ctx, snap)
	if err != nil {
		return err
	}
	n.acquire()
	defer n.release()
	if cmd != nil && c.batched(ctx) && !routing.IsInternal(ctx) {
		// Auto-pipelined: one confirmation for the whole batch, which
		// counts at least the replicas this write needs (see Batcher).
		confirm, _ := n.batch.DoConfirmed(ctx, cmd, required)
		reply := cmd.Err()
		if !c.writeRan(cmd, nil) {
			return reply
		}
		if nde := c.durableVerdict(snap, required, confirm); nde != nil {
			return nde
		}
		return reply
	}
	confirm := c.opts.confirmCmds(ctx, required)
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
		for _, q := range confirm {
			_ = conn.Process(ctx, q)
		}
	} else {
		_, _ = n.client.Pipelined(ctx, func(p redis.Pipeliner) error {
			if cmd != nil {
				_ = p.Process(ctx, cmd)
			}
			for _, q := range cmds {
				_ = p.Process(ctx, q)
			}
			for _, q := range confirm {
				_ = p.Process(ctx, q)
			}
			return nil
		})
		reply = firstErr(cmd, cmds)
		if !c.writeRan(cmd, cmds) {
			return reply // no write ran: nothing to confirm
		}
	}
	if nde := c.durableVerdict(snap, required, confirm); nde != nil {
		return nde
	}
	return reply
}

// durablePrecheck returns how many replicas a durable write on snap's
// master must be confirmed by, or the error refusing it unsent: no
// replica to confirm it, a counted one that cannot, or (DurableAOF) a
// master that cannot confirm an fsync.
func (c *Client) durablePrecheck(ctx context.Context, snap *snapshot) (int, error) {
	n := snap.master
	required := len(snap.durable)
	if required == 0 {
		return 0, &NotDurableError{Master: n.addr, Timeout: c.opts.DurableTimeout, NotSent: true, AOF: c.opts.DurableAOF}
	}
	if c.opts.DurableAOF {
		if err := c.aofReady(ctx, n); err != nil {
			c.stats.writesNotDurable.Add(1)
			return 0, &NotDurableError{Master: n.addr, Required: required, Replicas: slices.Clone(snap.durable),
				Timeout: c.opts.DurableTimeout, NotSent: true, AOF: true, Cause: err}
		}
	}
	if len(snap.unconfirmable) > 0 {
		// WAIT cannot count these replicas: run, the write could not be
		// confirmed and would be left executed but not durable. Refused
		// unsent instead; a refresh soon tells whether they are back.
		c.recheckDurable()
		c.stats.writesNotDurable.Add(1)
		return 0, &NotDurableError{Master: n.addr, Required: required, Replicas: slices.Clone(snap.durable),
			Unconfirmable: slices.Clone(snap.unconfirmable), Timeout: c.opts.DurableTimeout, NotSent: true, AOF: c.opts.DurableAOF}
	}
	return required, nil
}

// confirmCmds are the commands that confirm a durable write on the
// connection that made it: WAIT required, and with DurableAOF then
// WAITAOF 1 required (the master's own fsync and required replicas'
// fsyncs), each bounded by DurableTimeout.
//
// WAITAOF comes after a WAIT, not alone: a replica reports its fsynced
// offset when it answers the master's acknowledgement request, and Valkey
// 8.0 (like Redis 7.2) answers the request that arrives with the write
// before the fsync that follows it, then reports again only with its next
// periodic acknowledgement, a second later. Measured in the lab
// (BenchmarkWaitAOFSequences, 2026-12-05: Valkey 8.0.1, appendfsync
// always, two replicas, 20 writes): write + WAITAOF p50 1.005 s; write +
// WAIT + WAITAOF p50 1.06 ms, p90 2.5 ms, max 4.6 ms. The
// WAIT's own acknowledgement round lets the replicas fsync before
// WAITAOF's asks.
func (o *Config) confirmCmds(ctx context.Context, required int) []redis.Cmder {
	return routing.ConfirmCmds(ctx, required, o.DurableTimeout, o.DurableAOF)
}

// durableVerdict is the *NotDurableError of a write whose confirmation
// (confirmCmds') did not count required replicas (or, with WAITAOF, the
// master's own fsync), or nil.
func (c *Client) durableVerdict(snap *snapshot, required int, confirm []redis.Cmder) error {
	n := snap.master
	nde := func() *NotDurableError {
		c.stats.writesNotDurable.Add(1)
		return &NotDurableError{Master: n.addr, Required: required, Replicas: slices.Clone(snap.durable),
			Timeout: c.opts.DurableTimeout, AOF: c.opts.DurableAOF}
	}
	acked, local, err := routing.ConfirmCounts(confirm)
	if err != nil {
		e := nde()
		e.Cause = err
		if failure.AOFDisabled(err) || failure.UnknownCommand(err) {
			n.aof.Store(nil) // the master changed since it was checked: check again
		}
		return e
	}
	if acked < required || !local {
		e := nde()
		e.Acked, e.LocalFsynced = acked, local && e.AOF
		return e
	}
	return nil
}

// aofRecheck is how long a master found unable to confirm AOF fsyncs
// (no WAITAOF, or appendonly off) is believed before it is asked again:
// long enough that DurableAOF writes refused because of it do not each
// cost a round trip, short enough that turning appendonly on is noticed
// at once by a person watching.
const aofRecheck = time.Second

// aofState is what the client last learned about a master's WAITAOF: nil
// (unchecked), ok, or the reason it cannot confirm fsyncs and when that
// was learned.
type aofState struct {
	err error
	at  time.Time
}

// aofReady reports whether n can confirm AOF fsyncs, asking it (WAITAOF 1
// 0 1 on its control client, which never writes, so the wait is for
// nothing and answers at once) the first time and every aofRecheck while
// it cannot. A master without WAITAOF or without an AOF yields an error
// wrapping ErrAOFUnavailable; any other failure is returned as it is and
// not remembered.
func (c *Client) aofReady(ctx context.Context, n *node) error {
	if st := n.aof.Load(); st != nil && (st.err == nil || time.Since(st.at) < aofRecheck) {
		return st.err
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.ProbeTimeout)
	defer cancel()
	n.acquire()
	err := n.control().Do(ctx, "WAITAOF", 1, 0, 1).Err()
	n.release()
	err, settled := failure.AOFProbe(err, ErrAOFUnavailable)
	if !settled {
		return err
	}
	n.aof.Store(&aofState{err: err, at: time.Now()})
	return err
}

// durableRecheck is how often, at most, a durable write refused because a
// counted replica could not confirm it asks for a topology refresh: soon
// enough that durable writes resume within a fraction of a second of the
// replica's return, without a refresh per refused write.
const durableRecheck = 200 * time.Millisecond

// recheckDurable asks for a refresh unless one was asked for within
// durableRecheck.
func (c *Client) recheckDurable() {
	if c.durableKick.Allow(durableRecheck) {
		c.topo.kick()
	}
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
