package cluster

import (
	"strconv"
	"strings"
)

// nodeLine is one line of CLUSTER NODES.
type nodeLine struct {
	id       string
	addr     string // host:port for clients; "" when the node has none yet
	master   bool
	fail     bool // flagged fail (or pfail) by the node that answered
	masterID string
	epoch    int64
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
		n := nodeLine{id: f[0], masterID: f[3]}
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

// slotMap is the cluster as the client routes on it: for each slot the
// master's ID, and for each master its address, epoch and replicas.
type slotMap struct {
	owner    [Slots]string // master ID per slot; "" when none
	addr     map[string]string
	epoch    map[string]int64
	replicas map[string][]string // master ID -> replica addresses
	failed   map[string]bool     // master IDs some answering node flags fail
}

// mergeViews builds the slot map from the CLUSTER NODES replies of several
// nodes: each slot goes to the master with the highest config epoch that
// claims it, whoever answered last (after a failover, the new master's
// epoch is above the old one's, even in a reply from a node that has not
// heard yet); ties go to the lower ID, so that the map does not depend on
// the replies' order. A pure function: fuzzed.
func mergeViews(views [][]nodeLine) slotMap {
	m := slotMap{addr: map[string]string{}, epoch: map[string]int64{}, replicas: map[string][]string{}, failed: map[string]bool{}}
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
			if n.master || n.fail || n.masterID == "-" || seen[n.id] {
				continue
			}
			seen[n.id] = true
			m.replicas[n.masterID] = append(m.replicas[n.masterID], n.addr)
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
