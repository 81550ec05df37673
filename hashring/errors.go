package hashring

import (
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

var (
	// ErrAlreadyStarted is returned by Start on a node that is started.
	ErrAlreadyStarted = errors.New("hashring: node already started; Stop it before starting it again")
	// ErrBusy is returned by Start or Stop while another Start or Stop of
	// the same node is in progress. Neither waits for the other.
	ErrBusy = errors.New("hashring: another Start or Stop of this node is in progress; retry when it returns")
	// ErrSubscribeTimeout is wrapped when Redis did not confirm the
	// subscription to the ring's channel within Config.SubscribeTimeout.
	ErrSubscribeTimeout = errors.New("hashring: Redis did not confirm the subscription in time")
	// ErrInvalidHostname is matched by the *ConfigError of a
	// Config.Hostname that cannot be written into a member (it contains
	// ':', is empty or is not UTF-8).
	ErrInvalidHostname = errors.New("hashring: invalid hostname")
	// ErrInvalidConfig is matched by a *ConfigError about any other Config
	// field NewNode or NewRing cannot use, and wrapped by their errors
	// about a nil client or an empty key.
	ErrInvalidConfig = errors.New("hashring: invalid configuration")
)

// Error is a failed operation on the ring's Redis key: what was being done,
// on which server, and the cause (errors.Is / errors.As see through it).
type Error struct {
	// Op is the operation: "start", "stop", "read" or "print".
	Op string
	// Step is the Redis step that failed: "subscribe", "heartbeat",
	// "notify", "cleanup", "read" or "remove".
	Step string
	// Key is the ring's key; Server the Redis address (no credentials).
	Key    string
	Server string
	// Err is the cause.
	Err error
	// Cleanup is, for a failed Start that had written replicas, the error
	// of removing them again (nil when they were removed).
	Cleanup error
	// Wrote reports whether a failed Start had sent a heartbeat, so its
	// replicas may have been on the ring.
	Wrote bool
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("hashring: %s ring %q on %s: %s: %v", e.Op, e.Key, e.Server, e.Step, e.Err)
	switch {
	case e.Op == "start" && e.Wrote && e.Cleanup != nil:
		msg += fmt.Sprintf("; removing the replicas it added failed too (%v): they expire on their own", e.Cleanup)
	case e.Op == "start" && e.Wrote:
		msg += "; the replicas it added were removed"
	}
	switch e.Op {
	case "start":
		msg += "; check that Redis is reachable, then Start again"
	case "stop":
		msg += "; the node no longer owns keys, and its replicas expire on their own"
	}
	return msg
}

func (e *Error) Unwrap() []error {
	if e.Cleanup != nil {
		return []error{e.Err, e.Cleanup}
	}
	return []error{e.Err}
}

// serverOf names the Redis server a client talks to, without credentials.
func serverOf(c redis.UniversalClient) string {
	switch c := c.(type) {
	case *redis.Client:
		return c.Options().Addr
	case *redis.ClusterClient:
		return "cluster " + fmt.Sprint(c.Options().Addrs)
	case interface{ String() string }:
		return c.String()
	}
	return "redis"
}
