package respguard

import (
	"context"
	"net"
	"sync"
	"syscall"
)

// DialFunc is the signature of go-redis's Options.Dialer.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// WrapDialer returns a dialer that dials with dial and wraps each
// connection with Wrap, naming the server by the address dialled, or by
// the connection's remote address when what was dialled is a label rather
// than host:port (go-redis passes Options.Addr, which rediskit's pub/sub
// clients set to a name, such as "cluster/pubsub", their dialers
// connecting to whichever node is current). Dial
// errors are returned unchanged. A nil dial is a plain net.Dialer, without
// TLS: go-redis does TLS itself only when it dials, so a dialer for TLS
// must do the handshake (and this wraps the TLS connection, whose Read
// returns the decrypted stream).
func WrapDialer(dial DialFunc, lim Limits) DialFunc {
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		name := addr
		if _, port, err := net.SplitHostPort(addr); (err != nil || port == "") && network != "unix" {
			if ra := c.RemoteAddr(); ra != nil {
				name = ra.String()
			}
		}
		return wrap(c, lim, name), nil
	}
}

// Wrap returns c with its reads checked against lim: every reply the
// server sends is passed on unchanged, or refused, before go-redis has the
// line that exceeds a limit, with a *LimitError (inside a *net.OpError)
// from Read; the connection is then closed. The server is named by c's
// remote address.
//
// The connection keeps syscall.Conn when c has it, so that go-redis's
// check of idle pooled connections (a non-blocking peek at the socket)
// still finds those the server closed.
func Wrap(c net.Conn, lim Limits) net.Conn {
	addr := ""
	if a := c.RemoteAddr(); a != nil {
		addr = a.String()
	}
	return wrap(c, lim, addr)
}

func wrap(c net.Conn, lim Limits, addr string) net.Conn {
	g := &conn{Conn: c, sc: newScanner(lim, addr)}
	if sc, ok := c.(syscall.Conn); ok {
		return &sysConn{conn: g, sys: sc}
	}
	return g
}

// sysConn is a conn over a connection that has a file descriptor.
type sysConn struct {
	*conn
	sys syscall.Conn
}

// SyscallConn is the wrapped connection's. go-redis only peeks through it
// (MSG_PEEK); reading the socket through it would bypass the checks.
func (c *sysConn) SyscallConn() (syscall.RawConn, error) { return c.sys.SyscallConn() }

// Sizes of the buffer that holds back an incomplete line.
const (
	// holdSize is the buffer's first size: a held line is nearly always
	// a short header cut by the end of a read.
	holdSize = 4 << 10
	// minRead is the least room to read into after a held line; with
	// less, the buffer doubles.
	minRead = 512
	// keepCap is the largest buffer kept once empty: a connection that
	// once held a long line does not keep its memory.
	keepCap = 4 * holdSize
)

// conn checks what the server sends. Write and the deadlines are the
// wrapped connection's.
type conn struct {
	net.Conn

	mu sync.Mutex // one Read at a time: the scanner follows one stream
	sc scanner
	// buf holds what was read and scanned but not yet returned: buf[off:
	// ready] may be returned; buf[ready:] is a line that is not complete
	// yet, after its type byte, held back until it is.
	buf        []byte
	off, ready int
	err        error // once a reply was refused: what every Read returns

	closeOnce sync.Once
	closeErr  error
}

// Read returns the server's bytes unchanged, up to the type byte of a line
// not yet complete, whose rest is held back until it is (a held line is at
// most MaxLine bytes, so the buffer holding it is bounded too; scanner.held
// says why the type byte passes). When a reply exceeds a limit, the bytes
// before its offending line and that line's type byte are returned first
// (replies before it still succeed), then the error, every time, and the
// connection is closed when the error is first returned.
func (c *conn) Read(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for {
		// Scanned bytes waiting are returned first, before a refusal.
		if c.off < c.ready {
			return c.returnReady(p), nil
		}
		if c.err != nil {
			// Closed only now, once the bytes before the refused reply
			// were returned: go-redis sets a deadline before each read,
			// which would fail on a closed connection and lose them.
			_ = c.Close()
			return 0, c.err
		}
		if len(p) == 0 {
			return 0, nil
		}
		if len(c.buf) == 0 {
			if n, done, err := c.readInto(p); done {
				return n, err
			}
			continue
		}
		if done, err := c.readAfterHeld(); done {
			return 0, err
		}
	}
}

// returnReady copies into p what was scanned and may be returned, and
// moves the held line, if any, to the start of buf once all of it was.
func (c *conn) returnReady(p []byte) int {
	n := copy(p, c.buf[c.off:c.ready])
	c.off += n
	if c.off == c.ready {
		c.compact()
	}
	return n
}

// readInto reads with nothing held: the server's bytes go straight into p,
// and only a line left incomplete at the end is copied aside. done says
// whether Read returns n and err; when not (a refused reply with nothing
// before it in p, or a read that returned only held bytes), Read goes
// round again.
func (c *conn) readInto(p []byte) (n int, done bool, err error) {
	n, err = c.Conn.Read(p)
	if n > 0 {
		if cut, lerr := c.sc.scan(p[:n]); lerr != nil {
			c.fail(lerr)
			if cut > 0 {
				return cut, true, nil // the error comes with the next Read
			}
			return 0, false, nil
		}
		held := c.sc.held()
		if held > 0 {
			c.buf = append(c.buf[:0], p[n-held:n]...)
		}
		if n > held {
			return n - held, true, err
		}
	}
	if err != nil || n == 0 {
		return 0, true, err
	}
	return 0, false, nil
}

// readAfterHeld reads, with a line held, the line's rest after it in buf,
// so that a long line arriving in small pieces is not copied again for
// each piece, and marks what may now be returned. done says whether Read
// returns 0 and err; when not, Read goes round again and returns the
// ready bytes (with bytes to return, a read error is left for the next
// Read to meet again) or reads once more.
func (c *conn) readAfterHeld() (done bool, err error) {
	c.reserve()
	h := len(c.buf)
	n, err := c.Conn.Read(c.buf[h:cap(c.buf)])
	c.buf = c.buf[:h+n]
	if n > 0 {
		cut, lerr := c.sc.scan(c.buf[h:])
		if lerr != nil {
			c.buf = c.buf[:h+cut] // the held line starts at 0, so h+cut >= 0
			c.ready = len(c.buf)
			c.fail(lerr)
			return false, nil
		}
		c.ready = len(c.buf) - c.sc.held()
	}
	return c.ready == 0 && (err != nil || n == 0), err
}

// compact moves the held line to the start of buf once everything before
// it was returned.
func (c *conn) compact() {
	k := copy(c.buf, c.buf[c.ready:])
	c.buf = c.buf[:k]
	c.off, c.ready = 0, 0
	if k == 0 && cap(c.buf) > keepCap {
		c.buf = nil
	}
}

// reserve makes room to read after the held line. The held line is at
// most MaxLine+1 bytes (the scanner refuses a longer one), so buf stays
// below 2·(MaxLine+1+minRead).
func (c *conn) reserve() {
	if cap(c.buf)-len(c.buf) >= minRead {
		return
	}
	nb := make([]byte, len(c.buf), max(2*cap(c.buf), holdSize))
	copy(nb, c.buf)
	c.buf = nb
}

// fail records a refused reply: its stream cannot be followed any further,
// and its server is not to be trusted. Read returns the error, and closes
// the connection, once the bytes before the reply are returned.
func (c *conn) fail(lerr *LimitError) {
	op := &net.OpError{Op: "read", Source: c.Conn.LocalAddr(), Addr: c.Conn.RemoteAddr(), Err: lerr}
	if op.Addr != nil {
		op.Net = op.Addr.Network()
	}
	c.err = op
}

// Close closes the wrapped connection once; later calls return what the
// first returned.
func (c *conn) Close() error {
	c.closeOnce.Do(func() { c.closeErr = c.Conn.Close() })
	return c.closeErr
}
