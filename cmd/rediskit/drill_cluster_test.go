package main

import (
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/cluster"
)

func TestShardNodeAddr(t *testing.T) {
	for _, tc := range []struct {
		node redis.Node
		tls  bool
		want string
	}{
		{redis.Node{Endpoint: "10.0.0.1", IP: "10.0.0.2", Port: 7000, TLSPort: 7443}, false, "10.0.0.1:7000"},
		{redis.Node{Endpoint: "10.0.0.1", IP: "10.0.0.2", Port: 7000, TLSPort: 7443}, true, "10.0.0.1:7443"},
		{redis.Node{Endpoint: "?", IP: "10.0.0.2", Port: 7000}, false, "10.0.0.2:7000"},
		{redis.Node{IP: "::1", TLSPort: 7443}, false, "[::1]:7443"},
		{redis.Node{Endpoint: "node-a", Port: 7000}, true, "node-a:7000"},
	} {
		if got := shardNodeAddr(tc.node, tc.tls); got != tc.want {
			t.Errorf("shardNodeAddr(%+v, %v) = %q, want %q", tc.node, tc.tls, got, tc.want)
		}
	}
}

func TestDrillShardHas(t *testing.T) {
	s := drillShard{slots: []redis.SlotRange{{Start: 0, End: 99}, {Start: 5000, End: 5000}}}
	for slot, want := range map[int]bool{0: true, 99: true, 100: false, 4999: false, 5000: true, 5001: false, 16383: false} {
		if got := s.has(slot); got != want {
			t.Errorf("has(%d) = %v, want %v", slot, got, want)
		}
	}
}

func TestErrKindCluster(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{fmt.Errorf("rpush: %w", &cluster.MasterChangedError{}), "master changed"},
		{&cluster.NotDurableError{}, "not durable"},
		{&cluster.NoReplicaError{}, "no replica"},
		{&cluster.NoMasterError{}, "no master"},
	} {
		if got := errKind(tc.err); got != tc.want {
			t.Errorf("errKind(%T) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
