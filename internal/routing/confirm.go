package routing

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// Durable writes' confirmation, shared by the clients that offer them
// (package sentinel, package cluster): the commands that follow a write
// on its connection and how their replies are read (internal/failure's
// AOFProbe judges whether a master can confirm AOF fsyncs).

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
