package sentinel

import (
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"github.com/rediskit/rediskit/clientcache"
)

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=EventKind -linecomment

// EventKind names what an Event reports.
type EventKind int

// The events a Client reports to Config.Observer.
const (
	// EventMasterChanged: the client routes to a new master (Master), was
	// OldMaster; Sentinel named it, or is empty when the promoted replica's
	// ROLE was seen first.
	EventMasterChanged EventKind = iota + 1 // master changed
	// EventReplicasChanged: the healthy, ROLE-verified replicas changed
	// (Replicas).
	EventReplicasChanged // replicas changed
	// EventFailoverStarted: a sentinel began promoting Candidate; writes
	// are held until the new master is confirmed.
	EventFailoverStarted // failover started
	// EventFailoverHoldEnded: writes are no longer held (Master is where
	// they go). Err is nil when the new master was confirmed; otherwise it
	// says why not, and matches ErrFailoverNotConfirmed.
	EventFailoverHoldEnded // failover hold ended
	// EventReadRetried: a read-only call failed on Master (the node it
	// ran on) with Err and was re-run once.
	EventReadRetried // read retried
	// EventWriteRerun: a write that provably did not execute was re-run
	// on the new master.
	EventWriteRerun // write re-run
	// EventWriteRefused: a write failed with a *MasterChangedError (Err).
	EventWriteRefused // write refused
	// EventSentinelSkipped: Sentinel was skipped during discovery (Err says
	// why: down, slow, stale, or it named a node that is not a master).
	EventSentinelSkipped // sentinel skipped
	// EventSentinelAdded: a sentinel was learned from another one.
	EventSentinelAdded // sentinel added
	// EventDiscoveryFailed: no sentinel named a verified master (Err);
	// Duration is how long discovery tried.
	EventDiscoveryFailed // discovery failed
	// EventDiscovered: a topology refresh found the master (Master, named
	// by Sentinel) in Duration (discovery and ROLE verification).
	EventDiscovered // discovered
	// EventMasterIsolated: writes are held because Master is cut off from
	// the sentinels that will replace it (Reason says what the sentinels
	// and the replication probe saw); see Config.SentinelPollInterval.
	EventMasterIsolated // master isolated
	// EventIsolationEnded: writes held for an isolated master resume
	// (Reason says why; Duration is how long they were held). When the
	// sentinels replaced the master instead, EventMasterChanged says so.
	EventIsolationEnded // isolation ended
	// EventReplicasLimited: the sentinels list more replicas than
	// Config.MaxReplicas; the client keeps that many (Replicas are the
	// ones kept; Sentinel is the one listing the most; Reason gives the
	// counts). Reported once, until the lists fit again.
	EventReplicasLimited // replicas limited
)

// Event is something the client decided or noticed.
type Event struct {
	Kind EventKind
	// Time is when it happened: for EventMasterChanged and
	// EventReplicasChanged the moment the client began routing by the new
	// topology, before any command or subscription could act on it.
	Time       time.Time
	MasterName string
	Master     string // the master (or node) concerned
	OldMaster  string
	Candidate  string // the replica being promoted
	Sentinel   string
	Replicas   []string
	// Reason says why, in a word: for EventSentinelSkipped a SkipReason.
	Reason string
	// Duration is how long the reported work took (EventDiscovered,
	// EventDiscoveryFailed).
	Duration time.Duration
	Err      error
}

func (e Event) String() string {
	s := fmt.Sprintf("%s %s", e.Time.Format("15:04:05.000"), e.Kind)
	if e.Master != "" {
		s += " master=" + e.Master
	}
	if e.OldMaster != "" {
		s += " old=" + e.OldMaster
	}
	if e.Candidate != "" {
		s += " candidate=" + e.Candidate
	}
	if e.Sentinel != "" {
		s += " sentinel=" + e.Sentinel
	}
	if e.Reason != "" {
		s += " reason=" + e.Reason
	}
	if e.Duration != 0 {
		s += " took=" + e.Duration.String()
	}
	if e.Kind == EventReplicasChanged {
		s += fmt.Sprintf(" replicas=%v", e.Replicas)
	}
	if e.Err != nil {
		s += " err=" + e.Err.Error()
	}
	return s
}

// emit queues ev for the Observer (see Config.Observer) and returns at
// once: the topology goroutine never waits for it.
func (c *Client) emit(ev Event) {
	if c.observer == nil {
		return
	}
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	ev.MasterName = c.opts.MasterName
	c.observer.Push(ev)
}

// Stats are counters since the client was created, and the current
// topology.
type Stats struct {
	MasterName string   // Config.MasterName
	Master     string   // the master the client routes writes to
	Replicas   []string // healthy, ROLE-verified replicas
	// DurableReplicas are the replicas a durable write must be confirmed
	// by: every replica the master has connected and every replica
	// Sentinel could promote, including ones this client cannot reach.
	DurableReplicas []string
	Sentinels       []string // known sentinels, in asking order
	// FailoverInProgress is true while writes are held for a failover.
	FailoverInProgress bool
	// MasterIsolated, when not empty, says why writes are held for a
	// master cut off from the sentinels and its replicas.
	MasterIsolated string
	// Nodes counts the calls sent to each address (reads by the node that
	// served them, writes on the masters), sorted by address.
	Nodes []NodeStats

	MasterChanges     uint64
	Resolutions       uint64 // topology refreshes (periodic, event-driven, on failure)
	DiscoveryFailures uint64 // discovery rounds in which no sentinel qualified
	SentinelsSkipped  uint64
	ReadsRetried      uint64
	WritesRerun       uint64 // writes re-run because they provably did not execute
	WritesRefused     uint64 // writes failed with a MasterChangedError
	WritesHeld        uint64 // writes that waited for a failover to complete
	WritesNotDurable  uint64 // durable writes WAIT did not confirm
	EventsDropped     uint64 // events a slow Observer missed (see Config.Observer)
	// Cache are the client-side cache's counters (Config.Cache).
	Cache clientcache.Stats
}

// NodeStats counts the calls a client sent to one node.
type NodeStats struct {
	Addr   string
	Reads  uint64 // read-only calls (commands, pipelines) sent to it; not the cache's hits
	Writes uint64 // writing calls (commands, pipelines, transactions) sent to it
	// Batched commands were auto-pipelined (Config.AutoPipeline, or an
	// auto-pipeliner's) in Batches round trips: Batched / Batches is the
	// mean batch.
	Batches, Batched uint64
}

type counters struct {
	masterChanges, resolutions, discoveryFailures, sentinelsSkipped atomic.Uint64
	readsRetried, writesRerun, writesRefused, writesHeld            atomic.Uint64
	writesNotDurable                                                atomic.Uint64
}

// Stats returns the client's counters and current topology.
func (c *Client) Stats() Stats {
	snap := c.topo.load()
	st := Stats{
		MasterName:        c.opts.MasterName,
		Sentinels:         c.topo.sentinels.list(),
		Nodes:             c.topo.nodes.callCounts(),
		MasterChanges:     c.stats.masterChanges.Load(),
		Resolutions:       c.stats.resolutions.Load(),
		DiscoveryFailures: c.stats.discoveryFailures.Load(),
		SentinelsSkipped:  c.stats.sentinelsSkipped.Load(),
		ReadsRetried:      c.stats.readsRetried.Load(),
		WritesRerun:       c.stats.writesRerun.Load(),
		WritesRefused:     c.stats.writesRefused.Load(),
		WritesHeld:        c.stats.writesHeld.Load(),
		WritesNotDurable:  c.stats.writesNotDurable.Load(),
		EventsDropped:     c.observer.Dropped(),
		Cache:             c.topo.nodes.cache.Stats(),
	}
	if snap.master != nil {
		st.Master = snap.master.addr
		st.Replicas = slices.Clone(snap.replicaAddrs)
		st.DurableReplicas = slices.Clone(snap.durable)
		st.FailoverInProgress = snap.failoverHeld
		st.MasterIsolated = snap.isolated
	}
	return st
}
