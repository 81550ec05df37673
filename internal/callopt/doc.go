// Package callopt holds the per-call options every rediskit client reads
// from a call's context: where a read runs and whether a write is durable.
// They live once, here, so that the option a caller sets with any
// package's WithReadFrom or WithDurable (rediskit, sentinel, cluster) is
// the one every client sees: a context made for one topology means the
// same through rediskit.Client, whatever URL it was made from.
package callopt
