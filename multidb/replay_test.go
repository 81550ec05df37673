package multidb

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// proxied starts two standalone servers behind proxies, each with key
// "who" naming it, and a client that trips at the first failure and checks
// health only at start (so that only the call under test moves traffic).
func proxied(t *testing.T, mod func(*Config)) ([]*lab.Node, *Client, *eventLog) {
	t.Helper()
	nodes := standalone(t, 2, lab.Config{Proxy: true})
	nameNodes(t, nodes)
	cfg := fast(Config{ConsecutiveFailures: 1, HealthCheckInterval: time.Hour})
	if mod != nil {
		mod(&cfg)
	}
	c, log := newClient(t, cfg, nodes, 10, 5)
	ctx := testkit.Context(t, 10*time.Second)
	testkit.WaitFor(t, 5*time.Second, "the first health checks", func() bool {
		return stateOf(c, "db0").Checked && stateOf(c, "db1").Checked
	})
	// Pooled connections to db0, for commands and for pipelines (go-redis
	// may keep those apart), so the calls under test are sent at once.
	if v, err := c.Get(ctx, "who").Result(); err != nil || v != "db0" {
		t.Fatalf("GET who = %q, %v", v, err)
	}
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Get(ctx, "who"); return nil }); err != nil {
		t.Fatal(err)
	}
	return nodes, c, log
}

// inFlight starts fn, and applies fault once fn's command is on its way
// (the proxy delays it by 400 ms); it returns fn's error.
func inFlight(n *lab.Node, fault func(*lab.Node), fn func() error) error {
	n.SetLatency(400 * time.Millisecond)
	errc := make(chan error, 1)
	go func() { errc <- fn() }()
	time.Sleep(150 * time.Millisecond)
	fault(n)
	return <-errc
}

func resetConns(n *lab.Node) { n.ResetConnections() }
func blackHole(n *lab.Node)  { n.BlackHole() }

// TestNoWriteReplay checks the rule for work caught by a failover: reads
// run once more on the new active database; a write runs there only if it
// provably did not execute on the old one, and otherwise fails with a
// *DatabaseChangedError (and ran at most once, on the old one).
func TestNoWriteReplay(t *testing.T) {
	tests := []struct {
		name string
		// run makes the call under test against db0's node.
		run func(ctx context.Context, c *Client, db0 *lab.Node) (string, error)
		// want: "db1" (the call succeeded on db1) or "changed" (a
		// *DatabaseChangedError).
		want       string
		wantEvent  EventKind
		maxOnDB0   int // runs of the write on db0 (INCR n), at most
		wantOnDB1  int // runs of the write on db1
		isTimedOut bool
	}{
		{"read loses its connection after sending", func(ctx context.Context, c *Client, db0 *lab.Node) (string, error) {
			var v string
			err := inFlight(db0, resetConns, func() (err error) { v, err = c.Get(ctx, "who").Result(); return })
			return v, err
		}, "db1", EventReadRetried, 0, 0, false},
		{"read pipeline loses its connection", func(ctx context.Context, c *Client, db0 *lab.Node) (string, error) {
			var get *redis.StringCmd
			err := inFlight(db0, resetConns, func() error {
				_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Exists(ctx, "x"); get = p.Get(ctx, "who"); return nil })
				return err
			})
			return get.Val(), err
		}, "db1", EventReadRetried, 0, 0, false},
		{"read times out (black hole)", func(ctx context.Context, c *Client, db0 *lab.Node) (string, error) {
			var v string
			err := inFlight(db0, blackHole, func() (err error) { v, err = c.Get(ctx, "who").Result(); return })
			return v, err
		}, "db1", EventReadRetried, 0, 0, true},
		{"read never sent (refused)", func(ctx context.Context, c *Client, db0 *lab.Node) (string, error) {
			refuse(db0)
			return c.Get(ctx, "who").Result()
		}, "db1", EventReadRetried, 0, 0, false},
		{"write loses its connection after sending", func(ctx context.Context, c *Client, db0 *lab.Node) (string, error) {
			return "", inFlight(db0, resetConns, func() error { return c.Incr(ctx, "n").Err() })
		}, "changed", EventWriteRefused, 1, 0, false},
		{"write times out (black hole)", func(ctx context.Context, c *Client, db0 *lab.Node) (string, error) {
			return "", inFlight(db0, blackHole, func() error { return c.Incr(ctx, "n").Err() })
		}, "changed", EventWriteRefused, 1, 0, true},
		{"transaction loses its connection", func(ctx context.Context, c *Client, db0 *lab.Node) (string, error) {
			return "", inFlight(db0, resetConns, func() error {
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Incr(ctx, "n"); return nil })
				return err
			})
		}, "changed", EventWriteRefused, 1, 0, false},
		{"write pipeline loses its connection", func(ctx context.Context, c *Client, db0 *lab.Node) (string, error) {
			return "", inFlight(db0, resetConns, func() error {
				_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Get(ctx, "who"); p.Incr(ctx, "n"); return nil })
				return err
			})
		}, "changed", EventWriteRefused, 1, 0, false},
		{"write never sent (refused): run on db1", func(ctx context.Context, c *Client, db0 *lab.Node) (string, error) {
			refuse(db0)
			return "db1", c.Incr(ctx, "n").Err()
		}, "db1", EventWriteRerun, 0, 1, false},
		{"transaction never sent (refused): run on db1", func(ctx context.Context, c *Client, db0 *lab.Node) (string, error) {
			refuse(db0)
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Incr(ctx, "n"); return nil })
			return "db1", err
		}, "db1", EventWriteRerun, 0, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, c, log := proxied(t, nil)
			ctx := testkit.Context(t, 10*time.Second)
			got, err := tt.run(ctx, c, nodes[0])
			switch tt.want {
			case "db1":
				if err != nil || got != "db1" {
					t.Fatalf("got %q, %v; want the call to succeed on db1", got, err)
				}
			case "changed":
				var dce *DatabaseChangedError
				if !errors.As(err, &dce) || dce.Old != "db0" || dce.New != "db1" || dce.Cause == nil {
					t.Fatalf("err = %v, want a *DatabaseChangedError db0 → db1", err)
				}
				if got := failure.Timeout(dce.Cause); got != tt.isTimedOut {
					t.Fatalf("cause %v: timeout %v, want %v", dce.Cause, got, tt.isTimedOut)
				}
			}
			if c.Active() != "db1" {
				t.Fatalf("active %q, want db1", c.Active())
			}
			testkit.WaitFor(t, time.Second, tt.wantEvent.String(), func() bool { return len(log.of(tt.wantEvent)) == 1 })
			nodes[0].Restore()
			if n, _ := strconv.Atoi(get(t, nodes[0], "n")); n > tt.maxOnDB0 {
				t.Fatalf("the write ran %d times on db0, want at most %d", n, tt.maxOnDB0)
			}
			if n, _ := strconv.Atoi(get(t, nodes[1], "n")); n != tt.wantOnDB1 {
				t.Fatalf("the write ran %d times on db1, want %d", n, tt.wantOnDB1)
			}
		})
	}
}

// refuse makes the node's proxy refuse connections (and reset the open
// ones) and waits for the resets to reach the client's idle connections,
// so the next call dials, and is refused.
func refuse(n *lab.Node) {
	n.Proxy().Suspend()
	time.Sleep(100 * time.Millisecond)
}

// TestTripRules drives each trip rule with sequential calls to a database
// whose proxy refuses connections: the fast path trips at the
// ConsecutiveFailures-th failure; with it off, the rate path trips when
// MinFailures failures reach the rate; earlier calls get their error as it
// is, the tripping call runs on db1.
func TestTripRules(t *testing.T) {
	tests := []struct {
		name      string
		cfg       func(*Config)
		successes int // calls before the fault
		trippedAt int // the failure that trips
	}{
		{"fast path: 3 in a row", func(c *Config) { c.ConsecutiveFailures = 3 }, 0, 3},
		{"rate path: 5 failures at 50%", func(c *Config) {
			c.ConsecutiveFailures, c.MinFailures, c.FailureRateThreshold, c.FailureWindow = -1, 5, 0.5, 10*time.Second
		}, 3, 5}, // 5 of 10 calls (proxied's GET and pipeline included)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes, c, _ := proxied(t, tt.cfg)
			ctx := testkit.Context(t, 10*time.Second)
			for range tt.successes {
				if err := c.Get(ctx, "who").Err(); err != nil {
					t.Fatal(err)
				}
			}
			refuse(nodes[0])
			for i := 1; i <= tt.trippedAt; i++ {
				v, err := c.Get(ctx, "who").Result()
				switch {
				case i < tt.trippedAt && (err == nil || c.Active() != "db0"):
					t.Fatalf("failure %d: %q, %v, active %s; want an error and db0 still active", i, v, err, c.Active())
				case i == tt.trippedAt && (err != nil || v != "db1"):
					t.Fatalf("failure %d: %q, %v; want it to trip and run on db1", i, v, err)
				}
			}
			if st := stateOf(c, "db0"); st.State != Open || st.Trips != 1 {
				t.Fatalf("db0: %+v", st)
			}
		})
	}
}
