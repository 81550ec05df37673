package cluster

import (
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
	"github.com/rediskit/rediskit/internal/safe"
)

// typed reports whether err is one of the package's errors, which a call
// returns as it is (see seal).
func typed(err error) bool {
	var (
		ne  *NodeError
		mce *MasterChangedError
		nme *NoMasterError
		nde *NotDurableError
		cse *CrossSlotError
		ce  *CursorError
		pe  *safe.PanicError
	)
	return errors.As(err, &ne) || errors.As(err, &mce) || errors.As(err, &nme) || errors.As(err, &nde) ||
		errors.As(err, &cse) || errors.As(err, &ce) || errors.As(err, &pe) || errors.Is(err, ErrClosed)
}

// seal is the last step of every call (failure.Seal): each error the
// caller sees, cmd's or each of cmds' and the one returned, is the
// command's own answer or one of the package's errors. Any other failure
// becomes a *NodeError naming the node the work was sent to (nodeOf, for
// a command of cmds, nil for the first that failed; n for cmd and the work
// as a whole, else nodeOf(nil)) and its slot, and
// saying whether it may have executed; or, when the work was sent to no
// node (n nil), a *NoMasterError: nothing was sent.
func (c *Client) seal(cmd redis.Cmder, cmds []redis.Cmder, err error, n *node, slot int, write bool, nodeOf func(redis.Cmder) *node) error {
	if failure.Answered(cmd, cmds, err) {
		return err // nothing to type, and no Sealer to allocate
	}
	return failure.Seal(cmd, cmds, err, failure.Sealer{
		Typed: typed,
		Wrap: func(q redis.Cmder, err error, may bool) error {
			n, slot, write := n, slot, write
			if q == nil && nodeOf != nil && n == nil {
				n = nodeOf(nil)
			}
			if q != nil && cmd == nil {
				if nodeOf != nil {
					if qn := nodeOf(q); qn != nil {
						n = qn
					}
				}
				if s := c.slotOf(q); s >= 0 {
					slot = s
				}
				if !routing.IsTx(cmds) {
					write = !c.classifier.ReadOnly(q)
				}
			}
			if n == nil {
				return &NoMasterError{Slot: slot, Cause: err}
			}
			return &NodeError{Addr: n.addr, Slot: slot, Write: write, MayHaveExecuted: may, Err: err}
		},
	})
}
