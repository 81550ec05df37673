// Package testkit holds what rediskit's tests share: a context bounded by
// the test, a polling wait, and a Buffer for loggers and process output
// written from many goroutines.
package testkit
