package multidb

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// holdHook holds the first command (or pipeline) that touches a key with
// prefix, after the client chose its database and before that database's
// client takes a connection: reached is closed when it is held, and it
// goes on when release is closed. Later commands pass.
type holdHook struct {
	prefix           string
	armed            atomic.Bool
	reached, release chan struct{}
}

func newHoldHook(prefix string) *holdHook {
	h := &holdHook{prefix: prefix, reached: make(chan struct{}), release: make(chan struct{})}
	h.armed.Store(true)
	return h
}

func (h *holdHook) hold(cmds ...redis.Cmder) {
	for _, cmd := range cmds {
		args := cmd.Args()
		if len(args) < 2 {
			continue
		}
		if key, ok := args[1].(string); ok && strings.HasPrefix(key, h.prefix) && h.armed.CompareAndSwap(true, false) {
			close(h.reached)
			<-h.release
			return
		}
	}
}

func (h *holdHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *holdHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.hold(cmd)
		return next(ctx, cmd)
	}
}

func (h *holdHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.hold(cmds...)
		return next(ctx, cmds)
	}
}

// TestRemoveDatabaseInFlight removes the active database while a call
// that already chose it has not yet taken a connection: its client is
// closed under it, so the call is refused with redis.ErrClosed and never
// ran. Reads and writes alike must then run on the new active database
// (the package's rule: a write that provably did not run may be re-run),
// and the refusal is no failure of the removed database.
func TestRemoveDatabaseInFlight(t *testing.T) {
	nodes := standalone(t, 2, lab.Standalone())
	nameNodes(t, nodes)
	ctx := testkit.Context(t, 30*time.Second)

	tests := []struct {
		name string
		do   func(t *testing.T, c *Client, key string) error
		// wrote is the key's value on db1 after the call, and on db0 it
		// must have none; a read is retried, a write re-run.
		wrote string
		read  bool
	}{
		{
			name: "read",
			do: func(t *testing.T, c *Client, key string) error {
				// Only db1 has the key: the value says who served the read.
				if err := nodes[1].Do(ctx, "SET", key, "db1").Err(); err != nil {
					return err
				}
				v, err := c.Get(ctx, key).Result()
				if err == nil && v != "db1" {
					t.Errorf("GET %s = %q, want db1's value", key, v)
				}
				return err
			},
			wrote: "db1", // by the test, directly
			read:  true,
		},
		{
			name:  "write",
			do:    func(t *testing.T, c *Client, key string) error { return c.Set(ctx, key, "v", 0).Err() },
			wrote: "v",
		},
		{
			name: "pipeline with a write",
			do: func(t *testing.T, c *Client, key string) error {
				_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
					p.Get(ctx, "who")
					p.Incr(ctx, key)
					return nil
				})
				return err
			},
			wrote: "1",
		},
		{
			name: "transaction",
			do: func(t *testing.T, c *Client, key string) error {
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Incr(ctx, key)
					return nil
				})
				return err
			},
			wrote: "1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, log := newClient(t, fast(Config{}), nodes, 10, 5)
			key := "held:" + strings.ReplaceAll(tt.name, " ", "-") + ":" + time.Now().Format("150405.000000000")
			hook := newHoldHook("held:")
			c.AddHook(hook)
			c.mu.Lock()
			db0 := c.findLocked("db0")
			c.mu.Unlock()

			errc := make(chan error, 1)
			go func() { errc <- tt.do(t, c, key) }()
			select {
			case <-hook.reached:
			case err := <-errc:
				t.Fatalf("the call returned (%v) before it was held", err)
			}
			if err := c.RemoveDatabase("db0"); err != nil {
				close(hook.release)
				t.Fatal(err)
			}
			close(hook.release)
			if err := <-errc; err != nil {
				t.Fatalf("%s caught by RemoveDatabase: %v; want it run on db1", tt.name, err)
			}
			if got0, got1 := get(t, nodes[0], key), get(t, nodes[1], key); got0 != "" || got1 != tt.wrote {
				t.Errorf("%s on db0 %q, on db1 %q; want %q, only on db1", key, got0, got1, tt.wrote)
			}
			st, kind := c.Stats(), EventWriteRerun
			served, other := st.WritesRerun, st.ReadsRetried
			if tt.read {
				served, other, kind = st.ReadsRetried, st.WritesRerun, EventReadRetried
			}
			if served != 1 || other != 0 || st.WritesRefused != 0 {
				t.Errorf("stats %+v: want the call counted once, as %s", st, kind)
			}
			if ev := log.await(t, kind, 1); ev[0].Old != "db0" || ev[0].New != "db1" {
				t.Errorf("%s event %v, want db0 → db1", kind, ev[0])
			}
			if n := db0.det.total.Load(); n != 0 {
				t.Errorf("the refusal counted %d failures of the removed database", n)
			}
		})
	}
}

// TestRemoveDatabaseInFlightWithNoneLeft removes the active database while
// a call that chose it is held and the only other database is down: the
// call, refused unsent by the closed client, fails with the package's
// unavailable error, not go-redis's "client is closed".
func TestRemoveDatabaseInFlightWithNoneLeft(t *testing.T) {
	nodes := standalone(t, 2, lab.Standalone())
	nameNodes(t, nodes)
	ctx := testkit.Context(t, 30*time.Second)
	c, _ := newClient(t, fast(Config{}), nodes, 10, 5)
	if err := nodes[1].Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 10*time.Second, "db1's breaker to open", func() bool { return stateOf(c, "db1").State == Open })
	hook := newHoldHook("held:")
	c.AddHook(hook)
	errc := make(chan error, 1)
	go func() { errc <- c.Set(ctx, "held:none-left", "v", 0).Err() }()
	select {
	case <-hook.reached:
	case err := <-errc:
		t.Fatalf("the call returned (%v) before it was held", err)
	}
	err := c.RemoveDatabase("db0")
	close(hook.release)
	if err != nil {
		t.Fatal(err)
	}
	err = <-errc
	if !errors.Is(err, ErrTemporarilyUnavailable) || errors.Is(err, redis.ErrClosed) {
		t.Fatalf("the held call got %v, want ErrTemporarilyUnavailable", err)
	}
	if got := get(t, nodes[0], "held:none-left"); got != "" {
		t.Fatalf("the refused write ran on the removed database: %q", got)
	}
}
