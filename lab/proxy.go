package lab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Proxy is a TCP relay that can add latency to, black-hole or reset the
// traffic between clients and one upstream server. The lab puts one in front
// of every data node; it is exported so tests can put one in front of
// anything else.
//
// Latency is a round-trip figure: half of it delays each chunk travelling to
// the upstream, half each chunk travelling back. Chunks are delayed from the
// moment they were read, so pipelined traffic is not serialised behind the
// delay, and order is always preserved.
type Proxy struct {
	latency    atomic.Int64 // round-trip delay in nanoseconds
	blackholed atomic.Bool

	mu       sync.Mutex
	upstream string
	addr     string
	listener net.Listener
	conns    map[*proxyConn]struct{}
	closed   bool
	// lost is set when a black hole dropped bytes of a live connection, so
	// Restore knows those connections are desynchronised and must be reset.
	lost bool

	wg sync.WaitGroup // accept loop and every connection's relays
}

// NewProxy listens on listen (use "127.0.0.1:0" for a free port) and relays
// each accepted connection to upstream.
func NewProxy(listen, upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("lab: proxy for %s: listen on %s: %w", upstream, listen, err)
	}
	p := &Proxy{upstream: upstream, conns: map[*proxyConn]struct{}{}}
	p.startListener(ln)
	return p, nil
}

func (p *Proxy) startListener(ln net.Listener) {
	p.addr = ln.Addr().String()
	p.listener = ln
	p.wg.Add(1)
	go p.acceptLoop(ln)
}

// Addr is the address clients connect to.
func (p *Proxy) Addr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.addr
}

// Upstream is the address the proxy relays to.
func (p *Proxy) Upstream() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.upstream
}

// SetLatency sets the round-trip delay added to every connection, including
// the ones already open. Zero removes it.
func (p *Proxy) SetLatency(rtt time.Duration) {
	if rtt < 0 {
		rtt = 0
	}
	p.latency.Store(int64(rtt))
}

// Latency is the round-trip delay currently added.
func (p *Proxy) Latency() time.Duration { return time.Duration(p.latency.Load()) }

// BlackHole makes the proxy swallow traffic: it keeps accepting
// connections but nothing reaches the upstream and nothing comes back, the
// way a network partition looks to a client that is waiting for a reply.
func (p *Proxy) BlackHole() { p.blackholed.Store(true) }

// BlackHoled reports whether the proxy is swallowing traffic.
func (p *Proxy) BlackHoled() bool { return p.blackholed.Load() }

// Restore ends a black hole. Connections that lost bytes while black-holed
// are reset, because their request/reply streams can no longer be matched
// (a partition long enough to matter ends the same way in practice). The
// configured latency is left as it is; call SetLatency(0) to remove it.
func (p *Proxy) Restore() {
	if !p.blackholed.Swap(false) {
		return
	}
	p.mu.Lock()
	lost := p.lost
	p.lost = false
	p.mu.Unlock()
	if lost {
		p.ResetConnections()
	}
}

// ResetConnections aborts every open connection with a TCP reset on the
// client side. New connections are accepted as usual.
func (p *Proxy) ResetConnections() {
	p.mu.Lock()
	conns := make([]*proxyConn, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.abort()
	}
}

// Connections is the number of client connections currently relayed.
func (p *Proxy) Connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Suspend stops listening and resets every connection, so that clients see
// "connection refused", as they would for a stopped server. Resume listens
// on the same address again.
func (p *Proxy) Suspend() {
	p.mu.Lock()
	ln := p.listener
	p.listener = nil
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	p.ResetConnections()
}

// Resume listens again on the address the proxy had, after Suspend.
func (p *Proxy) Resume() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errors.New("lab: proxy is closed")
	}
	if p.listener != nil {
		return nil
	}
	var ln net.Listener
	var err error
	// The port was ours a moment ago; a just-closed listener can take a
	// moment to release it.
	for attempt := 0; attempt < 50; attempt++ {
		ln, err = net.Listen("tcp", p.addr)
		if err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("lab: proxy for %s: listen again on %s: %w", p.upstream, p.addr, err)
	}
	p.startListener(ln)
	return nil
}

// Close stops the proxy, closes every connection and waits for its
// goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	ln := p.listener
	p.listener = nil
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	p.ResetConnections()
	p.wg.Wait()
	return nil
}

func (p *Proxy) acceptLoop(ln net.Listener) {
	defer p.wg.Done()
	for {
		client, err := ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return // listener closed
		}
		c := &proxyConn{proxy: p, client: client, aborted: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = client.Close()
			return
		}
		p.conns[c] = struct{}{}
		p.wg.Add(1)
		p.mu.Unlock()
		go c.run()
	}
}

func (p *Proxy) forget(c *proxyConn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *Proxy) noteLoss() {
	p.mu.Lock()
	p.lost = true
	p.mu.Unlock()
}

// proxyConn relays one client connection. It owns four goroutines at most:
// a reader and a delayed writer per direction.
type proxyConn struct {
	proxy  *Proxy
	client net.Conn

	mu       sync.Mutex
	upstream net.Conn // nil until dialled

	abortOnce sync.Once
	aborted   chan struct{} // closed by abort
}

// chunk is a piece of a byte stream with the time it was read.
type chunk struct {
	data []byte
	read time.Time
}

func (c *proxyConn) run() {
	defer c.proxy.wg.Done()
	defer c.proxy.forget(c)
	defer c.closeBoth()

	if c.proxy.BlackHoled() {
		// Accept and never answer: hold the connection and discard what the
		// client sends until the black hole ends (Restore resets us) or the
		// client gives up.
		c.proxy.noteLoss()
		c.discardClient()
		return
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-c.aborted:
			cancel()
		case <-ctx.Done():
		}
	}()
	up, err := d.DialContext(ctx, "tcp", c.proxy.Upstream())
	cancel()
	if err != nil {
		// The server is down: close the client's connection at once.
		c.abort()
		return
	}
	c.mu.Lock()
	c.upstream = up
	c.mu.Unlock()
	select {
	case <-c.aborted: // reset while we were dialling
		return
	default:
	}

	var relays sync.WaitGroup
	relays.Add(2)
	go func() { defer relays.Done(); c.relay(c.client, up) }()
	go func() { defer relays.Done(); c.relay(up, c.client) }()
	relays.Wait()
}

func (c *proxyConn) discardClient() {
	buf := make([]byte, 4096)
	for {
		if _, err := c.client.Read(buf); err != nil {
			return
		}
	}
}

// relay copies src to dst, delaying each chunk by half the round-trip
// latency. When src ends cleanly, pending chunks are still delivered and
// dst's write side is closed; any error aborts the whole connection.
func (c *proxyConn) relay(src, dst net.Conn) {
	chunks := make(chan chunk, 256)
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.writeDelayed(dst, chunks)
	}()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			data := make([]byte, n)
			copy(data, buf[:n])
			select {
			case chunks <- chunk{data: data, read: time.Now()}:
			case <-c.aborted:
				close(chunks)
				<-done
				return
			}
		}
		if err != nil {
			close(chunks)
			<-done
			if !errors.Is(err, io.EOF) {
				c.abort()
				return
			}
			if tc, ok := dst.(*net.TCPConn); ok {
				_ = tc.CloseWrite()
			} else {
				c.abort()
			}
			return
		}
	}
}

func (c *proxyConn) writeDelayed(dst net.Conn, chunks <-chan chunk) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for ch := range chunks {
		if c.proxy.BlackHoled() {
			c.proxy.noteLoss()
			continue
		}
		due := ch.read.Add(c.proxy.Latency() / 2)
		if wait := time.Until(due); wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-c.aborted:
				return
			}
		}
		if c.proxy.BlackHoled() {
			c.proxy.noteLoss()
			continue
		}
		if _, err := dst.Write(ch.data); err != nil {
			c.abort()
			return
		}
	}
}

// abort resets the client side (SO_LINGER 0 sends RST) and closes both
// connections, which unblocks every relay goroutine.
func (c *proxyConn) abort() {
	c.abortOnce.Do(func() {
		close(c.aborted)
		if tc, ok := c.client.(*net.TCPConn); ok {
			_ = tc.SetLinger(0)
		}
		c.closeBoth()
	})
}

func (c *proxyConn) closeBoth() {
	_ = c.client.Close()
	c.mu.Lock()
	up := c.upstream
	c.mu.Unlock()
	if up != nil {
		_ = up.Close()
	}
}
