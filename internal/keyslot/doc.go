// Package keyslot computes Redis Cluster hash slots, and the short hash
// tags that name each slot. The cluster client routes by it, and the
// exactly-once write path places its token keys with it.
package keyslot
