package cluster

import "github.com/rediskit/rediskit/internal/keyslot"

// Slots is the number of hash slots of a Redis Cluster.
const Slots = keyslot.Slots

// Slot is the hash slot of key, as a cluster node computes it: CRC16
// (XMODEM) of the key modulo 16384, or of its hash tag, the part between
// the first '{' and the next '}' when that part is not empty, so that
// "{user:1}:cart" and "{user:1}:orders" share a slot.
func Slot(key string) int { return keyslot.Of(key) }
