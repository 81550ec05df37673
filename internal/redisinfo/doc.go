// Package redisinfo parses the replies rediskit reads to learn a topology:
// ROLE, INFO, and the SENTINEL tables. go-redis returns these as generic
// values; the shapes differ between RESP2 and RESP3, and both are handled.
package redisinfo
