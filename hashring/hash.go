package hashring

import (
	"hash/crc32"
	"unsafe"

	"github.com/OneOfOne/xxhash"
)

// RingSize is the number of points on the ring: points are 0 … 2^32−1.
const RingSize = 1 << 32

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=Hash -linecomment

// Hash is the function that maps a key to its point on the ring. Every node
// of a ring must use the same one. Its String is the name redis-hashring
// uses: "xxhash" or "crc32".
type Hash int

const (
	// XXHash is XXH32 with seed 0 of the key's bytes, the default (and
	// redis-hashring's HashAlgorithm.XXHASH).
	XXHash Hash = iota // xxhash
	// CRC32 is CRC-32 (IEEE) of the key's bytes, for rings created before
	// redis-hashring supported xxHash (its HashAlgorithm.CRC32).
	CRC32 // crc32
)

// Point returns the key's point on the ring. The key's bytes are hashed as
// they are; the Python library hashes key.encode(), the UTF-8 encoding, so
// a key shared with Python nodes must be valid UTF-8 (Go string literals
// and strconv output are).
func (h Hash) Point(key string) uint32 {
	if h == CRC32 {
		// crc32.ChecksumIEEE takes a []byte; view the string's bytes
		// without copying (crc32 only reads them).
		return crc32.ChecksumIEEE(unsafe.Slice(unsafe.StringData(key), len(key))) //nolint:gosec // read-only view, see above
	}
	return xxhash.ChecksumString32(key)
}

func (h Hash) valid() bool { return h == XXHash || h == CRC32 }

// Point returns the key's point on the ring with the default hash, XXH32
// (seed 0): Point("hello") is 4211111929.
func Point(key string) uint32 { return XXHash.Point(key) }
