package sentinel

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestExactlyOnceFailover drives five drills side by side through a
// Sentinel failover, a master SIGKILL, and both in a row (the new master
// killed once the failover settled): plain writes,
// exactly-once writes, durable, auto-pipelined and in pipelines; 8
// writers each,
// RPUSH of unique ids and INCR of a counter per writer, master and
// replicas 6 ms away. Exactly-once: no duplicate, no INCR run twice, no
// may-have-executed error reaching a caller; durable: nothing
// acknowledged then lost. The plain client's figures are logged beside.
func TestExactlyOnceFailover(t *testing.T) {
	for _, fault := range []string{"failover", "SIGKILL", "failover, then SIGKILL"} {
		t.Run(fault, func(t *testing.T) {
			ctx := testkit.Context(t, 2*time.Minute)
			l := lab.New(t, loadConfig())
			hold := func(o *Config) { o.FailoverHold = 10 * time.Second }
			plain, _ := newTestClient(t, l, hold)
			once, _ := newTestClient(t, l, func(o *Config) { hold(o); o.ExactlyOnce = &exactlyonce.Config{} })
			durable, _ := newTestClient(t, l, func(o *Config) {
				hold(o)
				o.ExactlyOnce = &exactlyonce.Config{}
				// Durable writes go on while a replica is down (the
				// old master, killed or resyncing).
				o.Durable, o.DurableScope = true, DurablePromotable
			})
			auto, _ := newTestClient(t, l, func(o *Config) {
				hold(o)
				o.ExactlyOnce = &exactlyonce.Config{}
				o.AutoPipeline = true
			})
			runs := testkit.StartOnce(ctx, t, "{eo}", testkit.Named{Name: "plain", Client: plain},
				testkit.Named{Name: "exactly-once", Client: once}, testkit.Named{Name: "exactly-once durable", Client: durable},
				testkit.Named{Name: "exactly-once auto-pipelined", Client: auto},
				testkit.Named{Name: "exactly-once pipelines", Client: once, Pipeline: true})
			time.Sleep(time.Second)
			switch fault {
			case "failover":
				if _, err := l.Failover(ctx); err != nil {
					t.Fatal(err)
				}
			case "SIGKILL", "failover, then SIGKILL":
				if fault != "SIGKILL" {
					// Two faults in a row: the new master is killed
					// once the failover settled.
					if _, err := l.Failover(ctx); err != nil {
						t.Fatal(err)
					}
					if err := l.WaitSettled(ctx); err != nil {
						t.Fatal(err)
					}
					time.Sleep(500 * time.Millisecond)
				}
				m, err := l.Master(ctx)
				if err != nil {
					t.Fatal(err)
				}
				killed := time.Now()
				if err := m.Kill(); err != nil {
					t.Fatal(err)
				}
				if _, err := l.WaitEvent(ctx, killed, func(ev lab.SentinelEvent) bool { return ev.Type == "+switch-master" }); err != nil {
					t.Fatal(err)
				}
			}
			if err := l.WaitSettled(ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(time.Second)
			testkit.StopAll(runs)
			m, err := l.Master(ctx)
			if err != nil {
				t.Fatal(err)
			}
			final := m.NewClient()
			defer final.Close()
			testkit.CheckOnce(ctx, t, final, fmt.Sprintf("%s, %s, master and 2 replicas +6 ms, 8 writers a client", fault, l.ServerVersion()), runs)
		})
	}
}

// TestExactlyOnceStall: the master stalls (SIGSTOP) for 2 s while
// exactly-once writes are on the wire; the client's read timeout (300 ms)
// ends each attempt, and the client sends it again while the first
// attempt's bytes wait in the stalled server's socket. When the server
// resumes it reads them all: every INCR ran once (the counter equals the
// acknowledged count), and the callers got replies, not errors.
func TestExactlyOnceStall(t *testing.T) {
	ctx := testkit.Context(t, time.Minute)
	cfg := lab.Sentinel(1)
	cfg.DownAfter = 30 * time.Second // no failover: the same master resumes
	l := lab.New(t, cfg)
	c, events := newTestClient(t, l, func(o *Config) {
		o.ExactlyOnce = &exactlyonce.Config{}
		o.ReadTimeout = 300 * time.Millisecond
		o.FailoverHold = 5 * time.Second
	})
	run := testkit.StartOnce(ctx, t, "{eo}", testkit.Named{Name: "exactly-once, a stall", Client: c})
	time.Sleep(300 * time.Millisecond)
	m, err := l.Master(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Pause(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := m.Resume(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	testkit.StopAll(run)
	final := m.NewClient()
	defer final.Close()
	rep := testkit.CheckOnce(ctx, t, final, "a 2 s stall, "+l.ServerVersion().String(), run)[0]
	reruns := c.Stats().WritesRerun
	if reruns == 0 {
		t.Errorf("no write was sent again: the stall did not test anything (events %v)", events.all())
	}
	if rep.Lost+rep.CounterLost != 0 {
		t.Errorf("%d lost without a failover", rep.Lost+rep.CounterLost)
	}
	if len(rep.Errors) != 0 {
		t.Errorf("errors reached callers: %v", rep.Errors)
	}
	t.Logf("writes sent again: %d", reruns)
}

// TestExactlyOnceRefusals: a write the path cannot take, asked for per
// call, is refused before it is sent; without the per-call ask it runs
// plainly; a client without the config refuses a call that asks.
func TestExactlyOnceRefusals(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Sentinel(0))
	c, _ := newTestClient(t, l, func(o *Config) { o.ExactlyOnce = &exactlyonce.Config{PerCall: true} })
	plain, _ := newTestClient(t, l, nil)
	insist := exactlyonce.With(ctx, true)
	for _, tc := range []struct {
		name string
		c    *Client
		run  func(ctx context.Context, c *Client) error
	}{
		{"blocking", c, func(ctx context.Context, c *Client) error { return c.BLPop(ctx, time.Millisecond, "l").Err() }},
		{"keyless", c, func(ctx context.Context, c *Client) error { return c.Publish(ctx, "ch", "m").Err() }},
		{"transaction", c, func(ctx context.Context, c *Client) error {
			_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error { p.Incr(ctx, "tx"); return nil })
			return err
		}},
		{"no config", plain, func(ctx context.Context, c *Client) error { return c.Incr(ctx, "n").Err() }},
		{"no config, a pipeline", plain, func(ctx context.Context, c *Client) error {
			_, err := c.Pipelined(ctx, func(p redis.Pipeliner) error { p.Get(ctx, "n"); p.Incr(ctx, "p"); return nil })
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.run(insist, tc.c)
			var ue *exactlyonce.UnsupportedError
			if !errors.As(err, &ue) || !errors.Is(err, exactlyonce.ErrUnsupported) {
				t.Fatalf("asked per call: %v", err)
			}
			if err := tc.run(ctx, tc.c); err != nil && !errors.Is(err, redis.Nil) {
				t.Fatalf("not asked: %v", err)
			}
		})
	}
	if n, _ := c.Get(ctx, "tx").Int(); n != 1 {
		t.Errorf("the refused transaction ran: tx = %d", n)
	}
	if _, err := NewClient(Config{MasterName: "m", SentinelAddrs: l.SentinelAddrs(), FailoverHold: time.Minute,
		ExactlyOnce: &exactlyonce.Config{TTL: time.Minute}}); err == nil {
		t.Error("a TTL shorter than twice the hold was accepted")
	}
}

// TestExactlyOnceDurableRefusedUnsent: an exactly-once durable write that
// is refused unsent (a replica it must be confirmed by is down) is the
// durable mode's answer, returned at once: not sent again through the
// hold, since nothing ran.
func TestExactlyOnceDurableRefusedUnsent(t *testing.T) {
	ctx := testkit.Context(t, time.Minute)
	l := lab.New(t, lab.Sentinel(1))
	const hold = 5 * time.Second
	c, _ := newTestClient(t, l, func(o *Config) {
		o.ExactlyOnce = &exactlyonce.Config{}
		o.Durable, o.FailoverHold = true, hold
		o.RefreshInterval = 100 * time.Millisecond
	})
	if err := c.Incr(ctx, "n").Err(); err != nil {
		t.Fatal(err)
	}
	if err := l.Node(1).Kill(); err != nil {
		t.Fatal(err)
	}
	var nde *NotDurableError
	testkit.WaitFor(t, 10*time.Second, "a durable write refused unsent", func() bool {
		err := c.Incr(ctx, "m").Err()
		return errors.As(err, &nde) && nde.NotSent
	})
	direct := l.Node(0).NewClient()
	defer direct.Close()
	before, _ := direct.Get(ctx, "m").Int() // writes that ran while the replica's loss was being found
	began := time.Now()
	err := c.Incr(ctx, "m").Err()
	took := time.Since(began)
	if !errors.As(err, &nde) || !nde.NotSent {
		t.Fatalf("got %v", err)
	}
	if took >= hold/2 {
		t.Errorf("refused after %v: it waited through the hold (%v)", took, hold)
	}
	if n, _ := direct.Get(ctx, "m").Int(); n != before {
		t.Errorf("a write refused unsent ran: m went from %d to %d", before, n)
	}
}
