//go:build unix

package lab

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/testkit"
)

// echoServer answers every line with the same line.
func echoServer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, _ = io.Copy(c, c)
				_ = c.Close()
			}()
		}
	}()
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String()
}

func newTestProxy(t *testing.T) *Proxy {
	t.Helper()
	p, err := NewProxy("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

type lineConn struct {
	net.Conn
	r *bufio.Reader
}

// expectInOrder reads n lines and fails unless they are "0" to n-1 in
// order: the echo of what the test sent, one line at a time.
func (c *lineConn) expectInOrder(t *testing.T, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		got, err := c.r.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if got != fmt.Sprintf("%d\n", i) {
			t.Fatalf("reply %d = %q: order not preserved", i, got)
		}
	}
}

// expectRoundTrip sends a line up to 20 times and checks each echo. No
// round trip may take less than rtt, and the fastest must be within rtt +
// 20%: the proxy adds the latency and little more. It stops at the first
// round trip within that bound; the others are tries, because on a loaded
// machine any one of them may be delayed by the scheduler, not the proxy.
func (c *lineConn) expectRoundTrip(t *testing.T, rtt time.Duration) {
	t.Helper()
	var best time.Duration
	for range 20 {
		got, took, err := c.roundTrip("x", 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if got != "x\n" {
			t.Fatalf("got %q", got)
		}
		if took < rtt {
			t.Fatalf("round trip %v with %v injected: faster than the latency", took, rtt)
		}
		if best == 0 || took < best {
			best = took
		}
		if best <= rtt+rtt/5 {
			return
		}
	}
	t.Fatalf("fastest of 20 round trips %v with %v injected; want within +20%%", best, rtt)
}

func dialLine(t *testing.T, addr string) *lineConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return &lineConn{Conn: c, r: bufio.NewReader(c)}
}

// roundTrip sends a line and reads the echo, with a deadline.
func (c *lineConn) roundTrip(line string, timeout time.Duration) (string, time.Duration, error) {
	start := time.Now()
	_ = c.SetDeadline(start.Add(timeout))
	if _, err := fmt.Fprintf(c, "%s\n", line); err != nil {
		return "", 0, err
	}
	got, err := c.r.ReadString('\n')
	return got, time.Since(start), err
}

func TestProxyRelays(t *testing.T) {
	p := newTestProxy(t)
	c := dialLine(t, p.Addr())
	got, _, err := c.roundTrip("hello", time.Second)
	if err != nil || got != "hello\n" {
		t.Fatalf("got %q, %v", got, err)
	}
	if n := p.Connections(); n != 1 {
		t.Fatalf("Connections() = %d, want 1", n)
	}
}

func TestProxyLatencyIsRoundTrip(t *testing.T) {
	for _, rtt := range []time.Duration{10 * time.Millisecond, 40 * time.Millisecond} {
		t.Run(rtt.String(), func(t *testing.T) {
			p := newTestProxy(t)
			p.SetLatency(rtt)
			dialLine(t, p.Addr()).expectRoundTrip(t, rtt)
		})
	}
}

// Pipelined writes are each delayed from the moment they were read, not
// queued behind each other's delays.
func TestProxyLatencyDoesNotSerialise(t *testing.T) {
	p := newTestProxy(t)
	rtt := 50 * time.Millisecond
	p.SetLatency(rtt)
	c := dialLine(t, p.Addr())
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	const n = 20
	for i := 0; i < n; i++ {
		if _, err := fmt.Fprintf(c, "%d\n", i); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	c.expectInOrder(t, n)
	if took := time.Since(start); took > 3*rtt {
		t.Fatalf("%d pipelined lines took %v with %v RTT: delays add up", n, took, rtt)
	}
}

func TestProxyBlackHoleAndRestore(t *testing.T) {
	p := newTestProxy(t)
	before := dialLine(t, p.Addr())
	if _, _, err := before.roundTrip("a", time.Second); err != nil {
		t.Fatal(err)
	}
	p.BlackHole()

	// An open connection gets no answer.
	if _, _, err := before.roundTrip("b", 200*time.Millisecond); !failure.Timeout(err) {
		t.Fatalf("open connection: got %v, want a timeout", err)
	}
	// A new connection is accepted but never answered.
	during := dialLine(t, p.Addr())
	if _, _, err := during.roundTrip("c", 200*time.Millisecond); !failure.Timeout(err) {
		t.Fatalf("new connection: got %v, want a timeout", err)
	}

	p.Restore()
	// Connections that lost bytes are reset; new ones work.
	if _, _, err := before.roundTrip("d", time.Second); err == nil {
		t.Fatal("a connection that lost bytes in the black hole still works after Restore")
	}
	after := dialLine(t, p.Addr())
	if got, _, err := after.roundTrip("e", time.Second); err != nil || got != "e\n" {
		t.Fatalf("after Restore: %q, %v", got, err)
	}
}

func TestProxyRestoreKeepsCleanConnections(t *testing.T) {
	p := newTestProxy(t)
	c := dialLine(t, p.Addr())
	p.BlackHole()
	p.Restore() // nothing was lost: nothing to reset
	if got, _, err := c.roundTrip("x", time.Second); err != nil || got != "x\n" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestProxyResetConnections(t *testing.T) {
	p := newTestProxy(t)
	c := dialLine(t, p.Addr())
	if _, _, err := c.roundTrip("a", time.Second); err != nil {
		t.Fatal(err)
	}
	p.ResetConnections()
	_, _, err := c.roundTrip("b", time.Second)
	if !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, io.EOF) && !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("after reset: %v, want connection reset", err)
	}
	c2 := dialLine(t, p.Addr())
	if _, _, err := c2.roundTrip("c", time.Second); err != nil {
		t.Fatalf("new connection after reset: %v", err)
	}
}

func TestProxySuspendRefusesThenResumes(t *testing.T) {
	p := newTestProxy(t)
	addr := p.Addr()
	held := dialLine(t, addr) // a connection Suspend resets
	if _, _, err := held.roundTrip("x", time.Second); err != nil {
		t.Fatal(err)
	}
	p.Suspend()
	p.Suspend() // twice (a node killed twice): the port stays held
	if _, err := net.DialTimeout("tcp", addr, time.Second); !failure.Refused(err) {
		t.Fatalf("dial suspended proxy: %v, want connection refused", err)
	}
	// While suspended the port stays the proxy's: nothing else can listen
	// there (Linux; see reservePort), so a killed node's peers, still
	// dialling it, never reach a server another lab started since.
	if runtime.GOOS == "linux" {
		waitPortHeld(t, addr)
		if _, err := net.DialTimeout("tcp", addr, time.Second); !failure.Refused(err) {
			t.Fatalf("dial suspended proxy with its port held: %v, want connection refused", err)
		}
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if p.Addr() != addr {
		t.Fatalf("address changed from %s to %s", addr, p.Addr())
	}
	c := dialLine(t, addr)
	if _, _, err := c.roundTrip("x", time.Second); err != nil {
		t.Fatal(err)
	}
	// Killed again (two faults in a row), then the lab closes: the port
	// is held again while suspended, and free once the proxy is closed.
	p.Suspend()
	if runtime.GOOS == "linux" {
		waitPortHeld(t, addr)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the port after Close: %v, want it free", err)
	}
	_ = ln.Close()
}

// waitPortHeld waits until nothing else can listen on addr: a suspended
// proxy holds its port (reservePort).
func waitPortHeld(t *testing.T, addr string) {
	t.Helper()
	testkit.WaitFor(t, 5*time.Second, "the port of "+addr+" held", func() bool {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			_ = ln.Close()
		}
		return err != nil
	})
}

func TestProxyUpstreamDownClosesClient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	_ = ln.Close()
	p, err := NewProxy("127.0.0.1:0", dead)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	raw, err := net.Dial("tcp", p.Addr())
	if err != nil {
		return // reset before the handshake completed: closed, as wanted
	}
	defer raw.Close()
	c := &lineConn{Conn: raw, r: bufio.NewReader(raw)}
	if _, _, err := c.roundTrip("x", time.Second); err == nil || failure.Timeout(err) {
		t.Fatalf("got %v, want the connection closed", err)
	}
}

func TestProxyCloseEndsConnections(t *testing.T) {
	p, err := NewProxy("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	c := dialLine(t, p.Addr())
	if _, _, err := c.roundTrip("a", time.Second); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not return")
	}
	if _, _, err := c.roundTrip("b", time.Second); err == nil {
		t.Fatal("connection still relayed after Close")
	}
}

// A reader that does not keep up stalls the proxy's writes in both
// directions (the echo server stops reading too); everything still arrives,
// in order, once it reads.
func TestProxySlowReaderKeepsOrder(t *testing.T) {
	p := newTestProxy(t)
	p.SetLatency(4 * time.Millisecond)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(20 * time.Second))
	const size = 16 << 20
	sent := make([]byte, size)
	for i := range sent {
		sent[i] = byte(i * 7 / 5)
	}
	writeErr := make(chan error, 1)
	go func() {
		for off := 0; off < size; off += 1000 {
			if _, err := c.Write(sent[off:min(off+1000, size)]); err != nil {
				writeErr <- err
				return
			}
		}
		writeErr <- nil
	}()
	time.Sleep(300 * time.Millisecond) // the buffers fill up
	got := make([]byte, size)
	if _, err := io.ReadFull(c, got); err != nil {
		t.Fatal(err)
	}
	if err := <-writeErr; err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if got[i] != sent[i] {
			t.Fatalf("byte %d differs: order or content lost", i)
		}
	}
}

// Lowering the latency does not let later chunks overtake earlier ones.
func TestProxyLatencyChangeKeepsOrder(t *testing.T) {
	p := newTestProxy(t)
	p.SetLatency(60 * time.Millisecond)
	c := dialLine(t, p.Addr())
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	const n = 20
	for i := 0; i < n; i++ {
		if i == n/2 {
			p.SetLatency(0)
		}
		if _, err := fmt.Fprintf(c, "%d\n", i); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Millisecond)
	}
	c.expectInOrder(t, n)
}

// A client's half-close reaches the server after the data before it, and
// the server's close comes back.
func TestProxyHalfClose(t *testing.T) {
	p := newTestProxy(t)
	rtt := 20 * time.Millisecond
	p.SetLatency(rtt)
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	start := time.Now()
	if _, err := c.Write([]byte("last words\n")); err != nil {
		t.Fatal(err)
	}
	if err := c.(*net.TCPConn).CloseWrite(); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "last words\n" {
		t.Fatalf("got %q", got)
	}
	if took := time.Since(start); took < rtt {
		t.Fatalf("echo and close after %v with %v injected", took, rtt)
	}
}

// The runtime-timer clock (where there is no timerfd) delays as well.
func TestProxyRuntimeClock(t *testing.T) {
	p := newTestProxy(t)
	p.delay.useClock(func() clock { return newRuntimeClock() })
	rtt := 10 * time.Millisecond
	p.SetLatency(rtt)
	c := dialLine(t, p.Addr())
	c.expectRoundTrip(t, rtt)
	p.ResetConnections()
	if _, _, err := c.roundTrip("y", time.Second); err == nil {
		t.Fatal("connection still relayed after ResetConnections")
	}
}

// Every chunk waits out its delay: none is written before it is due.
func TestProxyNeverEarly(t *testing.T) {
	p := newTestProxy(t)
	var mu sync.Mutex
	var early time.Duration
	chunks := 0
	p.trace = func(due, now time.Time) {
		mu.Lock()
		chunks++
		if d := due.Sub(now); d > early {
			early = d
		}
		mu.Unlock()
	}
	p.SetLatency(6 * time.Millisecond)
	var wg sync.WaitGroup
	for range 4 {
		c := dialLine(t, p.Addr())
		wg.Go(func() {
			for i := 0; i < 20; i++ {
				if _, _, err := c.roundTrip("x", 2*time.Second); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if chunks < 160 {
		t.Fatalf("%d chunks traced, want 160", chunks)
	}
	if early > 0 {
		t.Fatalf("a chunk was written %v before it was due", early)
	}
}

// A chunk still waiting out its delay when the black hole starts is lost,
// so Restore resets the connection.
func TestProxyBlackHoleDropsDelayedChunks(t *testing.T) {
	p := newTestProxy(t)
	p.SetLatency(200 * time.Millisecond)
	c := dialLine(t, p.Addr())
	if _, err := c.Write([]byte("a\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	p.BlackHole()
	time.Sleep(200 * time.Millisecond)
	p.Restore()
	p.SetLatency(0)
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if got, err := c.r.ReadString('\n'); err == nil || failure.Timeout(err) {
		t.Fatalf("read %q, %v; want the connection reset", got, err)
	}
}

// Resetting connections and closing the proxy do not wait for delayed
// chunks.
func TestProxyAbortIsPrompt(t *testing.T) {
	p, err := NewProxy("127.0.0.1:0", echoServer(t))
	if err != nil {
		t.Fatal(err)
	}
	p.SetLatency(10 * time.Second)
	a, b := dialLine(t, p.Addr()), dialLine(t, p.Addr())
	for _, c := range []*lineConn{a, b} {
		if _, err := c.Write([]byte("x\n")); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	start := time.Now()
	p.ResetConnections()
	_ = a.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := a.r.ReadString('\n'); err == nil || failure.Timeout(err) {
		t.Fatalf("got %v, want the connection reset", err)
	}
	b2 := dialLine(t, p.Addr())
	if _, err := b2.Write([]byte("y\n")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	_ = p.Close()
	if took := time.Since(start); took > time.Second {
		t.Fatalf("reset and close took %v with chunks delayed by 5 s", took)
	}
}
