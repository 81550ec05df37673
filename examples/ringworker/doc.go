// Command ringworker is a worker that processes only the items its hash
// ring node owns: start it in several terminals and watch the items split
// between them and move when one stops.
//
//	go run ./examples/ringworker -redis redis://127.0.0.1:6379 -key example-ring
//	go run ./examples/ringworker -redis redis://127.0.0.1:6379 -key example-ring -print
//
// Python workers of redis-hashring's example.py (with the same key) can
// share the ring with it.
package main
