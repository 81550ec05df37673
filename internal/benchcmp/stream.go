package benchcmp

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Stream is the throughput ceiling of a pipelining client on this
// machine: one connection to one node, a writer goroutine that sends
// whatever callers have queued without waiting for earlier replies, and a
// reader goroutine that hands each reply to its caller in order (the
// shape of rueidis's connection), with none of a client's work: no typed
// replies (a reply is a status, an error or a bulk string, its bytes
// discarded), no routing, no timeouts, no allocation per command once
// warm. A client of that shape cannot beat it; the benchmarks show it
// beside the real clients so that a goal above it reads as what it is.
//
// It runs GET and SET of a short value only (see RunOp), without
// authentication or TLS, for benchmarks on a lab node.
type Stream struct {
	conn  net.Conn
	queue chan *streamCall // to the writer
	sent  chan *streamCall // from the writer to the reader, in wire order
	calls sync.Pool
	wg    sync.WaitGroup
	once  sync.Once

	mu  sync.Mutex
	err error // the connection's failure, once it failed
}

type streamCall struct {
	args [3]string
	n    int
	done chan struct{}
	nil  bool
	err  error
}

// streamDepth bounds the calls queued or awaiting their replies: a
// benchmark's goroutines, each with one call at a time.
const streamDepth = 4096

// DialStream connects a Stream to addr.
func DialStream(ctx context.Context, addr string) (*Stream, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	s := &Stream{conn: conn, queue: make(chan *streamCall, streamDepth), sent: make(chan *streamCall, streamDepth)}
	s.calls.New = func() any { return &streamCall{done: make(chan struct{}, 1)} }
	s.wg.Add(2)
	go s.write()
	go s.read()
	return s, nil
}

// Do runs op ("GET" or "SET") on key; a missing key's reply is redis.Nil.
// Callers must not exceed streamDepth at once.
func (s *Stream) Do(_ context.Context, op, key string) error {
	c := s.calls.Get().(*streamCall)
	c.args[0], c.args[1], c.n = op, key, 2
	if op == "SET" {
		c.args[2], c.n = "v", 3
	}
	if err := s.failed(); err != nil {
		s.calls.Put(c)
		return err
	}
	s.queue <- c
	<-c.done
	err := c.err
	if c.nil {
		err = redis.Nil
	}
	s.calls.Put(c)
	return err
}

// Close closes the connection and stops the goroutines, once every call
// has returned.
func (s *Stream) Close() error {
	s.once.Do(func() {
		s.fail(net.ErrClosed)
		close(s.queue)
	})
	s.wg.Wait()
	return nil
}

func (s *Stream) failed() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *Stream) fail(err error) {
	s.mu.Lock()
	if s.err == nil {
		s.err = err
	}
	s.mu.Unlock()
	_ = s.conn.Close()
}

// write sends each queued call, flushing when the queue is empty.
func (s *Stream) write() {
	defer s.wg.Done()
	defer close(s.sent)
	w := bufio.NewWriterSize(s.conn, 64<<10)
	for c := range s.queue {
		for c != nil {
			// Encoded before the reader may answer it: once answered (a
			// reply, or the connection's failure) it is its caller's again.
			// No reply comes before the flush below.
			encode(w, c.args[:c.n])
			s.sent <- c
			select {
			case c = <-s.queue:
			default:
				c = nil
			}
		}
		if err := w.Flush(); err != nil {
			s.fail(err)
		}
	}
}

// encode writes args as a RESP array of bulk strings.
func encode(w *bufio.Writer, args []string) {
	var num [20]byte
	_ = w.WriteByte('*')
	_, _ = w.Write(strconv.AppendInt(num[:0], int64(len(args)), 10))
	_, _ = w.WriteString("\r\n")
	for _, a := range args {
		_ = w.WriteByte('$')
		_, _ = w.Write(strconv.AppendInt(num[:0], int64(len(a)), 10))
		_, _ = w.WriteString("\r\n")
		_, _ = w.WriteString(a)
		_, _ = w.WriteString("\r\n")
	}
}

// read answers the sent calls in order; once the connection failed, with
// its error, until the writer stops.
func (s *Stream) read() {
	defer s.wg.Done()
	rd := bufio.NewReaderSize(s.conn, 64<<10)
	for {
		r, err := readReply(rd)
		if err != nil {
			s.fail(err)
			err = s.failed()
			for call := range s.sent {
				call.nil, call.err = false, err
				call.done <- struct{}{}
			}
			return
		}
		call, ok := <-s.sent
		if !ok {
			return
		}
		call.nil, call.err = r.nil, r.err
		call.done <- struct{}{}
	}
}

type streamReply struct {
	nil bool
	err error
}

// readReply reads one status, integer, error or bulk-string reply.
func readReply(rd *bufio.Reader) (streamReply, error) {
	line, err := rd.ReadSlice('\n')
	if err != nil {
		return streamReply{}, err
	}
	if len(line) < 3 {
		return streamReply{}, fmt.Errorf("benchcmp: short reply line %q", line)
	}
	body := line[1 : len(line)-2]
	switch line[0] {
	case '+', ':':
		return streamReply{}, nil
	case '-':
		return streamReply{err: errors.New(string(body))}, nil
	case '$':
		n, err := strconv.Atoi(string(body))
		if err != nil {
			return streamReply{}, err
		}
		if n < 0 {
			return streamReply{nil: true}, nil
		}
		_, err = rd.Discard(n + 2)
		return streamReply{}, err
	}
	return streamReply{}, errors.New("benchcmp: unexpected reply type " + strconv.QuoteRune(rune(line[0])))
}
