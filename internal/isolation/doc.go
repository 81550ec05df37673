// Package isolation holds what the Sentinel and Cluster clients both use
// to hold a master's writes while it is cut off from its replicas and
// from those who would replace it, yet still answers the client (split
// brain): the watch of each replica's replication stream (Stream, Stall),
// the client's round-trip estimates the watch's bounds are derived from
// (RTT), and the hold's state machine (Decide: a hold on the first
// suspicion, confirmed, vouched for, expired, ended when the replicas
// receive again). Each client judges the signs with its own topology's
// witnesses (sentinel's isolationDecision: the sentinels; cluster's
// splitBrainDecision: the other masters, as the master sees them on its
// bus) and hands them to Decide.
//
// Everything here is pure: it takes the time and the samples, and touches
// neither the network nor a clock.
package isolation
