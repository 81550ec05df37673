package lab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisinfo"
)

// Cluster defaults and limits.
const (
	// DefaultClusterNodeTimeout is the lab's cluster-node-timeout. Redis's
	// own is 15 s; with 1 s a failed master is marked FAIL after about a
	// second and its replica is promoted a second or two later.
	DefaultClusterNodeTimeout = 1 * time.Second
	// ClusterSlots is the number of hash slots of a Redis Cluster.
	ClusterSlots = 16384
	// clusterHostSpan is how many addresses a cluster lab with Partitions
	// keeps for its nodes (AddShard takes them from there); its client
	// endpoints come after them.
	clusterHostSpan = 128
)

// Cluster is a Redis Cluster of shards masters with replicas replicas
// each, the slots split evenly between the masters in shard order, every
// node behind a proxy of its own for its client port and another for its
// cluster bus.
func Cluster(shards, replicas int) Config {
	return Config{Shards: shards, Replicas: replicas}
}

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=FailoverMode -linecomment

// FailoverMode is how ClusterFailover promotes a replica (the options of
// CLUSTER FAILOVER).
type FailoverMode int

const (
	// FailoverGraceful is CLUSTER FAILOVER: the master stops writes, the
	// replica catches up with its offset, then takes over. Nothing
	// acknowledged is lost.
	FailoverGraceful FailoverMode = iota // graceful
	// FailoverForce is CLUSTER FAILOVER FORCE: the replica does not wait
	// for its master (which may be down), but is still elected by the
	// masters.
	FailoverForce // force
	// FailoverTakeover is CLUSTER FAILOVER TAKEOVER: the replica takes
	// the slots with a new epoch of its own, without any election.
	FailoverTakeover // takeover
)

// Shard is a node's shard in a cluster lab (its position in ShardIDs when
// no shard was removed); -1 outside a cluster.
func (n *Node) Shard() int { return n.shard }

// ClusterID is the node's cluster node ID (CLUSTER MYID), "" outside a
// cluster.
func (n *Node) ClusterID() string { return n.clusterID }

// BusProxy is the proxy in front of the node's cluster bus, nil outside a
// cluster.
func (n *Node) BusProxy() *Proxy { return n.busProxy }

// ClusterShards runs CLUSTER SHARDS on the node: the cluster as this node
// sees it.
func (n *Node) ClusterShards(ctx context.Context) ([]redis.ClusterShard, error) {
	return n.adminClient().ClusterShards(ctx).Result()
}

// Info returns the fields of INFO section (all of them for "").
func (s *Server) Info(ctx context.Context, section string) (map[string]string, error) {
	args := []any{"INFO"}
	if section != "" {
		args = append(args, section)
	}
	text, err := s.Do(ctx, args...).Text()
	if err != nil {
		return nil, err
	}
	return redisinfo.ParseInfo(text), nil
}

// IsCluster reports whether the lab is a Redis Cluster (Config.Shards).
func (l *Lab) IsCluster() bool { return l.cfg.Shards > 0 }

// ShardIDs are the cluster's shards, in the order they were made (0, 1,
// ... at the start; AddShard appends, RemoveShard takes out). Nil outside
// a cluster.
func (l *Lab) ShardIDs() []int {
	var ids []int
	for _, n := range l.nodes {
		if n.shard >= 0 && !slices.Contains(ids, n.shard) {
			ids = append(ids, n.shard)
		}
	}
	return ids
}

// ShardNodes are the nodes of a shard, the one that started as its master
// first. A failover does not change them: the shard's master is whichever
// of them the cluster says (ShardMaster).
func (l *Lab) ShardNodes(shard int) []*Node {
	var out []*Node
	for _, n := range l.nodes {
		if n.shard == shard {
			out = append(out, n)
		}
	}
	return out
}

// ClusterAddrs are the client addresses (the proxies') of every node of
// the cluster: seeds for a cluster client.
func (l *Lab) ClusterAddrs() []string {
	addrs := make([]string, 0, len(l.nodes))
	for _, n := range l.nodes {
		addrs = append(addrs, n.Addr())
	}
	return addrs
}

// ClusterOptions are go-redis cluster options for the lab, with its
// credentials and TLS, and without retries or redirects followed more than
// once (go-redis's own failover logic is not what a test of rediskit's
// wants to measure).
func (l *Lab) ClusterOptions() *redis.ClusterOptions {
	return &redis.ClusterOptions{
		Addrs:        l.ClusterAddrs(),
		Username:     l.cfg.Username,
		Password:     l.cfg.Password,
		TLSConfig:    l.clientTLS(),
		DialTimeout:  2 * time.Second,
		ReadTimeout:  2 * time.Second,
		WriteTimeout: 2 * time.Second,
		MaxRetries:   -1,
	}
}

// startCluster starts the nodes of every shard, then makes them one
// cluster (see buildCluster).
func (l *Lab) startCluster(ctx context.Context) error {
	nodes, err := l.addShardNodes(l.cfg.Shards)
	if err != nil {
		return err
	}
	if err := l.startNodes(ctx, nodes); err != nil {
		return err
	}
	if err := l.readVersion(ctx, nodes[0]); err != nil {
		return err
	}
	return l.buildCluster(ctx, nodes, true)
}

// addShardNodes makes the nodes (ports, proxies) of count new shards, and
// adds them to the lab, without starting them.
func (l *Lab) addShardNodes(count int) ([]*Node, error) {
	c := l.cfg
	first := 0
	for _, n := range l.nodes {
		first = max(first, n.shard+1)
	}
	var nodes []*Node
	for s := first; s < first+count; s++ {
		for r := 0; r <= c.Replicas; r++ {
			i := l.nextIndex
			if c.Partitions && i >= clusterHostSpan {
				return nil, fmt.Errorf("lab: a cluster with Partitions has %d node addresses; node %d has none", clusterHostSpan, i)
			}
			n := &Node{index: i, shard: s}
			l.nextIndex++
			n.Server = l.newServer(fmt.Sprintf("node%d", i), c.RedisServer, c.Username, c.Password, l.hostAt(i))
			l.nodes = append(l.nodes, n)
			nodes = append(nodes, n)
			if err := n.allocatePort(); err != nil {
				return nil, err
			}
			bus, err := n.pickPort()
			if err != nil {
				return nil, err
			}
			n.busPort = bus
			if n.proxy, err = n.newProxy(); err != nil {
				return nil, err
			}
			n.proxy.SetLatency(c.node(i).Latency)
			busAddr := netip.AddrPortFrom(n.host, uint16(bus)).String() //nolint:gosec // a port from the kernel
			if n.busProxy, err = newProxy(netip.AddrPortFrom(n.host, 0).String(), busAddr, c.Partitions); err != nil {
				return nil, err
			}
			n.busProxy.SetLatency(c.node(i).Latency)
		}
	}
	return nodes, nil
}

// startNodes renders the nodes' configs and starts them in parallel.
func (l *Lab) startNodes(ctx context.Context, nodes []*Node) error {
	confs := make(map[*Node]string, len(nodes))
	for _, n := range nodes {
		confs[n] = l.renderNodeConfig(n, "")
	}
	return parallel(nodes, func(n *Node) error { return n.startWithConfig(ctx, confs[n]) })
}

// clusterLines are the cluster directives of a node's redis.conf: its bus
// on a port of its own, and the proxies' addresses announced, so what
// CLUSTER SHARDS, CLUSTER SLOTS, MOVED and ASK hand to clients, and what
// the nodes dial for their bus, are the proxies.
func (l *Lab) clusterLines(b *strings.Builder, n *Node) {
	line := func(format string, args ...any) { fmt.Fprintf(b, format+"\n", args...) }
	timeout := l.cfg.ClusterNodeTimeout
	if timeout <= 0 {
		timeout = DefaultClusterNodeTimeout
	}
	host, port, _ := net.SplitHostPort(n.proxy.Addr())
	_, busPort, _ := net.SplitHostPort(n.busProxy.Addr())
	line("cluster-enabled yes")
	line("cluster-config-file nodes.conf")
	line("cluster-node-timeout %d", timeout.Milliseconds())
	line("cluster-port %d", n.busPort)
	line("cluster-announce-ip %s", host)
	if l.cfg.TLS {
		line("cluster-announce-tls-port %s", port)
		line("tls-cluster yes")
	} else {
		line("cluster-announce-port %s", port)
	}
	line("cluster-announce-bus-port %s", busPort)
	// The shards stay as the test made them: no replica moves to a master
	// left without one, and a master that lost its slots stays a master.
	line("cluster-allow-replica-migration no")
	line("cluster-migration-barrier 999")
}

// buildCluster joins nodes into the cluster: each learns its ID, the new
// masters take their slots (all of them when assign, split evenly) with a
// config epoch of their own, every node meets every other, the replicas
// replicate their shard's master, and then it waits until the cluster is
// ready (ClusterReady).
func (l *Lab) buildCluster(ctx context.Context, nodes []*Node, assign bool) error {
	for _, n := range nodes {
		id, err := n.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("lab: %s CLUSTER MYID: %w", n.name, err)
		}
		n.clusterID = id
	}
	masters := shardFirsts(nodes)
	if assign {
		for i, m := range masters {
			// Distinct epochs before the nodes meet: no collision for
			// the cluster to resolve, so the slot map is settled at once.
			if err := m.Do(ctx, "CLUSTER", "SET-CONFIG-EPOCH", i+1).Err(); err != nil {
				return fmt.Errorf("lab: %s CLUSTER SET-CONFIG-EPOCH: %w", m.name, err)
			}
			lo, hi := i*ClusterSlots/len(masters), (i+1)*ClusterSlots/len(masters)-1
			if err := m.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", lo, hi).Err(); err != nil {
				return fmt.Errorf("lab: %s CLUSTER ADDSLOTSRANGE %d %d: %w", m.name, lo, hi, err)
			}
		}
	}
	// Every new node meets every node (the new ones and those already in
	// the cluster): no gossip round is needed to learn of anyone.
	err := parallel(nodes, func(n *Node) error {
		for _, o := range l.nodes {
			if o == n || (slices.Contains(nodes, o) && o.index < n.index) {
				continue // o meets n
			}
			host, port, _ := net.SplitHostPort(o.proxy.Addr())
			_, bus, _ := net.SplitHostPort(o.busProxy.Addr())
			if err := n.Do(ctx, "CLUSTER", "MEET", host, port, bus).Err(); err != nil {
				return fmt.Errorf("lab: %s CLUSTER MEET %s: %w", n.name, o.name, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err := poll(ctx, "nodes to meet", func() error { return l.checkMet(ctx) }); err != nil {
		return err
	}
	for _, n := range nodes {
		m := shardFirsts(l.ShardNodes(n.shard))[0]
		if n == m {
			continue
		}
		if err := n.Do(ctx, "CLUSTER", "REPLICATE", m.clusterID).Err(); err != nil {
			return fmt.Errorf("lab: %s CLUSTER REPLICATE %s: %w", n.name, m.name, err)
		}
	}
	if err := l.ClusterReady(ctx); err != nil {
		return err
	}
	return l.waitShardsSynced(ctx, masters)
}

// shardFirsts are the first node of each shard among nodes.
func shardFirsts(nodes []*Node) []*Node {
	var out []*Node
	seen := map[int]bool{}
	for _, n := range nodes {
		if !seen[n.shard] {
			seen[n.shard] = true
			out = append(out, n)
		}
	}
	return out
}

// checkMet fails until every node knows every other as connected.
func (l *Lab) checkMet(ctx context.Context) error {
	for _, n := range l.nodes {
		text, err := n.Do(ctx, "CLUSTER", "NODES").Text()
		if err != nil {
			return fmt.Errorf("%s: %w", n.name, err)
		}
		known := 0
		for row := range strings.Lines(text) {
			f := strings.Fields(row)
			if len(f) < 8 || strings.Contains(f[2], "handshake") || strings.Contains(f[2], "noaddr") || f[7] != "connected" {
				continue
			}
			known++
		}
		if known != len(l.nodes) {
			return fmt.Errorf("%s knows %d of %d nodes", n.name, known, len(l.nodes))
		}
	}
	return nil
}

// waitShardsSynced waits until each shard's replicas have acknowledged
// their master's offset (see waitReplicasSynced: a replica that has just
// synced may not count for WAIT for up to a second). The write is FUNCTION
// FLUSH of no function: replicated, and the keyspace untouched (PUBLISH
// is not replicated in a cluster).
func (l *Lab) waitShardsSynced(ctx context.Context, masters []*Node) error {
	return parallel(masters, func(m *Node) error {
		want := len(l.ShardNodes(m.shard)) - 1
		if want == 0 {
			return nil
		}
		return m.waitAcknowledged(ctx, want, "FUNCTION", "FLUSH")
	})
}

// clusterView is one node's CLUSTER SHARDS reduced to what the nodes must
// agree on: each shard's slots, its master and its healthy replicas.
type clusterView struct {
	text    string         // canonical: equal views have equal texts
	masters map[int]string // slot range start -> master ID
	owner   map[string]string
	covered int
	state   string
}

func (l *Lab) viewOf(ctx context.Context, n *Node) (clusterView, error) {
	info, err := n.Do(ctx, "CLUSTER", "INFO").Text()
	if err != nil {
		return clusterView{}, err
	}
	shards, err := n.ClusterShards(ctx)
	if err != nil {
		return clusterView{}, err
	}
	v := clusterView{masters: map[int]string{}, owner: map[string]string{}, state: redisinfo.ParseInfo(info)["cluster_state"]}
	var rows []string
	for _, s := range shards {
		var master string
		var replicas []string
		for _, sn := range s.Nodes {
			switch {
			case sn.Role == "master" && sn.Health == "online":
				master = sn.ID
			case sn.Role == "replica" && sn.Health == "online":
				replicas = append(replicas, sn.ID)
			}
		}
		slices.Sort(replicas)
		var ranges []string
		for _, r := range s.Slots {
			ranges = append(ranges, fmt.Sprintf("%d-%d", r.Start, r.End))
			v.masters[int(r.Start)] = master
			v.covered += int(r.End - r.Start + 1)
		}
		if master == "" && len(s.Slots) == 0 {
			continue // a shard of failed or forgotten nodes only
		}
		for _, id := range append([]string{master}, replicas...) {
			v.owner[id] = master
		}
		rows = append(rows, fmt.Sprintf("%s %s [%s]", strings.Join(ranges, ","), master, strings.Join(replicas, " ")))
	}
	slices.Sort(rows)
	v.text = strings.Join(rows, "\n")
	return v, nil
}

// liveNodes are the nodes running and not paused.
func (l *Lab) liveNodes() []*Node {
	var out []*Node
	for _, n := range l.nodes {
		if n.Running() && !n.Paused() {
			out = append(out, n)
		}
	}
	return out
}

// agreedView returns the view nodes agree on: every one reports
// cluster_state:ok and the same shards, masters and healthy replicas,
// covering every slot.
func (l *Lab) agreedView(ctx context.Context, nodes []*Node) (clusterView, error) {
	if len(nodes) == 0 {
		return clusterView{}, errors.New("no node is running")
	}
	var first clusterView
	for i, n := range nodes {
		v, err := l.viewOf(ctx, n)
		if err != nil {
			return clusterView{}, fmt.Errorf("%s: %w", n.name, err)
		}
		if v.state != "ok" {
			return clusterView{}, fmt.Errorf("%s: cluster_state %s", n.name, v.state)
		}
		if v.covered != ClusterSlots {
			return clusterView{}, fmt.Errorf("%s: %d of %d slots served", n.name, v.covered, ClusterSlots)
		}
		if i == 0 {
			first = v
			continue
		}
		if v.text != first.text {
			return clusterView{}, fmt.Errorf("%s and %s disagree:\n%s\nand\n%s", nodes[0].name, n.name, first.text, v.text)
		}
	}
	return first, nil
}

// ClusterReady waits until every running node (not killed, not paused)
// reports cluster_state:ok and they all agree on the slot map, on each
// shard's master and on its healthy replicas; every slot is served; and
// every running replica's link to its master is up. The lab checks it
// after starting, and each operation below after its change.
func (l *Lab) ClusterReady(ctx context.Context) error {
	return l.ClusterAgreed(ctx, l.liveNodes()...)
}

// ClusterAgreed is ClusterReady for the given nodes only (the majority
// side of a partition, say).
func (l *Lab) ClusterAgreed(ctx context.Context, nodes ...*Node) error {
	if !l.IsCluster() {
		return errors.New("lab: ClusterReady: the lab is not a cluster (Config.Shards)")
	}
	return poll(ctx, "the cluster to agree", func() error {
		v, err := l.agreedView(ctx, nodes)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if v.owner[n.clusterID] == n.clusterID {
				continue // a master
			}
			r, err := n.Role(ctx)
			if err != nil {
				return fmt.Errorf("%s: %w", n.name, err)
			}
			if r.Role != "slave" || r.LinkState != "connected" {
				return fmt.Errorf("%s: role %s, link %s", n.name, r.Role, r.LinkState)
			}
		}
		return nil
	})
}

// ShardMaster returns the node the running nodes agree is the master of
// shard (waiting for them to agree, bounded by ctx).
func (l *Lab) ShardMaster(ctx context.Context, shard int) (*Node, error) {
	return l.waitShardMaster(ctx, shard, nil)
}

// WaitPromotion waits until the running nodes other than old agree on a
// master of shard other than old (killed, paused, or cut off in a
// partition's minority by the test), and returns it.
func (l *Lab) WaitPromotion(ctx context.Context, shard int, old *Node) (*Node, error) {
	return l.waitShardMaster(ctx, shard, old)
}

func (l *Lab) waitShardMaster(ctx context.Context, shard int, not *Node) (*Node, error) {
	var master *Node
	err := poll(ctx, fmt.Sprintf("shard %d's master", shard), func() error {
		v, err := l.agreedView(ctx, slices.DeleteFunc(l.liveNodes(), func(n *Node) bool { return n == not }))
		if err != nil {
			return err
		}
		for _, n := range l.ShardNodes(shard) {
			if v.owner[n.clusterID] == n.clusterID && n != not {
				master = n
				return nil
			}
		}
		return fmt.Errorf("no node of shard %d is its master (other than %v)", shard, not)
	})
	return master, err
}

// ClusterFailover promotes a replica of shard with CLUSTER FAILOVER (mode
// says which form) and waits until every running node agrees it is the
// master. The replica is the shard's first running one; Node.ClusterFailover
// chooses.
func (l *Lab) ClusterFailover(ctx context.Context, shard int, mode FailoverMode) (*Node, error) {
	old, err := l.ShardMaster(ctx, shard)
	if err != nil {
		return nil, err
	}
	for _, n := range l.ShardNodes(shard) {
		if n != old && n.Running() && !n.Paused() {
			if err := n.ClusterFailover(ctx, mode); err != nil {
				return nil, err
			}
			return n, nil
		}
	}
	return nil, fmt.Errorf("lab: ClusterFailover: shard %d has no running replica", shard)
}

// ClusterFailover makes the node, a replica, its shard's master with
// CLUSTER FAILOVER in the given mode, and waits until every running node
// agrees.
func (n *Node) ClusterFailover(ctx context.Context, mode FailoverMode) error {
	args := []any{"CLUSTER", "FAILOVER"}
	switch mode {
	case FailoverGraceful:
	case FailoverForce:
		args = append(args, "FORCE")
	case FailoverTakeover:
		args = append(args, "TAKEOVER")
	default:
		return fmt.Errorf("lab: ClusterFailover: unknown %v", mode)
	}
	l := n.lab
	l.cfg.Logger.Info("lab: cluster failover", "node", n.name, "shard", n.shard, "mode", mode)
	if err := n.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("lab: %s CLUSTER FAILOVER %v: %w", n.name, mode, err)
	}
	return poll(ctx, n.name+" to be agreed master", func() error {
		v, err := l.agreedView(ctx, l.liveNodes())
		if err != nil {
			return err
		}
		if v.owner[n.clusterID] != n.clusterID {
			return fmt.Errorf("%s is not master yet", n.name)
		}
		return nil
	})
}

// SlotOwner returns the master the running nodes agree serves slot.
func (l *Lab) SlotOwner(ctx context.Context, slot int) (*Node, error) {
	var owner *Node
	err := poll(ctx, fmt.Sprintf("slot %d's owner", slot), func() error {
		shards, err := l.anyLive().ClusterShards(ctx)
		if err != nil {
			return err
		}
		id := slotMaster(shards, slot)
		if owner = l.nodeByID(id); owner == nil {
			return fmt.Errorf("no master serves slot %d", slot)
		}
		return nil
	})
	return owner, err
}

func slotMaster(shards []redis.ClusterShard, slot int) string {
	for _, s := range shards {
		for _, r := range s.Slots {
			if int(r.Start) <= slot && slot <= int(r.End) {
				// Valkey lists a failed master as a master of the shard
				// beside the replica promoted in its place: the healthy one.
				id := ""
				for _, sn := range s.Nodes {
					if sn.Role == "master" && (id == "" || sn.Health == "online") {
						id = sn.ID
					}
				}
				return id
			}
		}
	}
	return ""
}

func (l *Lab) anyLive() *Node {
	if live := l.liveNodes(); len(live) > 0 {
		return live[0]
	}
	return l.nodes[0]
}

func (l *Lab) nodeByID(id string) *Node {
	for _, n := range l.nodes {
		if id != "" && n.clusterID == id {
			return n
		}
	}
	return nil
}

// SlotMigration is a migration of slots from one master to another,
// step by step, as an operator (or redis-cli --cluster reshard) runs it:
// BeginSlotMigration marks the slots IMPORTING on the target and
// MIGRATING on the source; MoveKeys moves keys; Finish moves the rest and
// assigns the slots to the target everywhere. Between the steps a client
// of a migrating slot is sent to the target with ASK for the keys already
// moved (and for new keys).
type SlotMigration struct {
	lab          *Lab
	slots        []int
	source, dest *Node
}

// BeginSlotMigration starts moving slots (all served by one master) to
// shard's master.
func (l *Lab) BeginSlotMigration(ctx context.Context, shard int, slots ...int) (*SlotMigration, error) {
	if len(slots) == 0 {
		return nil, errors.New("lab: BeginSlotMigration: no slot")
	}
	dest, err := l.ShardMaster(ctx, shard)
	if err != nil {
		return nil, err
	}
	shards, err := dest.ClusterShards(ctx)
	if err != nil {
		return nil, err
	}
	source := l.nodeByID(slotMaster(shards, slots[0]))
	for _, s := range slots {
		if s < 0 || s >= ClusterSlots {
			return nil, fmt.Errorf("lab: BeginSlotMigration: slot %d is not between 0 and %d", s, ClusterSlots-1)
		}
		if o := l.nodeByID(slotMaster(shards, s)); o != source || o == nil {
			return nil, fmt.Errorf("lab: BeginSlotMigration: slots %d and %d are on different masters; migrate them separately", slots[0], s)
		}
	}
	if source == dest {
		return nil, fmt.Errorf("lab: BeginSlotMigration: slot %d is on shard %d already", slots[0], shard)
	}
	m := &SlotMigration{lab: l, slots: slices.Clone(slots), source: source, dest: dest}
	if err := m.setSlots(ctx, dest, "IMPORTING", source.clusterID); err != nil {
		return nil, err
	}
	if err := m.setSlots(ctx, source, "MIGRATING", dest.clusterID); err != nil {
		return nil, err
	}
	l.cfg.Logger.Info("lab: slot migration", "slots", len(slots), "first", slots[0], "from", source.name, "to", dest.name)
	return m, nil
}

// Source and Dest are the masters the slots move from and to.
func (m *SlotMigration) Source() *Node { return m.source }

// Dest is the master the slots move to.
func (m *SlotMigration) Dest() *Node { return m.dest }

// setSlots runs CLUSTER SETSLOT slot state arg for every slot: in
// pipelines of setSlotsChunk slots, setSlotsConns of them at once (Valkey 8
// holds each SETSLOT until the node's replicas have it, so thousands of
// slots one after the other would take seconds).
func (m *SlotMigration) setSlots(ctx context.Context, n *Node, state, arg string) error {
	opts := n.adminOptions()
	opts.PoolSize = setSlotsConns
	rc := redis.NewClient(opts)
	defer func() { _ = rc.Close() }()
	chunks := slices.Collect(slices.Chunk(m.slots, setSlotsChunk))
	next := make(chan []int, len(chunks))
	for _, c := range chunks {
		next <- c
	}
	close(next)
	workers := make([]int, min(setSlotsConns, len(chunks)))
	return parallel(workers, func(int) error {
		for chunk := range next {
			cmds, _ := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
				for _, s := range chunk {
					p.Do(ctx, "CLUSTER", "SETSLOT", s, state, arg)
				}
				return nil
			})
			for i, c := range cmds {
				if c.Err() != nil {
					return fmt.Errorf("lab: %s CLUSTER SETSLOT %d %s: %w", n.name, chunk[i], state, c.Err())
				}
			}
		}
		return nil
	})
}

// setSlotsChunk and setSlotsConns shape setSlots' pipelines.
const (
	setSlotsChunk = 64
	setSlotsConns = 16
)

// migrateBatch is how many keys one MIGRATE moves.
const migrateBatch = 100

// MoveKeys moves up to limit keys (all of them when limit <= 0) of the
// slots from the source to the destination with MIGRATE, and returns how
// many it moved.
func (m *SlotMigration) MoveKeys(ctx context.Context, limit int) (int, error) {
	moved := 0
	host, port, _ := net.SplitHostPort(m.dest.Addr())
	for _, s := range m.slots {
		for limit <= 0 || moved < limit {
			count := migrateBatch
			if limit > 0 {
				count = min(count, limit-moved)
			}
			keys, err := m.source.Do(ctx, "CLUSTER", "GETKEYSINSLOT", s, count).StringSlice()
			if err != nil {
				return moved, fmt.Errorf("lab: %s CLUSTER GETKEYSINSLOT %d: %w", m.source.name, s, err)
			}
			if len(keys) == 0 {
				break
			}
			args := []any{"MIGRATE", host, port, "", 0, 5000}
			switch c := m.lab.cfg; {
			case c.Username != "":
				args = append(args, "AUTH2", c.Username, c.Password)
			case c.Password != "":
				args = append(args, "AUTH", c.Password)
			}
			args = append(args, "KEYS")
			for _, k := range keys {
				args = append(args, k)
			}
			if err := m.source.Do(ctx, args...).Err(); err != nil {
				return moved, fmt.Errorf("lab: %s MIGRATE %d keys of slot %d to %s: %w", m.source.name, len(keys), s, m.dest.name, err)
			}
			moved += len(keys)
		}
	}
	return moved, nil
}

// Finish moves the keys left and assigns the slots to the destination:
// CLUSTER SETSLOT NODE on it, on the source, then on every other master,
// and waits until the running nodes agree.
func (m *SlotMigration) Finish(ctx context.Context) error {
	if _, err := m.MoveKeys(ctx, 0); err != nil {
		return err
	}
	l := m.lab
	order := []*Node{m.dest, m.source}
	for _, n := range l.liveNodes() {
		if n != m.dest && n != m.source {
			order = append(order, n)
		}
	}
	for _, n := range order {
		if err := m.setSlots(ctx, n, "NODE", m.dest.clusterID); err != nil && (n == m.dest || n == m.source) {
			return err
		}
		// Another node may refuse (a replica, or one that has learned of
		// the change already by gossip): gossip carries it there.
	}
	return l.ClusterReady(ctx)
}

// MigrateSlots moves slots (all on one master) to shard's master at once:
// BeginSlotMigration, then Finish.
func (l *Lab) MigrateSlots(ctx context.Context, shard int, slots ...int) error {
	m, err := l.BeginSlotMigration(ctx, shard, slots...)
	if err != nil {
		return err
	}
	return m.Finish(ctx)
}

// AddShard starts a new shard (a master and Config.Replicas replicas),
// joins it to the cluster without slots, and returns its ID once every
// running node agrees. Give it slots with MigrateSlots.
func (l *Lab) AddShard(ctx context.Context) (int, error) {
	if !l.IsCluster() {
		return 0, errors.New("lab: AddShard: the lab is not a cluster (Config.Shards)")
	}
	nodes, err := l.addShardNodes(1)
	if err != nil {
		return 0, err
	}
	if err := l.startNodes(ctx, nodes); err != nil {
		return 0, err
	}
	if err := l.buildCluster(ctx, nodes, false); err != nil {
		return 0, err
	}
	l.cfg.Logger.Info("lab: shard added", "shard", nodes[0].shard, "nodes", len(nodes))
	return nodes[0].shard, nil
}

// RemoveShard moves the slots of shard to the other shards (an even share
// to each), makes every other node forget its nodes, and stops them.
func (l *Lab) RemoveShard(ctx context.Context, shard int) error {
	ids := l.ShardIDs()
	if !slices.Contains(ids, shard) {
		return fmt.Errorf("lab: RemoveShard: no shard %d", shard)
	}
	if len(ids) == 1 {
		return errors.New("lab: RemoveShard: the last shard cannot be removed")
	}
	master, err := l.ShardMaster(ctx, shard)
	if err != nil {
		return err
	}
	shards, err := master.ClusterShards(ctx)
	if err != nil {
		return err
	}
	var slots []int
	for _, s := range shards {
		for _, r := range s.Slots {
			if slotMaster([]redis.ClusterShard{s}, int(r.Start)) != master.clusterID {
				continue
			}
			for slot := r.Start; slot <= r.End; slot++ {
				slots = append(slots, int(slot))
			}
		}
	}
	others := slices.DeleteFunc(slices.Clone(ids), func(id int) bool { return id == shard })
	for i, to := range others {
		share := slots[i*len(slots)/len(others) : (i+1)*len(slots)/len(others)]
		if len(share) == 0 {
			continue
		}
		if err := l.MigrateSlots(ctx, to, share...); err != nil {
			return err
		}
	}
	leaving := l.ShardNodes(shard)
	for _, n := range l.nodes {
		if n.shard == shard || !n.Running() {
			continue
		}
		for _, gone := range leaving {
			if err := n.Do(ctx, "CLUSTER", "FORGET", gone.clusterID).Err(); err != nil {
				return fmt.Errorf("lab: %s CLUSTER FORGET %s: %w", n.name, gone.name, err)
			}
		}
	}
	errs := []error{}
	for _, n := range leaving {
		errs = append(errs, n.Kill())
		n.closeAdmin()
		_ = n.proxy.Close()
		_ = n.busProxy.Close()
	}
	l.partMu.Lock()
	l.nodes = slices.DeleteFunc(l.nodes, func(n *Node) bool { return n.shard == shard })
	l.partMu.Unlock()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	l.cfg.Logger.Info("lab: shard removed", "shard", shard, "slots moved", len(slots))
	return l.ClusterReady(ctx)
}
