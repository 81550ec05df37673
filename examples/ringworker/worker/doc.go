// Package worker is the worker of the ringworker example: a process that
// handles only the items its hash ring node owns, and starts or stops
// handling items as nodes join and leave the ring. It is the Go version of
// redis-hashring's example.py, and cmd/rediskit's demo runs two of them in
// one process.
package worker
