// Package benchcmp runs one operation through a client of ours and through
// plain go-redis in the same benchmark: side by side (Parallel), and
// interleaved so both see the same machine (Interleaved).
package benchcmp
