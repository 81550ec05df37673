package sentinel

import (
	"sync/atomic"

	"github.com/rediskit/rediskit/replica"
)

// Topology is what a ReplicaSelector is told: the master and the replicas
// Sentinel reports healthy and ROLE confirms (a replica with a connected
// link).
type Topology = replica.Topology

// BindableSelector is implemented by selectors that need more than the
// topology (dedicated probe connections, pool eviction): NewClient calls
// Bind once, before the first UpdateTopology.
type BindableSelector interface {
	ReplicaSelector
	Bind(replica.Env)
}

// The default selector binds to the client.
var _ BindableSelector = (*replica.Selector)(nil)

// ReplicaSelector chooses the replica for each read that may go to one. The
// client calls UpdateTopology from its topology goroutine whenever the
// master or the healthy replicas change, and Pick on the hot path of every
// such read. Package replica provides the latency-aware selector.
type ReplicaSelector interface {
	// UpdateTopology gives the selector the current topology. It is never
	// called concurrently with itself.
	UpdateTopology(Topology)
	// Pick chooses the node for one read under pref (Replica,
	// ReplicaPreferred or Nearest). It returns a replica address from the
	// latest topology, or "" to read from the master; done, when not nil,
	// is called once the read finishes (for in-flight balancing). Pick is
	// called concurrently; it must not block, and should not allocate.
	Pick(pref ReadFrom) (addr string, done func())
	// Close releases the selector's resources; the client calls it from
	// Close.
	Close() error
}

// roundRobin hands out the healthy replicas in turn.
type roundRobin struct {
	replicas atomic.Pointer[[]string]
	next     atomic.Uint64
}

// NewRoundRobinSelector returns a selector that hands out every healthy,
// ROLE-verified replica in turn. It has no latency data, so for Nearest it
// behaves as for ReplicaPreferred. (The default is the latency-aware
// replica.Selector.)
func NewRoundRobinSelector() ReplicaSelector {
	r := &roundRobin{}
	r.replicas.Store(new([]string))
	return r
}

func (r *roundRobin) UpdateTopology(t Topology) { r.replicas.Store(&t.Replicas) }

func (r *roundRobin) Pick(ReadFrom) (string, func()) {
	list := *r.replicas.Load()
	if len(list) == 0 {
		return "", nil
	}
	return list[r.next.Add(1)%uint64(len(list))], nil
}

func (r *roundRobin) Close() error { return nil }
