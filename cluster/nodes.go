package cluster

import (
	"net"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// nodeLine is what one node said of one node: a line of CLUSTER NODES,
// with the health and replication offset CLUSTER SHARDS adds, or what
// CLUSTER SHARDS or CLUSTER SLOTS alone say when the node has no CLUSTER
// NODES.
type nodeLine struct {
	id     string
	addr   string // host:port for clients; "" when the node has none yet
	master bool
	fail   bool // flagged fail (or pfail) by the node that answered, or health "failed"
	// loading is health "loading" in the node's own line: a replica
	// whose replication offset is 0, still syncing. (Of other nodes a
	// node says "loading" while it has heard no offset from them yet,
	// right after a start: no reason to leave a replica out.)
	loading  bool
	self     bool // the line of the node that answered (flag myself)
	masterID string
	epoch    int64    // the config epoch; 0 when the reply has none (SHARDS, SLOTS)
	offset   int64    // the replication offset; -1 unknown (CLUSTER NODES alone)
	slots    [][2]int // inclusive ranges
}

// parseNodes parses a CLUSTER NODES reply. Lines it cannot read, importing
// and migrating markers ([slot->-id]) and nodes in handshake or without an
// address are skipped: the map is built from what every node agrees on.
func parseNodes(text string) []nodeLine {
	var out []nodeLine
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		n := nodeLine{id: f[0], masterID: f[3], offset: -1}
		flags := f[2]
		if strings.Contains(flags, "handshake") || strings.Contains(flags, "noaddr") {
			continue
		}
		for fl := range strings.SplitSeq(flags, ",") {
			switch fl {
			case "master":
				n.master = true
			case "fail", "fail?":
				n.fail = true
			case "myself":
				n.self = true
			}
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",") // ip:port@cport,hostname
		if i := strings.LastIndexByte(addr, ':'); i <= 0 || addr[i+1:] == "0" || addr[i+1:] == "" {
			continue
		}
		n.addr = addr
		epoch, err := strconv.ParseInt(f[6], 10, 64)
		if err != nil {
			continue
		}
		n.epoch = epoch
		for _, r := range f[8:] {
			if strings.HasPrefix(r, "[") {
				continue
			}
			lo, hi, isRange := strings.Cut(r, "-")
			a, err1 := strconv.Atoi(lo)
			b := a
			var err2 error
			if isRange {
				b, err2 = strconv.Atoi(hi)
			}
			if err1 != nil || err2 != nil || a < 0 || b >= Slots || a > b {
				continue
			}
			n.slots = append(n.slots, [2]int{a, b})
		}
		out = append(out, n)
	}
	return out
}

// annotate adds CLUSTER SHARDS's health and replication offsets to the
// lines of CLUSTER NODES from the same node, by node ID.
func annotate(lines []nodeLine, shards []redis.ClusterShard) {
	byID := make(map[string]*redis.Node, len(lines))
	for i := range shards {
		for j := range shards[i].Nodes {
			byID[shards[i].Nodes[j].ID] = &shards[i].Nodes[j]
		}
	}
	for i := range lines {
		if sn := byID[lines[i].id]; sn != nil {
			lines[i].offset = sn.ReplicationOffset
			lines[i].fail = lines[i].fail || failedHealth(sn.Health)
			lines[i].loading = lines[i].self && sn.Health == "loading"
		}
	}
}

// failedHealth reports a CLUSTER SHARDS health that says the node failed:
// "failed" as documented, "fail" as Redis 7.0 sends.
func failedHealth(h string) bool { return h == "failed" || h == "fail" }

// fromShards reads the lines of a CLUSTER SHARDS reply alone (a server
// that refuses CLUSTER NODES): no config epochs, and no way to tell the
// answering node's own line, so no "loading". tls picks each node's
// tls-port when it has one.
func fromShards(shards []redis.ClusterShard, tls bool) []nodeLine {
	var out []nodeLine
	for _, sh := range shards {
		var ranges [][2]int
		for _, r := range sh.Slots {
			if r.Start >= 0 && r.End < Slots && r.Start <= r.End {
				ranges = append(ranges, [2]int{int(r.Start), int(r.End)})
			}
		}
		masterID := "-"
		for _, n := range sh.Nodes {
			if n.Role == "master" {
				masterID = n.ID
			}
		}
		for _, n := range sh.Nodes {
			addr, ok := ShardNodeAddr(n, tls)
			if !ok {
				continue
			}
			l := nodeLine{id: n.ID, addr: addr,
				master: n.Role == "master", fail: failedHealth(n.Health), masterID: "-", offset: n.ReplicationOffset}
			if l.master {
				l.slots = ranges
			} else {
				l.masterID = masterID
			}
			out = append(out, l)
		}
	}
	return out
}

// ShardNodeAddr is the address clients reach a CLUSTER SHARDS node at: its
// preferred endpoint (its IP when it has none) and its port, the TLS one
// with tls; false for a node without an ID, an endpoint or a port.
func ShardNodeAddr(n redis.Node, tls bool) (string, bool) {
	port := n.Port
	if tls && n.TLSPort > 0 || port <= 0 {
		port = n.TLSPort
	}
	host := n.Endpoint
	if host == "" || host == "?" {
		host = n.IP
	}
	if n.ID == "" || host == "" || host == "?" || port <= 0 || port > 65535 {
		return "", false
	}
	return net.JoinHostPort(host, strconv.FormatInt(port, 10)), true
}

// fromSlots reads a CLUSTER SLOTS reply, the last resort (a server with
// neither CLUSTER NODES nor CLUSTER SHARDS): the first node of a range is
// its master, the others its replicas; no epochs, health or offsets.
// Nodes without an ID (servers before Redis 4) take their address as one.
func fromSlots(slots []redis.ClusterSlot) []nodeLine {
	var out []nodeLine
	idx := map[string]int{}
	for _, r := range slots {
		if len(r.Nodes) == 0 || r.Start < 0 || r.End >= Slots || r.Start > r.End {
			continue
		}
		var masterID string
		for i, cn := range r.Nodes {
			if _, port, err := net.SplitHostPort(cn.Addr); err != nil || port == "0" || port == "" {
				continue
			}
			id := cn.ID
			if id == "" {
				id = cn.Addr
			}
			if i == 0 {
				masterID = id
			}
			j, ok := idx[id]
			if !ok {
				j = len(out)
				idx[id] = j
				out = append(out, nodeLine{id: id, addr: cn.Addr, master: i == 0, masterID: "-", offset: -1})
			}
			if i == 0 {
				out[j].slots = append(out[j].slots, [2]int{r.Start, r.End})
			} else if masterID != "" {
				out[j].masterID = masterID
			}
		}
	}
	return out
}

// slotMap is the cluster as the client routes on it: for each slot the
// master's ID, and for each master its address, epoch and replicas.
type slotMap struct {
	owner    [Slots]string // master ID per slot; "" when none
	addr     map[string]string
	epoch    map[string]int64
	replicas map[string][]string // master ID -> replica IDs, healthy ones
	failed   map[string]bool     // master IDs some answering node flags fail
	// offset is each node's replication offset: its own word where it
	// answered, else the highest another node reported (heard by gossip,
	// so behind).
	offset   map[string]int64
	selfSaid map[string]bool // offsets a node reported of itself
}

// mergeViews builds the slot map from the CLUSTER NODES replies of several
// nodes: each slot goes to the master with the highest config epoch that
// claims it, whoever answered last (after a failover, the new master's
// epoch is above the old one's, even in a reply from a node that has not
// heard yet); ties go to the lower ID, so that the map does not depend on
// the replies' order. A pure function: fuzzed.
func mergeViews(views [][]nodeLine) slotMap {
	m := slotMap{addr: map[string]string{}, epoch: map[string]int64{}, replicas: map[string][]string{},
		failed: map[string]bool{}, offset: map[string]int64{}, selfSaid: map[string]bool{}}
	var ownerEpoch [Slots]int64
	for _, v := range views {
		for _, n := range v {
			m.note(n)
			if n.master {
				m.claim(n, &ownerEpoch)
			}
		}
	}
	seen := map[string]bool{}
	for _, v := range views {
		for _, n := range v {
			if n.master || n.fail || n.loading || n.masterID == "-" || seen[n.id] {
				continue
			}
			seen[n.id] = true
			m.replicas[n.masterID] = append(m.replicas[n.masterID], n.id)
		}
	}
	return m
}

// note records a node's address, highest epoch and failure.
func (m *slotMap) note(n nodeLine) {
	if prev, ok := m.epoch[n.id]; !ok || n.epoch > prev {
		m.epoch[n.id] = n.epoch
	}
	m.addr[n.id] = n.addr
	switch prev, ok := m.offset[n.id]; {
	case n.offset < 0:
	case n.self:
		m.offset[n.id], m.selfSaid[n.id] = n.offset, true
	case !m.selfSaid[n.id] && (!ok || n.offset > prev):
		m.offset[n.id] = n.offset
	}
	if n.fail && n.master {
		m.failed[n.id] = true
	}
}

// claim gives a master the slots it claims where its epoch is the highest.
func (m *slotMap) claim(n nodeLine, ownerEpoch *[Slots]int64) {
	for _, r := range n.slots {
		for s := r[0]; s <= r[1]; s++ {
			if m.owner[s] == "" || n.epoch > ownerEpoch[s] || (n.epoch == ownerEpoch[s] && n.id < m.owner[s]) {
				m.owner[s], ownerEpoch[s] = n.id, n.epoch
			}
		}
	}
}
