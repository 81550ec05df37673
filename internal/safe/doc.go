// Package safe runs rediskit's own goroutines and the work they do so
// that a panic (a server sent something the parsing code could not
// handle, or a bug of ours) becomes an error that is reported, not the end
// of the process. The application cannot recover a panic in a goroutine it
// did not start, so every goroutine rediskit starts runs its work through
// Call or Go.
package safe
