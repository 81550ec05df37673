package lab

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Proxy is a TCP relay that can add latency to, black-hole or reset the
// traffic between clients and one upstream server. The lab puts one in front
// of every data node (and, with Config.Partitions, of every sentinel, where
// it also enforces Lab.Partition by the clients' addresses); it is exported
// so tests can put one in front of anything else.
//
// Latency is a round-trip figure: half of it delays each chunk travelling to
// the upstream, half each chunk travelling back. Chunks are delayed from the
// moment they were read, so pipelined traffic is not serialised behind the
// delay, and order is always preserved. A chunk is never written before it
// is due, and on Linux (a timerfd wakes the proxy) usually within 100 µs
// after; runtime timers would add up to a millisecond.
type Proxy struct {
	latency    atomic.Int64 // round-trip delay in nanoseconds
	blackholed atomic.Bool
	// cut is the lab's partition as this proxy enforces it: which client
	// addresses are cut off from the endpoint behind it, and how; nil when
	// none is. It is an immutable snapshot, replaced whole by setCut, so
	// the check on every accepted connection and every chunk is one atomic
	// load (and, while a partition is on, a map lookup): no lock on the
	// hot path.
	cut atomic.Pointer[cutSet]
	// sourceBound: dial the upstream from the client's own loopback
	// address, so that the server (CLIENT LIST, its log) sees who is
	// talking, not the proxy. Set before the first connection.
	sourceBound bool

	mu       sync.Mutex
	upstream string
	addr     string
	listener net.Listener
	// release frees the port while the proxy is suspended: Suspend holds
	// it (reservePort, holdPort), so that no other process listens there
	// meanwhile. suspends counts Suspend calls: a holdPort of an earlier
	// one that a Resume overtook lets the port go.
	release  func()
	suspends uint64
	conns    map[*proxyConn]struct{}
	closed   bool
	// lost is set when a black hole dropped bytes of a live connection, so
	// Restore knows those connections are desynchronised and must be reset.
	lost bool

	wg sync.WaitGroup // accept loop, every connection's relays, the delay queue

	delay *delayQueue

	// trace, when set before the first connection (benchmarks), is told of
	// every chunk about to be written: when it was due and the time.
	trace func(due, now time.Time)
}

// NewProxy listens on listen (use "127.0.0.1:0" for a free port) and relays
// each accepted connection to upstream.
func NewProxy(listen, upstream string) (*Proxy, error) {
	return newProxy(listen, upstream, false)
}

// newProxy is NewProxy; sourceBound makes it dial the upstream from each
// client's own address (the lab's proxies with Config.Partitions).
func newProxy(listen, upstream string, sourceBound bool) (*Proxy, error) {
	if errPlatform != nil {
		return nil, errPlatform
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return nil, fmt.Errorf("lab: proxy for %s: listen on %s: %w", upstream, listen, err)
	}
	p := &Proxy{upstream: upstream, conns: map[*proxyConn]struct{}{}, sourceBound: sourceBound}
	p.delay = &delayQueue{proxy: p}
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
	if ln == nil { // suspended already (or closed): its port is held, or was never ours
		p.mu.Unlock()
		p.ResetConnections()
		return
	}
	p.suspends++
	gen, addr := p.suspends, p.addr
	p.wg.Add(1) // under mu: Close, which waits, sets closed under it
	p.mu.Unlock()
	_ = ln.Close()
	p.ResetConnections()
	go p.holdPort(gen, addr)
}

// holdPort keeps the suspended proxy's port, refusing connections, until
// Resume or Close (reservePort): it tries for a second, while the sockets
// of the connections just reset are released, and gives up if Resume or
// Close came first.
func (p *Proxy) holdPort(gen uint64, addr string) {
	defer p.wg.Done()
	for range 100 {
		release := reservePort(addr)
		p.mu.Lock()
		current := p.suspends == gen && p.listener == nil && !p.closed
		if current && release != nil {
			p.release = release
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		if release != nil {
			release() // overtaken by Resume or Close
		}
		if !current {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// releasePort frees the port Suspend held, if it did. Called with p.mu
// held.
func (p *Proxy) releasePort() {
	if p.release != nil {
		p.release()
		p.release = nil
	}
}

// Resume listens again on the address the proxy had, after Suspend.
func (p *Proxy) Resume() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return errors.New("lab: proxy is closed")
	}
	if p.listener != nil {
		p.mu.Unlock()
		return nil
	}
	p.suspends++ // a holdPort still trying lets the port go
	p.releasePort()
	addr, upstream := p.addr, p.upstream
	p.mu.Unlock()
	var ln net.Listener
	var err error
	// The port was ours a moment ago; a just-closed listener (or holdPort's
	// socket, while it sees it is overtaken) can take a moment to release it.
	for attempt := 0; attempt < 50; attempt++ {
		ln, err = net.Listen("tcp", addr)
		if err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		return fmt.Errorf("lab: proxy for %s: listen again on %s: %w", upstream, addr, err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		_ = ln.Close()
		return errors.New("lab: proxy is closed")
	case p.listener != nil: // another Resume won
		_ = ln.Close()
		return nil
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
	p.releasePort()
	p.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	p.ResetConnections()
	p.delay.close()
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
		c := &proxyConn{proxy: p, client: client, src: remoteIP(client), aborted: make(chan struct{})}
		p.mu.Lock()
		if p.closed || p.listener != ln {
			// Accepted just before Suspend or Close took the listener, and
			// not yet among the connections they reset: reset it here, or
			// it would relay to a server the test has just "stopped".
			closed := p.closed
			p.mu.Unlock()
			c.abort()
			if closed {
				return
			}
			continue // the listener is closed: the next Accept fails
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

// remoteIP is the address a connection comes from (the zero Addr when it
// is not TCP).
func remoteIP(c net.Conn) netip.Addr {
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}

// proxyConn relays one client connection. It owns four goroutines: a
// reader and a writer per direction (the writer only works when a write
// would block; delayed chunks are written by the proxy's delay queue).
type proxyConn struct {
	proxy  *Proxy
	client net.Conn
	src    netip.Addr // the client's address: who is talking, for partitions

	// held: accepted while a Drop partition cut its source off, so never
	// dialled upstream; it only swallows what the client sends until the
	// partition is lifted, which resets it.
	held atomic.Bool
	// cutLoss: a Drop partition swallowed bytes of this connection, so its
	// streams are out of step and lifting the partition resets it.
	cutLoss atomic.Bool

	mu       sync.Mutex
	upstream net.Conn // nil until dialled

	abortOnce sync.Once
	aborted   chan struct{} // closed by abort
}

func (c *proxyConn) run() {
	defer c.proxy.wg.Done()
	defer c.proxy.forget(c)
	defer c.closeBoth()

	switch c.proxy.cutMode(c.src) {
	case Refuse:
		c.abort() // a reset at once, as a firewall's reject would
		return
	case Drop:
		// Nothing gets through: the upstream never sees the connection.
		// setCut resets it when the partition is lifted; checking again
		// after marking it held closes the race with that reset (one of
		// the two sees the other's write).
		c.held.Store(true)
		if c.proxy.cutMode(c.src) != Drop {
			c.abort()
			return
		}
		c.discardClient()
		return
	}
	if c.proxy.BlackHoled() {
		// Accept and never answer: hold the connection and discard what the
		// client sends until the black hole ends (Restore resets us) or the
		// client gives up.
		c.proxy.noteLoss()
		c.discardClient()
		return
	}
	d := net.Dialer{Timeout: 2 * time.Second}
	if c.proxy.sourceBound && c.src.IsLoopback() {
		d.LocalAddr = &net.TCPAddr{IP: c.src.AsSlice()}
	}
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

// maxQueued bounds the chunks of one direction waiting out their delay or
// a slow reader: beyond it, the proxy stops reading the source.
const maxQueued = 256

// direction is one way of a connection: the chunks read from one side,
// written to the other after the delay, in order.
type direction struct {
	c   *proxyConn
	dst net.Conn
	raw syscall.RawConn // dst's, for writes that must not block

	mu sync.Mutex
	// queued counts the chunks read and not yet written or dropped. The
	// reader writes a chunk itself only when none is queued.
	queued  int
	lastDue time.Time
	// stalled: a write would have blocked, so the writer goroutine owns
	// the writes until it has written the backlog.
	stalled bool
	backlog []*item

	kick  chan struct{} // the backlog has work (capacity 1)
	space chan struct{} // queued fell below maxQueued (capacity 1)
	ended chan struct{} // closed once the end of the stream was handled
	quit  chan struct{} // closed when the writer goroutine may end
}

// relay copies src to dst, delaying each chunk by half the round-trip
// latency from the moment it was read. When src ends cleanly, pending
// chunks are still delivered and dst's write side is closed; an error
// delivers them too and then aborts the whole connection.
//
// Delayed chunks wait in the proxy's delay queue, whose goroutine writes
// them when due. A write that would block hands over to the direction's
// writer goroutine, which waits for dst; the chunks behind it follow it
// there, so order is kept.
func (c *proxyConn) relay(src, dst net.Conn) {
	d := &direction{c: c, dst: dst,
		kick: make(chan struct{}, 1), space: make(chan struct{}, 1),
		ended: make(chan struct{}), quit: make(chan struct{})}
	if sc, ok := dst.(syscall.Conn); ok {
		d.raw, _ = sc.SyscallConn()
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		d.writeBacklog()
	}()
	defer func() {
		close(d.quit)
		<-writerDone
	}()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if !d.send(&item{dir: d, data: bytes.Clone(buf[:n]), read: time.Now()}) {
				return // aborted
			}
		}
		if err != nil {
			if !d.send(&item{dir: d, read: time.Now(), clean: errors.Is(err, io.EOF)}) {
				return
			}
			select {
			case <-d.ended:
			case <-c.aborted:
			}
			return
		}
	}
}

// send queues it to be written when due, or writes it now when it is due
// and nothing is queued before it. false when the connection was aborted.
func (d *direction) send(it *item) bool {
	c := d.c
	if it.data != nil && c.proxy.BlackHoled() {
		c.proxy.noteLoss()
		return true
	}
	// A partition cuts the end of the stream too: a FIN or a reset does
	// not cross a real one either. A swallowed end leaves the relay
	// waiting for the abort that lifting the partition brings.
	if c.cutOff() {
		return !c.isAborted()
	}
	it.due = it.read
	if it.data != nil {
		it.due = it.read.Add(c.proxy.Latency() / 2)
	} // the end follows the last chunk at once
	d.mu.Lock()
	for it.data != nil && d.queued >= maxQueued {
		d.mu.Unlock()
		select {
		case <-d.space:
		case <-c.aborted:
			return false
		}
		d.mu.Lock()
	}
	if it.due.Before(d.lastDue) {
		it.due = d.lastDue // the latency was lowered, or the end: keep the order
	}
	d.lastDue = it.due
	now := d.queued == 0 && !d.stalled && !it.due.After(it.read)
	if it.data != nil {
		d.queued++
	}
	d.mu.Unlock()
	if now {
		d.deliver(it)
		return true
	}
	if !c.proxy.delay.push(it) {
		c.abort() // the proxy is closing
		return false
	}
	return true
}

// deliver writes it, or hands it to the writer goroutine when that one
// owns the writes. It is called for the chunks of a direction in order,
// by one goroutine at a time: the delay queue's, or the reader's when
// nothing is queued.
func (d *direction) deliver(it *item) {
	d.mu.Lock()
	if d.stalled {
		d.backlog = append(d.backlog, it)
		d.mu.Unlock()
		d.kickWriter()
		return
	}
	d.mu.Unlock()
	if tr := d.c.proxy.trace; tr != nil && it.data != nil {
		tr(it.due, time.Now())
	}
	if d.settled(it) {
		return
	}
	n, err := d.tryWrite(it.data)
	switch {
	case err != nil:
		d.c.abort()
		d.written()
	case n < len(it.data):
		it.data = it.data[n:]
		d.mu.Lock()
		d.stalled = true
		d.backlog = append(d.backlog, it)
		d.mu.Unlock()
		d.kickWriter()
	default:
		d.written()
	}
}

// settled handles an item due now that needs no write, and reports
// whether it was one: the end of the stream, or a chunk dropped.
func (d *direction) settled(it *item) bool {
	switch {
	case it.data == nil:
		if !d.c.cutOff() { // else swallowed, as in send
			d.end(it)
		}
	case d.dropped():
		d.written()
	default:
		return false
	}
	return true
}

// dropped reports whether a chunk due now must not be written: the
// connection was aborted, the proxy is black-holed or a partition cuts the
// connection off.
func (d *direction) dropped() bool {
	select {
	case <-d.c.aborted:
		return true
	default:
	}
	if d.c.proxy.BlackHoled() {
		d.c.proxy.noteLoss()
		return true
	}
	return d.c.cutOff()
}

// tryWrite writes what dst takes without blocking.
func (d *direction) tryWrite(b []byte) (int, error) {
	if d.raw == nil {
		return d.dst.Write(b)
	}
	var n int
	var werr error
	err := d.raw.Write(func(fd uintptr) bool {
		n, werr = writeFD(fd, b)
		return true
	})
	if err == nil {
		err = werr
	}
	return n, err
}

// written counts a chunk as written (or dropped).
func (d *direction) written() {
	d.mu.Lock()
	d.queued--
	d.mu.Unlock()
	select {
	case d.space <- struct{}{}:
	default:
	}
}

// end handles the end of the stream, after every chunk before it.
func (d *direction) end(it *item) {
	defer close(d.ended)
	select {
	case <-d.c.aborted:
		return
	default:
	}
	if !it.clean {
		d.c.abort()
		return
	}
	if tc, ok := d.dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	} else {
		d.c.abort()
	}
}

func (d *direction) kickWriter() {
	select {
	case d.kick <- struct{}{}:
	default:
	}
}

// writeBacklog is the writer goroutine: it writes the backlog, blocking
// on dst, while the direction is stalled.
func (d *direction) writeBacklog() {
	for {
		select {
		case <-d.kick:
		case <-d.quit:
			return
		case <-d.c.aborted:
			return
		}
		for {
			d.mu.Lock()
			if len(d.backlog) == 0 {
				d.stalled = false
				d.mu.Unlock()
				break
			}
			it := d.backlog[0]
			d.backlog[0] = nil
			d.backlog = d.backlog[1:]
			d.mu.Unlock()
			if d.settled(it) {
				continue
			}
			if _, err := d.dst.Write(it.data); err != nil {
				d.c.abort()
			}
			d.written()
		}
	}
}

// cutOff reports whether a chunk of the connection (or the end of one of
// its streams) must not pass because a partition cuts its source off:
// under Refuse the connection is reset (a partition applied while the
// chunk was on its way), under Drop the chunk is swallowed and the
// connection marked as having lost bytes.
func (c *proxyConn) cutOff() bool {
	switch c.proxy.cutMode(c.src) {
	case Refuse:
		c.abort()
		return true
	case Drop:
		c.cutLoss.Store(true)
		// The partition may have been lifted since the check above, after
		// setCut looked at cutLoss: then nobody else will reset the
		// connection that just lost a chunk.
		if c.proxy.cutMode(c.src) != Drop {
			c.abort()
		}
		return true
	}
	if c.cutLoss.Load() {
		// Lifted, and setCut has not reset it yet: nothing may pass after
		// the gap, or the server would read a stream with a hole in it.
		c.abort()
		return true
	}
	return false
}

func (c *proxyConn) isAborted() bool {
	select {
	case <-c.aborted:
		return true
	default:
		return false
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
