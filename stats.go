package rediskit

import (
	"github.com/rediskit/rediskit/clientcache"
	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/sentinel"
)

// Stats are a client's counters since it was made, the same for every
// topology; Typed holds the typed client's own, with everything else it
// counts.
type Stats struct {
	// Kind is the topology (Client.Kind).
	Kind Kind
	// Masters are the servers writes go to now: the master (Sentinel,
	// standalone), each shard's master (cluster), the active database's
	// name (multidb; none while no database is healthy).
	Masters []string
	// Nodes counts the commands sent to each node, sorted by address
	// (none for multidb: see Typed's Databases).
	Nodes []NodeStats
	// MasterChanges are the times writes moved to another server: a
	// failover (Sentinel), a shard's new master (cluster), a switch of
	// the active database (multidb).
	MasterChanges uint64
	// ReadsRetried are reads run again after a failure; WritesRerun
	// writes sent again because they provably had not run; WritesRefused
	// writes failed rather than run again (they may have run);
	// WritesHeld writes that waited for a failover (Sentinel, cluster).
	ReadsRetried, WritesRerun, WritesRefused, WritesHeld uint64
	// WritesNotDurable are durable writes not confirmed (Sentinel,
	// cluster, standalone).
	WritesNotDurable uint64
	// EventsDropped are the events a slow Observer missed.
	EventsDropped uint64
	// Cache are the client-side cache's counters (Config.Cache); a
	// multidb client's are the sum of its databases'.
	Cache clientcache.Stats
	// Typed is the typed client's Stats: a sentinel.Stats, a
	// cluster.Stats or a multidb.Stats.
	Typed any
}

// NodeStats counts the commands a client sent to one node.
type NodeStats struct {
	Addr          string
	Reads, Writes uint64
	// Batched commands were auto-pipelined in Batches round trips.
	Batches, Batched uint64
}

func sentinelStats(kind Kind, st sentinel.Stats) Stats {
	s := Stats{Kind: kind, MasterChanges: st.MasterChanges, ReadsRetried: st.ReadsRetried, WritesRerun: st.WritesRerun,
		WritesRefused: st.WritesRefused, WritesHeld: st.WritesHeld, WritesNotDurable: st.WritesNotDurable,
		EventsDropped: st.EventsDropped, Cache: st.Cache, Typed: st}
	if st.Master != "" {
		s.Masters = []string{st.Master}
	}
	for _, n := range st.Nodes {
		s.Nodes = append(s.Nodes, NodeStats{Addr: n.Addr, Reads: n.Reads, Writes: n.Writes, Batches: n.Batches, Batched: n.Batched})
	}
	return s
}

func clusterStats(st cluster.Stats) Stats {
	s := Stats{Kind: KindCluster, Masters: st.Masters, MasterChanges: st.MasterChanges, ReadsRetried: st.ReadsRetried,
		WritesRerun: st.WritesRerun, WritesRefused: st.WritesRefused, WritesHeld: st.WritesHeld,
		WritesNotDurable: st.WritesNotDurable, EventsDropped: st.EventsDropped, Cache: st.Cache, Typed: st}
	for _, n := range st.Nodes {
		s.Nodes = append(s.Nodes, NodeStats{Addr: n.Addr, Reads: n.Reads, Writes: n.Writes, Batches: n.Batches, Batched: n.Batched})
	}
	return s
}

// multidbStats are a multidb client's, its cache's counters summed with
// those of the databases that are rediskit clients of their own (subs).
func multidbStats(st multidb.Stats, subs []*client) Stats {
	s := Stats{Kind: KindMultiDB, MasterChanges: st.Switches, ReadsRetried: st.ReadsRetried, WritesRerun: st.WritesRerun,
		WritesRefused: st.WritesRefused, EventsDropped: st.EventsDropped, Cache: st.Cache, Typed: st}
	for _, sub := range subs {
		s.Cache = s.Cache.Plus(sub.stats().Cache)
	}
	if st.Active != "" {
		s.Masters = []string{st.Active}
	}
	return s
}
