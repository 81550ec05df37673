package main

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
)

// maxTagTries bounds the search for a hash tag whose slot is on the
// drill's shard: a shard of one slot takes 16,384 tries on average.
const maxTagTries = 1 << 22

// drillShard is a cluster's shard as CLUSTER SHARDS names it: the drill's
// keys live on one, and its failover promotes one of its replicas.
type drillShard struct {
	index    int // in address order of the masters
	master   string
	replicas []string // the online ones
	slots    []redis.SlotRange
}

func (s *drillShard) has(slot int) bool {
	return slices.ContainsFunc(s.slots, func(r redis.SlotRange) bool { return int64(slot) >= r.Start && int64(slot) <= r.End })
}

// placeKeys picks the cluster drill's shard (--shard, or a random one)
// and names the keys with a hash tag whose slot that shard serves, so the
// load and the failover meet on it.
func (d *drill) placeKeys(ctx context.Context) error {
	shards, err := clusterShards(ctx, d.cc, d.t)
	if err != nil {
		return fmt.Errorf("reading the cluster's shards: %w", err)
	}
	if len(shards) == 0 {
		return fmt.Errorf("%s: CLUSTER SHARDS names no master serving slots", d.t)
	}
	i := d.f.shard
	switch {
	case i >= len(shards):
		return usagef("--shard %d: the cluster has %d shards (0 … %d, its masters in address order)", i, len(shards), len(shards)-1)
	case i < 0:
		i = rand.IntN(len(shards))
	}
	sh := &shards[i]
	if d.f.failover && len(sh.replicas) == 0 {
		return usagef("shard %d (master %s) has no online replica to fail over to", i, sh.master)
	}
	for range maxTagTries {
		runID := newRunID()
		if sh.has(cluster.Slot("{" + runID + "}")) {
			d.nameKeys(runID, "rediskit:drill:{"+runID+"}")
			d.shard, d.rep.Shard, d.rep.ShardMaster = sh, &sh.index, sh.master
			return nil
		}
	}
	return fmt.Errorf("found no hash tag for shard %d's slots in %d tries", i, maxTagTries)
}

// clusterShards reads CLUSTER SHARDS through the client: the shards with
// a master and slots, sorted by the master's address.
func clusterShards(ctx context.Context, c *cluster.Client, t *target) ([]drillShard, error) {
	sctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	reply, err := c.ClusterShards(sctx).Result()
	if err != nil {
		return nil, err
	}
	tlsCfg, err := t.cfg.TLSConfig()
	if err != nil {
		return nil, err
	}
	var out []drillShard
	for _, s := range reply {
		sh := drillShard{slots: s.Slots}
		for _, n := range s.Nodes {
			addr := shardNodeAddr(n, tlsCfg != nil)
			switch {
			case n.Role == "master" && n.Health != "failed":
				sh.master = addr
			case n.Role == "replica" && n.Health == "online":
				sh.replicas = append(sh.replicas, addr)
			}
		}
		if sh.master != "" && len(sh.slots) > 0 {
			slices.Sort(sh.replicas)
			out = append(out, sh)
		}
	}
	slices.SortFunc(out, func(a, b drillShard) int { return strings.Compare(a.master, b.master) })
	for i := range out {
		out[i].index = i
	}
	return out, nil
}

// shardNodeAddr is where clients reach a CLUSTER SHARDS node, as package
// cluster reads it: its endpoint (its IP without one) and its port, the
// TLS one with tls.
func shardNodeAddr(n redis.Node, tls bool) string {
	port := n.Port
	if tls && n.TLSPort > 0 || port <= 0 {
		port = n.TLSPort
	}
	return net.JoinHostPort(cmp.Or(strings.Trim(n.Endpoint, "?"), n.IP), strconv.FormatInt(port, 10))
}

// observeCluster records the cluster client's events that tell a
// failover's story, and the first master change away from the drill's
// shard's master: the one the failover check waits for.
func (d *drill) observeCluster(ev cluster.Event) {
	switch ev.Kind {
	case cluster.EventMasterChanged, cluster.EventSlotsMoved, cluster.EventMasterFailing, cluster.EventMasterRecovered,
		cluster.EventWriteRefused, cluster.EventWriteRerun, cluster.EventWriteNotDurable:
		d.event(ev.Time, ev.Kind.String(), eventDetail(ev.String(), ev.Time))
	}
	if ev.Kind == cluster.EventMasterChanged {
		d.evMu.Lock()
		if d.switchedAt.IsZero() && d.oldMaster != "" && ev.OldMaster == d.oldMaster {
			d.switchedAt, d.switchedTo = ev.Time, ev.Master
		}
		d.evMu.Unlock()
	}
}
