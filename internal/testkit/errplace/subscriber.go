package errplace

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/routing"
)

// Subscriber receives on a PubSub with a short ReceiveTimeout until Stop,
// keeping the payloads that arrived and every error, so that a test can
// check what a subscriber sees through its faults: each error a
// *failure.SubscriptionError (the type packages sentinel, cluster and
// multidb export as SubscriptionError), timeouts reported as net.Error
// timeouts.
type Subscriber struct {
	ps      *redis.PubSub
	timeout time.Duration

	mu       sync.Mutex
	payloads map[string]bool
	errs     []error
	timeouts int

	cancel context.CancelFunc
	done   chan struct{}
}

// NewSubscriber starts receiving on ps (whose subscription the caller
// confirmed) with timeout per ReceiveTimeout.
func NewSubscriber(ctx context.Context, ps *redis.PubSub, timeout time.Duration) *Subscriber {
	s := &Subscriber{ps: ps, timeout: timeout, payloads: map[string]bool{}, done: make(chan struct{})}
	ctx, s.cancel = context.WithCancel(ctx)
	go func() {
		defer close(s.done)
		for ctx.Err() == nil {
			msg, err := ps.ReceiveTimeout(ctx, timeout)
			s.mu.Lock()
			switch m := msg.(type) {
			case *redis.Message:
				s.payloads[m.Payload] = true
			case nil:
				if ctx.Err() != nil {
					s.mu.Unlock()
					return
				}
				var ne net.Error
				if errors.As(err, &ne) && ne.Timeout() {
					s.timeouts++
				} else {
					s.errs = append(s.errs, err)
				}
			}
			s.mu.Unlock()
			if err != nil && msg == nil {
				time.Sleep(5 * time.Millisecond) // a failing dial returns at once
			}
		}
	}()
	return s
}

// Got reports whether a message with payload arrived.
func (s *Subscriber) Got(payload string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.payloads[payload]
}

// Timeouts is how many ReceiveTimeouts timed out.
func (s *Subscriber) Timeouts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.timeouts
}

// Stop ends the receiving loop and returns the errors other than
// timeouts.
func (s *Subscriber) Stop() []error {
	s.cancel()
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.errs
}

// CheckSubscriptionErrors fails t for each error that is not a
// *failure.SubscriptionError or redis.ErrClosed, and returns how many
// there were of each kind (connecting, moved, timeout, lost), for the
// test's log.
func CheckSubscriptionErrors(t testing.TB, what string, errs []error) map[string]int {
	t.Helper()
	kinds := map[string]int{}
	for _, err := range errs {
		var se *failure.SubscriptionError
		switch {
		case err == redis.ErrClosed:
			kinds["closed"]++
		case !errors.As(err, &se):
			t.Errorf("%s: an untyped subscription error: %T %v", what, err, err)
			kinds["untyped"]++
		case se.Connecting:
			kinds["connecting"]++
		case errors.Is(err, routing.ErrSwitched):
			kinds["moved"]++
		case se.Timeout():
			kinds["timeout"]++
		default:
			kinds["lost"]++
		}
	}
	return kinds
}

// Await publishes payload with publish until the subscriber received it,
// for at most d; it fails t if it never arrives.
func (s *Subscriber) Await(t testing.TB, d time.Duration, payload string, publish func(payload string) error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !s.Got(payload) {
		if time.Now().After(deadline) {
			t.Fatalf("the subscriber did not receive %q within %v", payload, d)
		}
		_ = publish(payload)
		time.Sleep(20 * time.Millisecond)
	}
}

// Finish stops the subscriber and checks what it saw through the test's
// faults (what names them): every error typed (CheckSubscriptionErrors),
// and at least one saying the connection was lost or moved.
func (s *Subscriber) Finish(t testing.TB, what string) {
	t.Helper()
	errs := s.Stop()
	kinds := CheckSubscriptionErrors(t, what, errs)
	t.Logf("a subscriber through %s: %d timeouts, errors %v", what, s.Timeouts(), kinds)
	if kinds["lost"]+kinds["moved"] == 0 {
		t.Errorf("%s: no error said the subscription's connection was lost or moved: %v", what, errs)
	}
}
