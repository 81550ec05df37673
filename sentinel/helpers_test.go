package sentinel

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/rediskit/rediskit/lab"
)

// eventLog collects a client's events for assertions.
type eventLog struct {
	mu     sync.Mutex
	events []Event
	// flush, when set, waits until the client's events emitted so far
	// are delivered: the Observer is called from a goroutine of the
	// client's, so an event emitted before a call returned may still be
	// on its way.
	flush func()
}

func (e *eventLog) delivered() {
	if e.flush != nil {
		e.flush()
	}
}

func (e *eventLog) observe(ev Event) {
	e.mu.Lock()
	e.events = append(e.events, ev)
	e.mu.Unlock()
}

func (e *eventLog) count(kind EventKind) int {
	e.delivered()
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, ev := range e.events {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}

func (e *eventLog) all() []Event {
	e.delivered()
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Event(nil), e.events...)
}

// newTestClient returns a client for the lab, closed when the test ends.
func newTestClient(t *testing.T, l *lab.Lab, mod func(*Config)) (*Client, *eventLog) {
	t.Helper()
	log := &eventLog{}
	cfg := l.Config()
	opts := Config{
		MasterName:       l.MasterName(),
		SentinelAddrs:    l.SentinelAddrs(),
		Username:         cfg.Username,
		Password:         cfg.Password,
		SentinelUsername: cfg.SentinelUsername,
		SentinelPassword: cfg.SentinelPassword,
		TLSConfig:        l.TLSConfig(),
		Observer:         log.observe,
		RefreshInterval:  500 * time.Millisecond,
	}
	if mod != nil {
		mod(&opts)
	}
	c, err := NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	log.flush = func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = c.observer.Flush(ctx)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return c, log
}

// calls reads how many times cmd ran on the node (INFO commandstats).
func calls(t *testing.T, n *lab.Node, cmd string) int {
	t.Helper()
	v, err := n.Calls(context.Background(), cmd)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
