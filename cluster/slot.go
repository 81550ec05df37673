package cluster

import "strings"

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Slot is the hash slot of key, as a cluster node computes it: CRC16
// (XMODEM) of the key modulo 16384, or of its hash tag, the part between
// the first '{' and the next '}' when that part is not empty, so that
// "{user:1}:cart" and "{user:1}:orders" share a slot.
func Slot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % Slots)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, no reflection, initial 0),
// the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crcTable[byte(crc>>8)^s[i]]
	}
	return crc
}

// crcTable is crc16's table, computed once; never written after.
var crcTable = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8 //nolint:gosec // i < 256
		for range 8 {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()
