package cluster

import (
	"fmt"
	"testing"
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
	if r := m.replicas["e7d1eecce10fd6bb5eb35b9f99a514335d9ba9ca"]; len(r) != 1 || r[0] != "127.0.0.1:30004" {
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
	ns := &nodeSet{opts: &Options{}, live: map[string]*node{}}
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
