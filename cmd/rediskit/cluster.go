package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
)

// The stages of check's trace on a cluster, besides ROLE, REPLICA and WRITE.
const (
	stageNode   sentinel.Stage = "NODE"   // a seed node answered: RTT, version, CLUSTER SHARDS
	stageShards sentinel.Stage = "SHARDS" // the seeds agree on the shards and their masters
	stageSlots  sentinel.Stage = "SLOTS"  // every slot is served
)

// clusterShard is one shard as a node's CLUSTER SHARDS has it.
type clusterShard struct {
	Slots    []redis.SlotRange
	Master   string
	Replicas []string
}

// slotsText is the shard's slot ranges, "0-5460,10923-16383".
func (s clusterShard) slotsText() string { return rangesText(s.Slots) }

func rangesText(rs []redis.SlotRange) string {
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		parts = append(parts, fmt.Sprintf("%d-%d", r.Start, r.End))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ",")
}

// probeKey is a key of the write probe (under guard's key prefix) that
// hashes to one of the shard's slots: a hash tag found by counting up, so
// the same shard gets the same key every run.
func (s clusterShard) probeKey() (string, bool) {
	for i := range 1 << 20 {
		tag := strconv.Itoa(i)
		slot := int64(cluster.Slot(tag))
		for _, r := range s.Slots {
			if slot >= r.Start && slot <= r.End {
				return "health:{" + tag + "}:write", true
			}
		}
	}
	return "", false
}

// clusterSeed is what one seed node said.
type clusterSeed struct {
	Addr   string
	Step   sentinel.Step
	Shards []clusterShard
}

// nodeClient is a go-redis client of one cluster node with the target's
// credentials, TLS and timeouts, without retries, its replies bounded
// (respguard). The caller closes it.
func (t *target) nodeClient(addr string) (*redis.Client, error) {
	tlsCfg, err := t.cfg.TLSConfig()
	if err != nil {
		return nil, err
	}
	return redis.NewClient(respguard.Guard(redisopt.Inner(&redis.Options{
		Addr: addr, Username: t.cfg.Username, Password: t.cfg.Password, TLSConfig: tlsCfg, ClientName: t.cfg.ClientName,
		DialTimeout:  orDefault(t.cfg.DialTimeout, t.timeout),
		ReadTimeout:  orDefault(t.cfg.ReadTimeout, t.timeout),
		WriteTimeout: orDefault(t.cfg.WriteTimeout, t.timeout),
	}))), nil
}

// onNode runs fn on a client of addr as the stage of a trace, timed:
// fn returns the step's detail.
func onNode(ctx context.Context, t *target, stage sentinel.Stage, addr string, fn func(context.Context, *redis.Client) (string, error)) sentinel.Step {
	step := sentinel.Step{Stage: stage, Server: addr}
	c, err := t.nodeClient(addr)
	if err == nil {
		defer c.Close()
		began := time.Now()
		step.Detail, err = fn(ctx, c)
		step.Took = time.Since(began)
	}
	if err != nil {
		step.Err = &sentinel.StageError{Stage: stage, Server: addr, Err: err}
		step.Detail = step.Err.Error()
	}
	return step
}

// askSeeds asks every seed for PING, INFO server and CLUSTER SHARDS.
func askSeeds(ctx context.Context, t *target) []clusterSeed {
	seeds := make([]clusterSeed, 0, len(t.cfg.Addrs))
	for _, addr := range t.cfg.Addrs {
		s := clusterSeed{Addr: addr}
		s.Step = onNode(ctx, t, stageNode, addr, func(ctx context.Context, c *redis.Client) (string, error) {
			began := time.Now()
			if err := c.Ping(ctx).Err(); err != nil {
				return "", err
			}
			rtt := time.Since(began)
			info, err := c.Info(ctx, "server").Result()
			if err != nil {
				return "", err
			}
			v, err := redisinfo.ParseServerVersion(redisinfo.ParseInfo(info))
			if err != nil {
				return "", err
			}
			shards, err := c.ClusterShards(ctx).Result()
			if err != nil {
				return "", err
			}
			s.Shards = shardsOf(shards, t.cfg.TLS)
			return fmt.Sprintf("%s, PING %v, %d shard(s)", v, rtt.Round(10*time.Microsecond), len(s.Shards)), nil
		})
		seeds = append(seeds, s)
	}
	return seeds
}

// shardsOf reads a CLUSTER SHARDS reply, in slot order.
func shardsOf(reply []redis.ClusterShard, tls bool) []clusterShard {
	var out []clusterShard
	for _, sh := range reply {
		s := clusterShard{Slots: sh.Slots}
		for _, n := range sh.Nodes {
			addr, ok := cluster.ShardNodeAddr(n, tls)
			if !ok {
				continue // not reachable (yet): no ID, endpoint or port
			}
			if n.Role == "master" {
				s.Master = addr
			} else {
				s.Replicas = append(s.Replicas, addr)
			}
		}
		slices.Sort(s.Replicas)
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b clusterShard) int { return int(firstSlot(a) - firstSlot(b)) })
	return out
}

func firstSlot(s clusterShard) int64 {
	if len(s.Slots) == 0 {
		return cluster.Slots
	}
	return s.Slots[0].Start
}

// shardsText is what agreement compares: each shard's slots and master.
func shardsText(shards []clusterShard) string {
	parts := make([]string, 0, len(shards))
	for _, s := range shards {
		parts = append(parts, s.slotsText()+" on "+s.Master)
	}
	return strings.Join(parts, "; ")
}

// clusterView is the first answering seed's shards (nil when none
// answered), and the steps saying each seed's answer, whether they agree,
// and which slots no shard serves.
func clusterView(ctx context.Context, t *target) ([]clusterShard, []sentinel.Step) {
	var steps []sentinel.Step
	var ref *clusterSeed
	seeds := askSeeds(ctx, t)
	for i, s := range seeds {
		steps = append(steps, s.Step)
		if s.Step.Err == nil && ref == nil {
			ref = &seeds[i]
		}
	}
	if ref == nil {
		return nil, steps
	}
	steps = append(steps, agreementStep(seeds, *ref), coverageStep(ref.Addr, ref.Shards))
	return ref.Shards, steps
}

// noSeed is why clusterView found no shards: the first seed's failure.
func noSeed(steps []sentinel.Step) error {
	return cmp.Or(firstStepError(steps), errors.New("no seed node answered"))
}

// agreementStep says whether every answering seed sees the shards (slots
// and masters) ref sees, or which do not and what they see.
func agreementStep(seeds []clusterSeed, ref clusterSeed) sentinel.Step {
	want := shardsText(ref.Shards)
	var differ []string
	answered := 0
	for _, s := range seeds {
		if s.Step.Err == nil {
			answered++
		}
		if s.Step.Err == nil && shardsText(s.Shards) != want {
			differ = append(differ, fmt.Sprintf("%s sees %s", s.Addr, shardsText(s.Shards)))
		}
	}
	if len(differ) > 0 {
		return failedStep(stageShards, ref.Addr, fmt.Errorf("the seeds disagree: %s sees %s, but %s", ref.Addr, want, strings.Join(differ, "; ")))
	}
	return sentinel.Step{Stage: stageShards, Server: ref.Addr, Detail: fmt.Sprintf("%d seed(s) agree: %s", answered, want)}
}

// coverageStep says whether the shards serve all 16384 slots, or which
// ranges none serves.
func coverageStep(addr string, shards []clusterShard) sentinel.Step {
	step := sentinel.Step{Stage: stageSlots, Server: addr, Detail: fmt.Sprintf("all %d slots served", cluster.Slots)}
	var served [cluster.Slots]bool
	for _, s := range shards {
		for _, r := range s.Slots {
			for slot := max(r.Start, 0); slot <= min(r.End, cluster.Slots-1); slot++ {
				served[slot] = true
			}
		}
	}
	var missing []redis.SlotRange
	for slot := range int64(cluster.Slots) {
		switch {
		case served[slot]:
		case len(missing) > 0 && missing[len(missing)-1].End == slot-1:
			missing[len(missing)-1].End = slot
		default:
			missing = append(missing, redis.SlotRange{Start: slot, End: slot})
		}
	}
	if len(missing) > 0 {
		return failedStep(stageSlots, addr, fmt.Errorf("slots %s are served by no shard", rangesText(missing)))
	}
	return step
}

// roleStep runs ROLE on a shard's node and says its role, offset and, on
// a replica, its master link.
func roleStep(ctx context.Context, t *target, addr string) sentinel.Step {
	return onNode(ctx, t, sentinel.StageRole, addr, func(ctx context.Context, c *redis.Client) (string, error) {
		cmd := c.Do(ctx, "ROLE")
		r, err := redisinfo.ParseRole(cmd)
		if err != nil {
			return "", err
		}
		if r.Role == "master" {
			return fmt.Sprintf("master, offset %d, %d connected replica(s)", r.Offset, len(r.Replicas)), nil
		}
		return fmt.Sprintf("%s of %s, offset %d, link %s", r.Role, r.MasterAddr, r.Offset, r.LinkState), nil
	})
}

// clusterElection is a rediskit cluster client whose per-shard replica
// elections have finished their first probe round, with the tables of
// that round (by master). A read per shard under ReplicaPreferred starts
// the elections. The caller closes the client.
func clusterElection(ctx context.Context, t *target, shards []clusterShard, cfg replica.Config) (*cluster.Client, map[string][]replica.NodeStatus, error) {
	cfg.ProbeTimeout = t.timeout
	cc, err := t.clusterClient(cluster.Config{ReadFrom: cluster.ReplicaPreferred, Replica: cfg})
	if err != nil {
		return nil, nil, usageError{err}
	}
	// Each read is bounded: a refused one waits up to WriteHoldTimeout.
	rctx, cancel := context.WithTimeout(cluster.WithReadFrom(ctx, cluster.ReplicaPreferred), t.timeout)
	defer cancel()
	for _, s := range shards {
		if key, ok := s.probeKey(); ok {
			_ = cc.Get(rctx, key).Err() // only starts the election: its answer does not matter
		}
	}
	interval := orDefault(cfg.ProbeInterval, replica.DefaultProbeInterval)
	limit := time.Now().Add(interval + 4*t.timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		tables := cc.ReplicaTables()
		if probed(tables, len(shards)) {
			return cc, tables, nil
		}
		if time.Now().After(limit) {
			return cc, tables, fmt.Errorf("the replica elections did not finish a probe round within %v", interval+4*t.timeout)
		}
		select {
		case <-ctx.Done():
			return cc, tables, ctx.Err()
		case <-tick.C:
		}
	}
}

// probed reports tables for at least shards shards, every node of which
// has been probed.
func probed(tables map[string][]replica.NodeStatus, shards int) bool {
	if len(tables) < shards {
		return false
	}
	for _, rows := range tables {
		for _, n := range rows {
			if n.LastProbe.IsZero() {
				return false
			}
		}
	}
	return true
}

// replicaStep says which replica a shard's reads would use, from its
// election table.
func replicaStep(s clusterShard, table []replica.NodeStatus) sentinel.Step {
	step := sentinel.Step{Stage: sentinel.StageReplica, Server: s.Master}
	var elected []string
	for _, n := range table {
		if n.Elected {
			elected = append(elected, n.Addr)
		}
	}
	switch {
	case table == nil:
		step.Detail = fmt.Sprintf("slots %s: no election table; reads would use the master", s.slotsText())
	case len(elected) > 0:
		step.Server = elected[0]
		step.Detail = fmt.Sprintf("slots %s: read-only work would use replica %s", s.slotsText(), addrList(elected))
	default:
		step.Detail = fmt.Sprintf("slots %s: no replica elected; read-only work would use the master %s", s.slotsText(), s.Master)
	}
	return step
}

// clusterCheckSteps is check's trace on a cluster: the seeds, their
// agreement and the slot coverage, each shard's nodes' ROLE, the replica
// each shard's reads would use and, with write, each shard's write probe.
func clusterCheckSteps(ctx context.Context, t *target, write bool, prefix string) []sentinel.Step {
	shards, steps := clusterView(ctx, t)
	if shards == nil {
		return steps
	}
	for _, s := range shards {
		for _, addr := range append([]string{s.Master}, s.Replicas...) {
			steps = append(steps, roleStep(ctx, t, addr))
		}
	}
	cc, tables, err := clusterElection(ctx, t, shards, replica.Config{})
	if cc != nil {
		defer cc.Close()
	}
	if err != nil {
		steps = append(steps, failedStep(sentinel.StageReplica, t.String(), err))
	} else {
		for _, s := range shards {
			steps = append(steps, replicaStep(s, tables[s.Master]))
		}
	}
	if write {
		for _, s := range shards {
			steps = append(steps, shardWriteStep(ctx, t, s, prefix))
		}
	}
	return steps
}

// shardWriteStep is the write probe on a shard's master, with a key of
// the shard's slots.
func shardWriteStep(ctx context.Context, t *target, s clusterShard, prefix string) sentinel.Step {
	key, ok := s.probeKey()
	if !ok {
		return failedStep(stageWrite, s.Master, fmt.Errorf("the shard serves no slot: no key to probe"))
	}
	return writeProbeStep(ctx, t, s.Master, prefix, key)
}

func failedStep(stage sentinel.Stage, server string, err error) sentinel.Step {
	e := &sentinel.StageError{Stage: stage, Server: server, Err: err}
	return sentinel.Step{Stage: stage, Server: server, Err: e, Detail: e.Error()}
}

// clusterHealthJSON is health's --json report on a cluster: a report per
// shard (its master's), and the verdict over them.
type clusterHealthJSON struct {
	Target  string       `json:"target"`
	Verdict string       `json:"verdict"`
	OK      bool         `json:"ok"`
	Shards  []healthJSON `json:"shards"`
	Error   string       `json:"error,omitempty"`
}

// The verdicts of health on a cluster.
const (
	verdictOK       = "ok"       // every shard's master is healthy
	verdictDegraded = "degraded" // some are not
	verdictDown     = "down"     // none is, or no seed answered
)

// runClusterHealth runs guard's check on every shard's master (the write
// probe with a key of the shard's slots) and judges the cluster: ok,
// degraded or down.
func runClusterHealth(ctx context.Context, out io.Writer, t *target, write bool, prefix string, asJSON bool) error {
	shards, steps := clusterView(ctx, t)
	rep := clusterHealthJSON{Target: t.String(), Shards: []healthJSON{}}
	var lines []string
	healthy := 0
	for _, s := range shards {
		key, _ := s.probeKey()
		r, probeKey, err := checkNode(ctx, t, s.Master, prefix, key, write)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return usageError{err}
		}
		h := healthOf(t, s.Master, r, write, probeKey)
		h.Slots = s.slotsText()
		if h.OK {
			healthy++
		}
		rep.Shards = append(rep.Shards, h)
		r.Server = "master " + s.Master
		lines = append(lines, fmt.Sprintf("slots %s: %s", h.Slots, r))
	}
	switch {
	case shards == nil:
		rep.Verdict = verdictDown
		rep.Error = noSeed(steps).Error()
	case healthy == len(shards):
		rep.Verdict, rep.OK = verdictOK, true
	case healthy == 0:
		rep.Verdict = verdictDown
	default:
		rep.Verdict = verdictDegraded
	}
	if asJSON {
		if err := writeJSON(out, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "health %s\n", rep.Target)
		for _, l := range lines {
			fmt.Fprintln(out, l)
		}
		if rep.Error != "" {
			fmt.Fprintln(out, rep.Error)
		}
		fmt.Fprintf(out, "%s: %d of %d shard(s) healthy\n", rep.Verdict, healthy, len(shards))
	}
	if !rep.OK {
		return checkFailed{fmt.Errorf("cluster %s: %d of %d shard(s) healthy", rep.Verdict, healthy, len(shards))}
	}
	return nil
}

// clusterProbeJSON is probe's --json report on a cluster (one per round
// with --watch): each shard's election table.
type clusterProbeJSON struct {
	Target string              `json:"target"`
	At     time.Time           `json:"at"`
	Shards []clusterShardProbe `json:"shards"`
}

type clusterShardProbe struct {
	Slots  string          `json:"slots"`
	Master string          `json:"master"`
	Nodes  []probeNodeJSON `json:"nodes"`
}

// runClusterProbe runs the cluster client's per-shard replica elections
// and prints each shard's RTT table after the first round; with --watch
// again every --interval until Ctrl-C. Without --watch the exit code is
// probeVerdict's over every shard.
func runClusterProbe(ctx context.Context, out io.Writer, t *target, f *probeFlags) (err error) {
	shards, steps := clusterView(ctx, t)
	if shards == nil {
		return checkFailed{noSeed(steps)}
	}
	titles := make([]string, len(shards))
	for i, s := range shards {
		titles[i] = fmt.Sprintf("rediskit probe, shard of slots %s (master %s)", s.slotsText(), s.Master)
	}
	fig := newProbeRecord(f, titles...)
	defer func() { err = cmp.Or(err, fig.write(out, f)) }()
	cc, tables, err := clusterElection(ctx, t, shards, replica.Config{ProbeInterval: f.interval, MaxStaleness: f.maxStaleness})
	if cc != nil {
		defer cc.Close()
	}
	switch {
	case err != nil && ctx.Err() != nil && f.watch:
		return nil // Ctrl-C ends --watch
	case err != nil && ctx.Err() != nil:
		return ctx.Err()
	case err != nil:
		return checkFailed{err}
	}
	for {
		rep := clusterProbeJSON{Target: t.String(), At: time.Now(), Shards: []clusterShardProbe{}}
		var verdicts []error
		var b strings.Builder
		for i, s := range shards {
			table := tables[s.Master]
			fig.round(i, rep.At, table)
			sp := clusterShardProbe{Slots: s.slotsText(), Master: s.Master, Nodes: []probeNodeJSON{}}
			for _, n := range table {
				sp.Nodes = append(sp.Nodes, nodeJSON(n))
			}
			rep.Shards = append(rep.Shards, sp)
			fmt.Fprintf(&b, "%s  shard of slots %s, master %s, every %v\n", rep.At.Format("15:04:05.000"), sp.Slots, s.Master, f.interval)
			writeProbeTable(&b, table, nil)
			b.WriteString("\n")
			if err := probeVerdict(table); err != nil || table == nil {
				verdicts = append(verdicts, fmt.Errorf("slots %s: %w", sp.Slots, cmp.Or(err, errors.New("no election table"))))
			}
		}
		switch {
		case f.json && f.watch:
			err = writeJSONLine(out, rep)
		case f.json:
			err = writeJSON(out, rep)
		default:
			_, err = io.WriteString(out, b.String())
		}
		if err != nil {
			return err
		}
		if !f.watch {
			if len(verdicts) > 0 {
				return checkFailed{errors.Join(verdicts...)}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return nil // Ctrl-C ends --watch
		case <-time.After(f.interval):
		}
		tables = cc.ReplicaTables()
	}
}
