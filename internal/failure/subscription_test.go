package failure

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/routing"
)

func TestSubscriptionError(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	lost := &net.OpError{Op: "read", Net: "tcp", Err: io.EOF}
	tests := []struct {
		name       string
		err        error
		connecting bool
		timeout    bool
		is         []error
		says       string
	}{
		{name: "a ReceiveTimeout that timed out", err: timeout, timeout: true,
			is: []error{os.ErrDeadlineExceeded}, says: "the subscription stands"},
		{name: "a connection lost", err: lost, is: []error{io.EOF}, says: "connection to 10.0.0.1:6379 lost"},
		{name: "a connection closed for a switch", err: errors.Join(routing.ErrSwitched, net.ErrClosed),
			is: []error{routing.ErrSwitched, net.ErrClosed}, says: "moved"},
		{name: "a dial refused", err: &DialError{Addr: "10.0.0.1:6379", Err: errors.New("connection refused")}, connecting: true,
			says: "nothing was sent"},
		{name: "a dial past the caller's deadline", err: context.DeadlineExceeded, connecting: true, timeout: true,
			is: []error{context.DeadlineExceeded}, says: "could not connect"},
	}
	for _, tt := range tests {
		err := Subscription("sentinel", "10.0.0.1:6379", tt.connecting, tt.err)
		var se *SubscriptionError
		if !errors.As(err, &se) || se.Client != "sentinel" || se.Addr != "10.0.0.1:6379" || se.Connecting != tt.connecting {
			t.Errorf("%s: %#v", tt.name, err)
			continue
		}
		// go-redis keeps a PubSub's connection after an error that is a
		// net.Error timeout, found by a type assertion (Channel) or
		// errors.As (isBadConn).
		ne, ok := err.(net.Error)
		if !ok || ne.Timeout() != tt.timeout {
			t.Errorf("%s: net.Error %v, timeout %v; want timeout %v", tt.name, ok, ok && ne.Timeout(), tt.timeout)
		}
		for _, target := range tt.is {
			if !errors.Is(err, target) {
				t.Errorf("%s: does not match %v", tt.name, target)
			}
		}
		if msg := err.Error(); !strings.Contains(msg, tt.says) || !strings.HasPrefix(msg, "sentinel: subscription") {
			t.Errorf("%s: %q does not say %q", tt.name, msg, tt.says)
		}
		if after, mayHave := se.RetryAdvice(); mayHave || (after > 0) != tt.connecting {
			t.Errorf("%s: RetryAdvice %v, %v", tt.name, after, mayHave)
		}
		if again := Subscription("cluster", "x", false, err); again != err {
			t.Errorf("%s: wrapped twice: %v", tt.name, again)
		}
	}
	// go-redis ends a PubSub's Channel on redis.ErrClosed, by ==.
	if err := Subscription("multidb", "", true, redis.ErrClosed); err != redis.ErrClosed {
		t.Errorf("ErrClosed became %v", err)
	}
	if Subscription("multidb", "", true, nil) != nil {
		t.Error("nil became an error")
	}
}
