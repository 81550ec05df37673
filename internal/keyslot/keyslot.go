package keyslot

import "strings"

// Slots is the number of hash slots of a Redis Cluster.
const Slots = 16384

// Of is the hash slot of key, as a cluster node computes it: CRC16
// (XMODEM) of the key modulo 16384, or of its hash tag, the part between
// the first '{' and the next '}' when that part is not empty.
func Of(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return int(crc16(key) % Slots)
}

// Tag returns a short string whose slot is slot (0 <= slot < Slots):
// "{" + Tag(s) + "}" in any key puts that key in slot s. Using the slot's
// tag rather than a key's own text keeps a derived key in the key's slot
// whatever the key holds (braces included).
func Tag(slot int) string { return tags[slot] }

// tags holds, for each slot, the first string of the alphabet below (by
// length, then order) hashing to it: every slot has one of at most three
// characters. Computed once at start (a few hundred thousand CRCs, under a
// millisecond), never written after.
var tags = func() *[Slots]string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	var t [Slots]string
	left := Slots
	try := func(s string) {
		if slot := crc16(s) % Slots; t[slot] == "" {
			t[slot] = s
			left--
		}
	}
	for i := 0; i < len(alphabet) && left > 0; i++ {
		try(alphabet[i : i+1])
	}
	for i := 0; i < len(alphabet) && left > 0; i++ {
		for j := 0; j < len(alphabet) && left > 0; j++ {
			try(string([]byte{alphabet[i], alphabet[j]}))
		}
	}
	for i := 0; i < len(alphabet) && left > 0; i++ {
		for j := 0; j < len(alphabet) && left > 0; j++ {
			for k := 0; k < len(alphabet) && left > 0; k++ {
				try(string([]byte{alphabet[i], alphabet[j], alphabet[k]}))
			}
		}
	}
	if left > 0 {
		panic("keyslot: a slot has no tag of three characters") // a fixed computation: cannot happen
	}
	return &t
}()

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
