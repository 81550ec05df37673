package testkit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// FakeServer is a tiny RESP server on 127.0.0.1 for the tests of what a
// client does with replies no real server sends (hostile, malformed,
// oversized): it reads commands and writes, for each, what its handler
// returns (raw RESP; "" writes nothing). Connections stay open until the
// client closes them or the test ends; the test's cleanup stops the
// listener, every connection and every goroutine.
type FakeServer struct {
	ln     net.Listener
	handle func(s *FakeSession, cmd []string) string
	done   chan struct{} // closed when the server stops
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// FakeSession is one client connection's state, for the handler.
type FakeSession struct {
	// RESP3 is for the handler to set when it accepted HELLO 3.
	RESP3 bool
	// Later writes text on the connection after d, unprompted, unless the
	// server stops first.
	Later func(d time.Duration, text string)
}

// NewFakeServer starts a FakeServer whose handler answers each command.
func NewFakeServer(t testing.TB, handle func(s *FakeSession, cmd []string) string) *FakeServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &FakeServer{ln: ln, handle: handle, done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	s.wg.Go(s.accept)
	t.Cleanup(s.close)
	return s
}

// Addr is the server's address.
func (s *FakeServer) Addr() string { return s.ln.Addr().String() }

func (s *FakeServer) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Go(func() { s.serve(c) })
	}
}

func (s *FakeServer) serve(c net.Conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		_ = c.Close()
	}()
	rd := bufio.NewReader(c)
	// Written through a buffer, so that the server's writes allocate
	// nothing (io.WriteString on a net.Conn would copy each reply): tests
	// count the process's allocations.
	wr := bufio.NewWriterSize(c, 32<<10)
	sess := &FakeSession{Later: func(d time.Duration, text string) {
		s.wg.Go(func() {
			select {
			case <-time.After(d):
				_, _ = io.WriteString(c, text)
			case <-s.done:
			}
		})
	}}
	for {
		cmd, err := ReadCommand(rd)
		if err != nil {
			return
		}
		if reply := s.handle(sess, cmd); reply != "" {
			if _, err := wr.WriteString(reply); err != nil {
				return
			}
			if err := wr.Flush(); err != nil {
				return
			}
		}
	}
}

// close stops the server: the listener, every connection, every goroutine.
func (s *FakeServer) close() {
	close(s.done)
	_ = s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}

// ReadCommand reads one command as go-redis sends it: an array of bulk
// strings.
func ReadCommand(rd *bufio.Reader) ([]string, error) {
	line, err := rd.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, fmt.Errorf("not a command: %q", line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil || n < 1 || n > 1024 {
		return nil, fmt.Errorf("bad command length %q", line)
	}
	cmd := make([]string, n)
	for i := range cmd {
		h, err := rd.ReadString('\n')
		if err != nil {
			return nil, err
		}
		size, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(h, "$")))
		if err != nil || size < 0 || size > 1<<20 {
			return nil, fmt.Errorf("bad argument header %q", h)
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(rd, b); err != nil {
			return nil, err
		}
		cmd[i] = string(b[:size])
	}
	return cmd, nil
}
