// Package isolation holds what the Sentinel and Cluster clients both use
// to see a master cut off from its replicas while it still answers the
// client (split brain): the watch of each replica's replication stream
// (Stream, Stall) and the client's round-trip estimates the watch's bounds
// are derived from (RTT). Each client's decision to hold writes
// (sentinel's isolationDecision, cluster's splitBrainDecision) applies
// them with its own topology's witnesses: the sentinels, or the cluster's
// other masters as the master sees them on its bus.
//
// Everything here is pure: it takes the time and the samples, and touches
// neither the network nor a clock.
package isolation
