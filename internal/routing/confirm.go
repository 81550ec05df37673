package routing

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Durable writes' confirmation, shared by the clients that offer them
// (package sentinel, package cluster): the commands that follow a write
// on its connection and how their replies are read (internal/failure's
// AOFProbe judges whether a master can confirm AOF fsyncs).

// DurableTimeout fills in and checks a client's DurableTimeout, the bound
// of each WAIT (and WAITAOF) after a durable write, against its
// ReadTimeout, which bounds the confirmation's replies together (one read
// deadline for the pipeline of the write and its confirmation): WAIT's
// reply needs timeout < readTimeout, WAIT's and WAITAOF's 2*timeout <
// readTimeout. Left at zero it is def, or readTimeout/2 (readTimeout/3
// with aof) when that is shorter, which leaves a reply a round trip of
// room. problem is empty when timeout can be used, else the end of the
// sentence "DurableTimeout ..." for the caller's configuration error.
// Checked whether or not the client is durable: WithDurable turns it on
// per call.
func DurableTimeout(timeout, readTimeout, def time.Duration, aof bool) (_ time.Duration, problem string) {
	parts := time.Duration(1)
	if aof {
		parts = 2
	}
	switch {
	case timeout < 0:
		return timeout, fmt.Sprintf("(%v) cannot be negative (0: the default, %v)", timeout, def)
	case timeout == 0:
		return min(def, readTimeout/(parts+1)), ""
	case timeout*parts >= readTimeout && aof:
		return timeout, fmt.Sprintf("(%v) with DurableAOF must be shorter than half of ReadTimeout (%v), which bounds the replies of WAIT and WAITAOF together: raise ReadTimeout or lower DurableTimeout", timeout, readTimeout)
	case timeout*parts >= readTimeout:
		return timeout, fmt.Sprintf("(%v) must be shorter than ReadTimeout (%v), which bounds the WAIT reply: raise ReadTimeout or lower DurableTimeout", timeout, readTimeout)
	}
	return timeout, ""
}

// ConfirmCmds are the commands that confirm a durable write on the
// connection that made it: WAIT required, and with aof then WAITAOF 1
// required (the master's own fsync and required replicas'), each bounded
// by timeout. Package sentinel's confirmCmds says why WAITAOF follows a
// WAIT rather than replacing it.
func ConfirmCmds(ctx context.Context, required int, timeout time.Duration, aof bool) []redis.Cmder {
	ms := timeout.Milliseconds()
	wait := redis.NewIntCmd(ctx, "wait", required, ms)
	if !aof {
		return []redis.Cmder{wait}
	}
	return []redis.Cmder{wait, redis.NewIntSliceCmd(ctx, "waitaof", 1, required, ms)}
}

// ConfirmCounts reads ConfirmCmds' replies: the replicas counted (the
// least of WAIT's and WAITAOF's), whether the master fsynced (true
// without WAITAOF), or the first command's failure (0 and false with it).
func ConfirmCounts(confirm []redis.Cmder) (acked int, local bool, err error) {
	local = true
	for _, cmd := range confirm {
		if err := cmd.Err(); err != nil {
			return 0, false, err
		}
		switch cmd := cmd.(type) {
		case *redis.IntCmd: // WAIT: replicas that have the write
			acked = int(cmd.Val())
		case *redis.IntSliceCmd: // WAITAOF: [master fsynced, replicas fsynced]
			v := cmd.Val()
			if len(v) != 2 {
				v = []int64{0, 0}
			}
			local, acked = v[0] >= 1, min(acked, int(v[1]))
		}
	}
	return acked, local, nil
}

// Throttle lets an action through at most once per interval, from any
// number of goroutines: the rechecks refused durable writes ask for.
type Throttle struct{ last atomic.Int64 }

// Allow reports whether the action may run now (and counts it as run).
func (t *Throttle) Allow(every time.Duration) bool {
	now := time.Now().UnixNano()
	last := t.last.Load()
	return now-last >= int64(every) && t.last.CompareAndSwap(last, now)
}
