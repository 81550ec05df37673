package testkit

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer guarded by a mutex, which many goroutines may
// write while another reads it: the sink tests give a logger, or the
// stdout and stderr of a process they start and poll. The zero value is
// empty and ready to use; a Buffer must not be copied after first use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (s *Buffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *Buffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
