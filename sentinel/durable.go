package sentinel

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/routing"
)

// durableWrite runs writing work and then WAIT on the same connection (one
// round trip for a command or a pipeline, two for a transaction). The work
// counts as durable only if every healthy replica in the snapshot confirms
// it: after a promotion, the old master can keep replicating to the other
// replicas until Sentinel reconfigures them, so any smaller count can be
// met by replicas that will not survive the failover, while the promoted
// replica, gone from the old master, can never be one of "every".
func (c *Client) durableWrite(ctx context.Context, snap *snapshot, cmd redis.Cmder, cmds []redis.Cmder) error {
	n := snap.master
	required := len(snap.replicas)
	if required == 0 {
		return &NotDurableError{Master: n.addr, Timeout: c.opts.DurableTimeout, NotSent: true}
	}
	wait := redis.NewIntCmd(ctx, "wait", required, c.opts.DurableTimeout.Milliseconds())
	n.acquire()
	defer n.release()
	if routing.IsTx(cmds) {
		conn := n.client.Conn()
		defer conn.Close()
		_, err := conn.TxPipelined(ctx, func(p redis.Pipeliner) error {
			for _, q := range cmds[1 : len(cmds)-1] {
				_ = p.Process(ctx, q)
			}
			return nil
		})
		if err != nil {
			return err
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
		if cmd != nil && cmd.Err() != nil {
			return cmd.Err()
		}
		for _, q := range cmds {
			if q.Err() != nil && !c.classifier.ReadOnly(q) {
				return q.Err()
			}
		}
	}
	if err := wait.Err(); err != nil {
		c.stats.writesNotDurable.Add(1)
		return &NotDurableError{Master: n.addr, Required: required, Timeout: c.opts.DurableTimeout, Cause: err}
	}
	if acked := int(wait.Val()); acked < required {
		c.stats.writesNotDurable.Add(1)
		return &NotDurableError{Master: n.addr, Required: required, Acked: acked, Timeout: c.opts.DurableTimeout}
	}
	return nil
}
