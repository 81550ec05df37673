package cluster

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/exactlyonce"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// TestExactlyOnceDrills drives five drills side by side through faults
// of the shard that holds the drill's keys: plain writes, exactly-once
// writes, single, in pipelines and auto-pipelined, exactly-once durable writes; 8
// writers each, RPUSH of unique
// ids and INCR of a counter per writer. Faults: a graceful CLUSTER
// FAILOVER, a master SIGKILL, a 2 s stall (SIGSTOP: the writes in flight
// are read when it resumes, after the client sent them again), a minority
// partition (the master cut off from the rest of the cluster, the
// clients still reaching it, until its replica is promoted and the
// partition heals). Exactly-once: no duplicate, no INCR run twice, no
// may-have-executed error reaching a caller; durable: nothing
// acknowledged then lost. The plain client's figures are logged beside.
func TestExactlyOnceDrills(t *testing.T) {
	for _, fault := range []string{"CLUSTER FAILOVER", "SIGKILL", "stall 2 s", "minority partition"} {
		t.Run(fault, func(t *testing.T) {
			ctx := testkit.Context(t, 3*time.Minute)
			cfg := lab.Cluster(3, 1)
			cfg.Partitions = fault == "minority partition"
			l := lab.New(t, cfg)
			const tag = "{eo}"
			m, err := l.SlotOwner(ctx, Slot(tag))
			if err != nil {
				t.Fatal(err)
			}
			once := newTestClient(t, l, func(o *Config) { o.ExactlyOnce = &exactlyonce.Config{} })
			runs := testkit.StartOnce(ctx, t, tag,
				testkit.Named{Name: "plain", Client: newTestClient(t, l, nil)},
				testkit.Named{Name: "exactly-once", Client: once},
				testkit.Named{Name: "exactly-once pipelines", Client: once, Pipeline: true},
				testkit.Named{Name: "exactly-once auto-pipelined", Client: newTestClient(t, l, func(o *Config) {
					o.ExactlyOnce = &exactlyonce.Config{}
					o.AutoPipeline = true
				})},
				testkit.Named{Name: "exactly-once durable", Client: newTestClient(t, l, func(o *Config) {
					o.ExactlyOnce = &exactlyonce.Config{}
					o.Durable = true
				})})
			time.Sleep(time.Second)
			switch fault {
			case "CLUSTER FAILOVER":
				if _, err := l.ClusterFailover(ctx, m.Shard(), lab.FailoverGraceful); err != nil {
					t.Fatal(err)
				}
			case "SIGKILL":
				if err := m.Kill(); err != nil {
					t.Fatal(err)
				}
				if _, err := l.WaitPromotion(ctx, m.Shard(), m); err != nil {
					t.Fatal(err)
				}
			case "stall 2 s":
				if err := m.Pause(); err != nil {
					t.Fatal(err)
				}
				time.Sleep(2 * time.Second)
				if err := m.Resume(); err != nil {
					t.Fatal(err)
				}
			case "minority partition":
				cutMinority(ctx, t, l, m)
			}
			time.Sleep(time.Second)
			testkit.StopAll(runs)
			if err := l.ClusterReady(ctx); err != nil {
				t.Fatal(err)
			}
			final := redis.NewClusterClient(l.ClusterOptions())
			defer final.Close()
			testkit.CheckOnce(ctx, t, final, fmt.Sprintf("%s, %s, 3 shards of a master and a replica, 8 writers a client", fault, l.ServerVersion()), runs)
		})
	}
}

// TestExactlyOncePipeline: each write of a pipeline is exactly-once on
// its own; a pipeline across shards whose one shard's master is killed
// mid-flight gets replies for every write, each run once.
func TestExactlyOncePipeline(t *testing.T) {
	ctx := testkit.Context(t, time.Minute)
	l := lab.New(t, lab.Cluster(3, 0))
	c := newTestClient(t, l, func(o *Config) { o.ExactlyOnce = &exactlyonce.Config{} })
	cmds, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range 30 {
			p.Incr(ctx, "n"+string(rune('a'+i%26)))
		}
		p.Get(ctx, "na")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v := cmds[len(cmds)-1].(*redis.StringCmd).Val(); v != "2" {
		t.Fatalf("na = %q after two INCRs in the pipeline", v)
	}
	if _, ok := cmds[0].(*redis.IntCmd); !ok {
		t.Fatalf("the caller's commands were replaced: %T", cmds[0])
	}
	// A token per write (the fields of the token keys), on the write's
	// own shard.
	tokens := 0
	for _, n := range l.Nodes() {
		keys, err := n.Do(ctx, "KEYS", exactlyonce.DefaultKeyPrefix+"*").StringSlice()
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			held, err := n.Do(ctx, "HLEN", k).Int()
			if err != nil {
				t.Fatal(err)
			}
			tokens += held
		}
	}
	if tokens != 30 {
		t.Errorf("%d tokens for 30 exactly-once writes", tokens)
	}
}

// TestExactlyOnceWithoutConfig: a call that asks exactly-once of a client
// without the config is refused, single or pipelined, before sending.
func TestExactlyOnceWithoutConfig(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Cluster(1, 0))
	c := newTestClient(t, l, nil)
	insist := exactlyonce.With(ctx, true)
	if err := c.Incr(insist, "n").Err(); !errors.Is(err, exactlyonce.ErrUnsupported) {
		t.Errorf("single: %v", err)
	}
	if _, err := c.Pipelined(insist, func(p redis.Pipeliner) error { p.Get(ctx, "n"); p.Incr(ctx, "n"); return nil }); !errors.Is(err, exactlyonce.ErrUnsupported) {
		t.Errorf("pipeline: %v", err)
	}
	if n, _ := c.Get(ctx, "n").Int(); n != 0 {
		t.Errorf("a refused write ran: n = %d", n)
	}
}
