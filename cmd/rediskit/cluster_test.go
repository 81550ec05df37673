//go:build unix

package main

import (
	"context"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/sentinel"
)

func TestCoverageStep(t *testing.T) {
	for _, tc := range []struct {
		name    string
		shards  []clusterShard
		missing string // "" when every slot is served
	}{
		{"three shards", []clusterShard{
			{Slots: []redis.SlotRange{{Start: 0, End: 5460}}},
			{Slots: []redis.SlotRange{{Start: 5461, End: 10922}}},
			{Slots: []redis.SlotRange{{Start: 10923, End: 16383}}}}, ""},
		{"split ranges", []clusterShard{
			{Slots: []redis.SlotRange{{Start: 0, End: 99}, {Start: 200, End: 16383}}},
			{Slots: []redis.SlotRange{{Start: 100, End: 199}}}}, ""},
		{"a gap and the last slot", []clusterShard{
			{Slots: []redis.SlotRange{{Start: 0, End: 99}, {Start: 101, End: 16382}}}}, "slots 100-100,16383-16383 are served by no shard"},
		{"no shard", nil, "slots 0-16383 are served by no shard"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := coverageStep("n1:1", tc.shards)
			if tc.missing == "" {
				if step.Err != nil || step.Detail != "all 16384 slots served" {
					t.Fatalf("step %v", step)
				}
				return
			}
			var se *sentinel.StageError
			if !errors.As(step.Err, &se) || se.Stage != stageSlots || se.Server != "n1:1" || !strings.Contains(step.Detail, tc.missing) {
				t.Fatalf("step %v, want a SLOTS failure on n1:1 saying %q", step, tc.missing)
			}
		})
	}
}

func TestAgreementStep(t *testing.T) {
	a := []clusterShard{{Slots: []redis.SlotRange{{Start: 0, End: 16383}}, Master: "n1:1", Replicas: []string{"n2:2"}}}
	b := []clusterShard{{Slots: []redis.SlotRange{{Start: 0, End: 16383}}, Master: "n2:2", Replicas: []string{"n1:1"}}}
	down := clusterSeed{Addr: "n3:3", Step: failedStep(stageNode, "n3:3", errors.New("refused"))}
	for _, tc := range []struct {
		name  string
		seeds []clusterSeed
		want  string // the detail's pattern
		fail  bool
	}{
		{"all agree, one down", []clusterSeed{{Addr: "n1:1", Shards: a}, {Addr: "n2:2", Shards: a}, down},
			`^2 seed\(s\) agree: 0-16383 on n1:1$`, false},
		{"one has not heard of a failover", []clusterSeed{{Addr: "n1:1", Shards: a}, {Addr: "n2:2", Shards: b}},
			`the seeds disagree: n1:1 sees 0-16383 on n1:1, but n2:2 sees 0-16383 on n2:2$`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			step := agreementStep(tc.seeds, tc.seeds[0])
			if (step.Err != nil) != tc.fail || !regexp.MustCompile(tc.want).MatchString(step.Detail) {
				t.Fatalf("step %v (err %v), want fail=%v and %q", step, step.Err, tc.fail, tc.want)
			}
		})
	}
}

// TestShardProbeKey: the write probe's key of a shard hashes to one of
// its slots, also for a shard of one slot.
func TestShardProbeKey(t *testing.T) {
	for _, ranges := range [][]redis.SlotRange{{{Start: 0, End: 5460}}, {{Start: 16383, End: 16383}}, {{Start: 7, End: 7}, {Start: 9000, End: 9001}}} {
		s := clusterShard{Slots: ranges}
		key, ok := s.probeKey()
		slot := int64(cluster.Slot("rediskit:" + key))
		served := false
		for _, r := range ranges {
			served = served || slot >= r.Start && slot <= r.End
		}
		if !ok || !served {
			t.Errorf("shard %s: key %q (ok %v) is in slot %d", s.slotsText(), key, ok, slot)
		}
	}
	if _, ok := (clusterShard{}).probeKey(); ok {
		t.Error("a shard without slots has a probe key")
	}
}

// clusterLabConfig is a 3×1 cluster with a password and 10 ms on every
// node, so that each shard elects its replica (as passwordLab says: on
// bare loopback one slow PING excludes a replica).
func clusterLabConfig() lab.Config {
	cfg := lab.Cluster(3, 1)
	cfg.Password = dataSecret
	for range 6 {
		cfg.Nodes = append(cfg.Nodes, lab.NodeConfig{Latency: 10 * time.Millisecond})
	}
	return cfg
}

// clusterURL is the lab's redis+cluster:// URL without its password.
func clusterURL(l *lab.Lab) string {
	return "redis+cluster://" + strings.Join(l.ClusterAddrs(), ",")
}

// TestClusterCommands runs check, probe and health on a 3×1 lab cluster
// with a password from the environment: healthy, then with a dead seed,
// then with one shard's master out of memory.
func TestClusterCommands(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l := lab.New(t, clusterLabConfig())
	t.Logf("server %s", l.ServerVersion())
	url := clusterURL(l)
	addrs := l.ClusterAddrs()
	env := envPasswords[:1]
	var masters []string
	for _, id := range l.ShardIDs() {
		m, err := l.ShardMaster(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		masters = append(masters, m.Addr())
	}
	q := regexp.QuoteMeta

	t.Run("check --write", func(t *testing.T) {
		out := mustRun(t, ctx, env, exitOK, "check", url, "--write")
		for _, a := range addrs {
			matches(t, out, `(?m)^ok   NODE     `+q(a)+` .* (Redis|Valkey) [0-9.]+, PING .*, 3 shard\(s\)$`,
				`(?m)^ok   ROLE     `+q(a)+` .* (master, offset \d+, 1 connected replica\(s\)|slave of .*, offset \d+, link connected)$`)
		}
		matches(t, out, `(?m)^ok   SHARDS   .* 6 seed\(s\) agree: 0-\d+ on [0-9.:]+; \d+-\d+ on [0-9.:]+; \d+-16383 on [0-9.:]+$`,
			`(?m)^ok   SLOTS    .* all 16384 slots served$`,
			`(?m)^ok: 6 seed\(s\) agree, every slot served, every shard's nodes answered ROLE; writable$`)
		for _, m := range masters {
			matches(t, out, `(?m)^ok   WRITE    `+q(m)+` .* SET rediskit:health:\{\d+\}:write \(TTL 1m0s\) accepted$`)
		}
		if n := len(regexp.MustCompile(`(?m)^ok   REPLICA  .* slots [0-9-]+: (read-only work would use replica|no replica elected)`).FindAllString(out, -1)); n != 3 {
			t.Errorf("%d REPLICA lines, want one per shard:\n%s", n, out)
		}
	})

	t.Run("check --json, go-redis's addr= form", func(t *testing.T) {
		var rep checkJSON
		runJSON(t, ctx, env, exitOK, &rep, "check", "redis://"+addrs[0]+"?addr="+addrs[1])
		stages := map[string]int{}
		for _, s := range rep.Steps {
			stages[s.Stage]++
			if !s.OK {
				t.Errorf("step failed: %+v", s)
			}
		}
		want := map[string]int{"NODE": 2, "SHARDS": 1, "SLOTS": 1, "ROLE": 6, "REPLICA": 3}
		if !rep.OK || rep.Kind != "cluster" || len(stages) != len(want) {
			t.Fatalf("report %+v", rep)
		}
		for stage, n := range want {
			if stages[stage] != n {
				t.Errorf("%d %s steps, want %d", stages[stage], stage, n)
			}
		}
	})

	t.Run("probe", func(t *testing.T) {
		svg := filepath.Join(t.TempDir(), "probe.svg")
		out := mustRun(t, ctx, env, exitOK, "probe", url, "--interval", "200ms", "--svg", svg)
		// One round: each shard's nodes side by side, no election change.
		contains(t, out, "RTT per node drawn in "+svg)
		checkProbeFigure(t, svg, masters, 0)
		for _, m := range masters {
			matches(t, out, `(?m)^\S+  shard of slots [0-9-]+, master `+q(m)+`, every 200ms$`,
				`(?m)^`+q(m)+` +master +\d`)
		}
		var rep clusterProbeJSON
		runJSON(t, ctx, env, exitOK, &rep, "probe", url)
		if len(rep.Shards) != 3 {
			t.Fatalf("%d shards, want 3: %+v", len(rep.Shards), rep)
		}
		for _, sh := range rep.Shards {
			if len(sh.Nodes) != 2 || sh.Nodes[0].Addr != sh.Master || !sh.Nodes[0].Healthy || sh.Nodes[0].Samples == 0 || sh.Nodes[1].Role != "replica" {
				t.Errorf("shard %s: nodes %+v", sh.Slots, sh.Nodes)
			}
		}
	})

	t.Run("health --write", func(t *testing.T) {
		out := mustRun(t, ctx, env, exitOK, "health", url, "--write")
		matches(t, out, `(?m)^ok: 3 of 3 shard\(s\) healthy$`)
		var rep clusterHealthJSON
		runJSON(t, ctx, env, exitOK, &rep, "health", url)
		if rep.Verdict != verdictOK || !rep.OK || len(rep.Shards) != 3 {
			t.Fatalf("report %+v", rep)
		}
		for _, sh := range rep.Shards {
			if sh.State != "reachable" || sh.Slots == "" {
				t.Errorf("shard %+v", sh)
			}
		}
	})

	dead := deadAddr(t)
	t.Run("a dead seed", func(t *testing.T) {
		out := mustRun(t, ctx, env, exitFailed, "check", "redis+cluster://"+dead+","+addrs[0])
		matches(t, out, `(?m)^FAIL NODE     `+q(dead)+` .* NODE failed on `+q(dead)+`: `,
			`(?m)^ok   NODE     `+q(addrs[0])+` `, `(?m)^ok   SHARDS   .* 1 seed\(s\) agree`)
		var rep clusterHealthJSON
		runJSON(t, ctx, env, exitFailed, &rep, "health", "redis+cluster://"+dead)
		if rep.Verdict != verdictDown || rep.OK || !strings.Contains(rep.Error, dead) {
			t.Fatalf("report %+v", rep)
		}
	})

	t.Run("one shard out of memory", func(t *testing.T) {
		m, err := l.ShardMaster(ctx, l.ShardIDs()[1])
		if err != nil {
			t.Fatal(err)
		}
		admin := redis.NewClient(&redis.Options{Addr: m.Addr(), Password: dataSecret})
		defer admin.Close()
		if err := admin.ConfigSet(ctx, "maxmemory", "1").Err(); err != nil {
			t.Fatal(err)
		}
		defer admin.ConfigSet(context.Background(), "maxmemory", "0")
		out := mustRun(t, ctx, env, exitFailed, "health", url, "--write")
		matches(t, out, `(?m)^slots [0-9-]+: out-of-memory master `+q(m.Addr())+` `, `(?m)^degraded: 2 of 3 shard\(s\) healthy$`)
		out = mustRun(t, ctx, env, exitFailed, "check", url, "--write")
		matches(t, out, `(?m)^FAIL WRITE    `+q(m.Addr())+` .* OOM`)
		if n := strings.Count(out, "ok   WRITE"); n != 2 {
			t.Errorf("%d shards writable, want 2:\n%s", n, out)
		}
	})
}
