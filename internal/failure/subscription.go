package failure

import (
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/routing"
)

// SubscriptionError is what a subscription's connection reports to the
// caller's go-redis PubSub (its Receive, ReceiveTimeout, ReceiveMessage,
// Ping, Subscribe and Unsubscribe calls, and the end of its Channel): the
// connection could not be made (Connecting), timed out, was lost, or was
// closed because the subscription moved (errors.Is ErrSubscriptionMoved).
//
// A subscription changes no data: nothing of it may have run twice, and
// go-redis's PubSub itself connects again and subscribes again to every
// channel on its next call. So the thing to do is to call Receive again
// (after a pause when Connecting keeps failing); messages published while
// the connection was down may be lost. The error unwraps to what the
// connection reported (io.EOF, a *net.OpError, os.ErrDeadlineExceeded, a
// reply bound's error, ...) and is a net.Error whose Timeout is that
// error's: a ReceiveTimeout that timed out keeps its connection, as with
// go-redis's own errors.
type SubscriptionError struct {
	// Client is the rediskit client the subscription belongs to
	// ("sentinel", "cluster", "multidb").
	Client string
	// Addr is the node (or database) the connection leads to; "" when
	// none was chosen (no master known, the client closed).
	Addr string
	// Connecting: the connection could not be made; nothing was sent.
	Connecting bool
	Err        error
}

// Subscription returns err as a *SubscriptionError of client's connection
// to addr (nil for nil; an error that already is one, as it is). A closed
// client's redis.ErrClosed stays as it is: go-redis compares with it (==)
// to end a PubSub's Channel.
func Subscription(client, addr string, connecting bool, err error) error {
	var se *SubscriptionError
	if err == nil || err == redis.ErrClosed || errors.As(err, &se) {
		return err
	}
	return &SubscriptionError{Client: client, Addr: addr, Connecting: connecting, Err: err}
}

func (e *SubscriptionError) Error() string {
	where := e.Addr
	if where == "" {
		where = "no node"
	}
	switch {
	case e.Connecting:
		return fmt.Sprintf("%s: subscription could not connect to %s: %s; nothing was sent, and the PubSub tries again on its next call: call Receive again (after a pause if it keeps failing)",
			e.Client, where, BriefErr(e.Err))
	case errors.Is(e.Err, routing.ErrSwitched):
		return fmt.Sprintf("%s: subscription on %s moved: %s; the PubSub subscribes again on the new target on its next call: call Receive again at once (messages published meanwhile may be lost)",
			e.Client, where, BriefErr(e.Err))
	case Timeout(e.Err):
		return fmt.Sprintf("%s: subscription on %s: no reply before the read deadline (%s); the subscription stands: call Receive again",
			e.Client, where, BriefErr(e.Err))
	}
	return fmt.Sprintf("%s: subscription connection to %s lost: %s; the PubSub connects and subscribes again on its next call: call Receive again (messages published meanwhile may be lost)",
		e.Client, where, BriefErr(e.Err))
}

// Unwrap returns what the connection reported.
func (e *SubscriptionError) Unwrap() error { return e.Err }

// Timeout reports whether the underlying error is a timeout (net.Error):
// go-redis's PubSub keeps a connection whose ReceiveTimeout timed out.
func (e *SubscriptionError) Timeout() bool { return Timeout(e.Err) }

// Temporary is false (net.Error).
func (e *SubscriptionError) Temporary() bool { return false }

// subscriptionRedialWait is RetryAdvice's wait after a failed connection:
// the clients check the topology at once after one, and a second covers a
// node being replaced.
const subscriptionRedialWait = time.Second

// RetryAdvice says to call Receive again (guard.Transient): at once after
// a lost, moved or timed-out connection, after a second when it could not
// be made. Nothing of a subscription may have run twice.
func (e *SubscriptionError) RetryAdvice() (after time.Duration, mayHaveExecuted bool) {
	if e.Connecting {
		return subscriptionRedialWait, false
	}
	return 0, false
}
