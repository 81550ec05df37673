package cluster

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
)

const nodesReply = `07c37dfeb235213a872192d90877d0cd55635b91 127.0.0.1:30004@31004,host4 slave e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 0 1426238317239 4 connected
67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 127.0.0.1:30002@31002 master - 0 1426238316232 2 connected 5461-10922
292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 127.0.0.1:30003@31003 master - 0 1426238318243 3 connected 10923-16383 [16383->-e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca]
6ec23923021cf3ffec47632106199cb7f496ce01 127.0.0.1:30005@31005 slave 67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1 0 1426238316232 5 connected
824fe116063bc5fcf9f4ffd895bc17aee7731ac3 127.0.0.1:30006@31006 slave 292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f 0 1426238317741 6 connected
e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca 127.0.0.1:30001@31001 myself,master - 0 0 1 connected 0-5460
aaaa 127.0.0.1:30009@31009 handshake - 0 0 0 connected
bbbb :0@0 master,noaddr - 0 0 0 disconnected
`

// TestParseNodes reads the Cluster specification's CLUSTER NODES example:
// masters with their slots (a migration marker skipped), replicas with
// their master, handshake and address-less nodes left out.
func TestParseNodes(t *testing.T) {
	lines := parseNodes(nodesReply)
	if len(lines) != 6 {
		t.Fatalf("%d lines, want 6: %+v", len(lines), lines)
	}
	m := mergeViews([][]nodeLine{lines})
	for _, tc := range []struct {
		slot int
		id   string
	}{{0, "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca"}, {5460, "e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca"},
		{5461, "67ed2db8d677e59ec4a4cefb06858cf2a1a89fa1"}, {16383, "292f8b365bb7edb5e285caf0b7e6ddc7265d2f4f"}} {
		if m.owner[tc.slot] != tc.id {
			t.Errorf("slot %d: owner %q, want %q", tc.slot, m.owner[tc.slot], tc.id)
		}
	}
	if got := m.addr["07c37dfeb235213a872192d90877d0cd55635b91"]; got != "127.0.0.1:30004" {
		t.Errorf("replica address %q (the hostname after the comma must go)", got)
	}
	if r := m.replicas["e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca"]; len(r) != 1 || m.addr[r[0]] != "127.0.0.1:30004" {
		t.Errorf("replicas of the first master: %v", r)
	}
}

// TestMergeByEpoch: two nodes disagree on a slot's owner (one has not
// heard of the failover yet): the master with the higher config epoch
// wins, whichever reply comes last.
func TestMergeByEpoch(t *testing.T) {
	stale := []nodeLine{{id: "old", addr: "a:1", master: true, epoch: 3, slots: [][2]int{{0, 100}}}}
	fresh := []nodeLine{
		{id: "new", addr: "b:1", master: true, epoch: 7, slots: [][2]int{{0, 100}}},
		{id: "old", addr: "a:1", master: true, fail: true, epoch: 3},
	}
	for _, views := range [][][]nodeLine{{stale, fresh}, {fresh, stale}} {
		m := mergeViews(views)
		if m.owner[50] != "new" || m.epoch["new"] != 7 || !m.failed["old"] {
			t.Fatalf("owner %q, epochs %v, failed %v", m.owner[50], m.epoch, m.failed)
		}
	}
}

func FuzzParseNodes(f *testing.F) {
	f.Add(nodesReply)
	f.Add("x 1.2.3.4:5@6 master - 0 0 1 connected 0-16383 16384 -1 5-3 a-b\n")
	f.Fuzz(func(t *testing.T, s string) {
		lines := parseNodes(s)
		m := mergeViews([][]nodeLine{lines, lines})
		for _, l := range lines {
			for _, r := range l.slots {
				if r[0] < 0 || r[1] >= Slots || r[0] > r[1] {
					t.Fatalf("slot range %v", r)
				}
			}
		}
		for s, id := range m.owner {
			if id != "" && m.addr[id] == "" {
				t.Fatalf("slot %d owned by %q without an address", s, id)
			}
		}
	})
}

// TestNodeSetBounded: past maxNodes addresses, no more clients are made.
func TestNodeSetBounded(t *testing.T) {
	ns := &nodeSet{opts: &Config{}, live: map[string]*node{}}
	defer func() { _ = ns.close() }()
	for i := range maxNodes + 10 {
		n := ns.get(fmt.Sprintf("127.0.0.1:%d", 10000+i))
		if (n == nil) != (i >= maxNodes) {
			t.Fatalf("address %d: node %v", i, n)
		}
	}
	if n := ns.get("127.0.0.1:10000"); n == nil {
		t.Fatal("a known address past the bound: no node")
	}
}

// TestMapSources: CLUSTER SHARDS's health and offsets annotate CLUSTER
// NODES; CLUSTER SHARDS alone and CLUSTER SLOTS alone give the same owners
// and addresses, without epochs; failed and loading replicas serve no read.
func TestMapSources(t *testing.T) {
	shards := []redis.ClusterShard{
		{Slots: []redis.SlotRange{{Start: 0, End: 99}, {Start: 200, End: 299}}, Nodes: []redis.Node{
			{ID: "m1", Endpoint: "127.0.0.1", IP: "127.0.0.1", Port: 7001, TLSPort: 8001, Role: "master", ReplicationOffset: 500, Health: "online"},
			{ID: "r1", Endpoint: "127.0.0.1", IP: "127.0.0.1", Port: 7002, Role: "replica", ReplicationOffset: 480, Health: "online"},
			{ID: "r2", Endpoint: "?", IP: "127.0.0.2", Port: 7003, Role: "replica", ReplicationOffset: 0, Health: "loading"},
		}},
		{Slots: []redis.SlotRange{{Start: 100, End: 199}, {Start: 300, End: 99999}}, Nodes: []redis.Node{
			{ID: "m2", Endpoint: "127.0.0.3", Port: 7004, Role: "master", ReplicationOffset: 9, Health: "online"},
			{ID: "r3", Endpoint: "127.0.0.3", Port: 7005, Role: "replica", Health: "fail"}, // Redis 7.0's word
			{ID: "", Endpoint: "127.0.0.3", Port: 7006, Role: "replica"},                   // no ID: skipped
			{ID: "r5", Endpoint: "127.0.0.3", Port: 70000, Role: "replica"},                // no port: skipped
		}},
	}
	nodes := parseNodes(`m1 127.0.0.1:7001@17001 master - 0 0 5 connected 0-99 200-299
r1 127.0.0.1:7002@17002 slave m1 0 0 5 connected
r2 127.0.0.2:7003@17003 myself,slave m1 0 0 5 connected
m2 127.0.0.3:7004@17004 master - 0 0 2 connected 100-199
r3 127.0.0.3:7005@17005 slave m2 0 0 2 connected
`)
	annotate(nodes, shards)
	// r2 says it is loading: left out. Of another node, "loading" means
	// no offset heard yet, and CLUSTER SHARDS alone cannot tell which
	// line is the answering node's.
	for _, tc := range []struct {
		name       string
		lines      []nodeLine
		epochs     bool
		m1Replicas string
	}{
		{"nodes+shards", nodes, true, "[r1]"},
		{"shards", fromShards(shards, false), false, "[r1 r2]"},
	} {
		m := mergeViews([][]nodeLine{tc.lines})
		if m.owner[50] != "m1" || m.owner[250] != "m1" || m.owner[150] != "m2" {
			t.Errorf("%s: owners %q %q %q", tc.name, m.owner[50], m.owner[250], m.owner[150])
		}
		if m.addr["r2"] != "127.0.0.2:7003" || m.addr["m2"] != "127.0.0.3:7004" {
			t.Errorf("%s: addresses %v", tc.name, m.addr)
		}
		if r := fmt.Sprint(m.replicas["m1"]); r != tc.m1Replicas {
			t.Errorf("%s: healthy replicas of m1 %v, want %s", tc.name, r, tc.m1Replicas)
		}
		if r := m.replicas["m2"]; len(r) != 0 {
			t.Errorf("%s: healthy replicas of m2 %v (r3 failed)", tc.name, r)
		}
		if m.offset["m1"] != 500 || m.offset["r1"] != 480 {
			t.Errorf("%s: offsets %v", tc.name, m.offset)
		}
		if got := m.epoch["m1"] == 5; got != tc.epochs {
			t.Errorf("%s: epoch of m1 %d", tc.name, m.epoch["m1"])
		}
	}
	if l := fromShards(shards, true); l[0].addr != "127.0.0.1:8001" || l[1].addr != "127.0.0.1:7002" {
		t.Errorf("TLS: the tls-port where a node has one: %s, %s", l[0].addr, l[1].addr)
	}
	if n := len(fromShards(shards, false)); n != 5 {
		t.Errorf("%d lines from CLUSTER SHARDS, want 5 (one without an ID, one without a port)", n)
	}

	// A node's own word on its offset beats what others heard by gossip.
	self := []nodeLine{{id: "m1", addr: "a:1", master: true, self: true, offset: 100}}
	gossip := []nodeLine{{id: "m1", addr: "a:1", master: true, offset: 120}}
	for _, views := range [][][]nodeLine{{self, gossip}, {gossip, self}} {
		if off := mergeViews(views).offset["m1"]; off != 100 {
			t.Errorf("offset %d, want the node's own 100", off)
		}
	}

	slots := fromSlots([]redis.ClusterSlot{
		{Start: 0, End: 99, Nodes: []redis.ClusterNode{{ID: "m1", Addr: "127.0.0.1:7001"}, {ID: "r1", Addr: "127.0.0.1:7002"}}},
		{Start: 200, End: 299, Nodes: []redis.ClusterNode{{ID: "m1", Addr: "127.0.0.1:7001"}, {ID: "r1", Addr: "127.0.0.1:7002"}}},
		{Start: 100, End: 199, Nodes: []redis.ClusterNode{{Addr: "127.0.0.3:7004"}}}, // before Redis 4: no ID
		{Start: 300, End: 20000, Nodes: []redis.ClusterNode{{ID: "x", Addr: "127.0.0.9:1"}}},
		{Start: 400, End: 401},
	})
	m := mergeViews([][]nodeLine{slots})
	if m.owner[50] != "m1" || m.owner[250] != "m1" || m.owner[150] != "127.0.0.3:7004" || m.owner[350] != "" {
		t.Errorf("CLUSTER SLOTS: owners %q %q %q %q", m.owner[50], m.owner[250], m.owner[150], m.owner[350])
	}
	if r := m.replicas["m1"]; len(r) != 1 || m.addr[r[0]] != "127.0.0.1:7002" {
		t.Errorf("CLUSTER SLOTS: replicas of m1 %v", r)
	}
}

// TestMapChanges: a refresh's slot moves are reported per old and new
// master, as a failover when the old one masters nothing any more, as a
// migration when it still does; nothing before the first map.
func TestMapChanges(t *testing.T) {
	a, b, c := &node{addr: "a:1"}, &node{addr: "b:1"}, &node{addr: "c:1"}
	var prev, next [Slots]*node
	for s := range Slots {
		prev[s], next[s] = a, a
		if s >= 8192 {
			prev[s], next[s] = b, b
		}
	}
	for s := 8192; s < 16384; s++ {
		next[s] = c // b failed over to c
	}
	for s := 0; s < 10; s++ {
		next[s] = c // ten of a's slots migrated to c
	}
	if ev := mapChanges(nil, &next, nil); len(ev) != 0 {
		t.Fatalf("events before the first map: %v", ev)
	}
	ev := mapChanges(&prev, &next, map[*node]bool{a: true, c: true})
	want := []Event{
		{Kind: EventSlotsMoved, Master: "c:1", OldMaster: "a:1", Slot: -1, Slots: 10},
		{Kind: EventMasterChanged, Master: "c:1", OldMaster: "b:1", Slot: -1, Slots: 8192},
	}
	if fmt.Sprint(ev) != fmt.Sprint(want) {
		t.Fatalf("events %v, want %v", ev, want)
	}
	if ev := mapChanges(&next, &next, nil); len(ev) != 0 {
		t.Fatalf("events without a change: %v", ev)
	}
}
