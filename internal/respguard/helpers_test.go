package respguard

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chunkConn is a net.Conn whose Read returns data in pieces of the sizes
// given (cycling; all at once when there are none), then io.EOF.
type chunkConn struct {
	data   []byte
	sizes  []int
	k      int
	closed bool
}

func (c *chunkConn) Read(p []byte) (int, error) {
	if c.closed {
		return 0, net.ErrClosed
	}
	if len(c.data) == 0 {
		return 0, io.EOF
	}
	n := len(c.data)
	if len(c.sizes) > 0 {
		n = min(n, c.sizes[c.k%len(c.sizes)])
		c.k++
	}
	n = copy(p, c.data[:n])
	c.data = c.data[n:]
	return n, nil
}

func (c *chunkConn) Write(p []byte) (int, error) { return len(p), nil }
func (c *chunkConn) Close() error                { c.closed = true; return nil }
func (c *chunkConn) LocalAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 40000}
}
func (c *chunkConn) RemoteAddr() net.Addr {
	return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 6379}
}
func (c *chunkConn) SetDeadline(t time.Time) error      { return nil }
func (c *chunkConn) SetReadDeadline(t time.Time) error  { return nil }
func (c *chunkConn) SetWriteDeadline(t time.Time) error { return nil }

// readAll reads c until an error, into buffers of the sizes given
// (cycling; 32 KiB, go-redis's, when there are none), and returns what was
// read and the error. A Read that returns nothing and no error more than
// a few times in a row fails t: a bufio.Reader gives up after 100.
func readAll(t testing.TB, c net.Conn, sizes []int) ([]byte, error) {
	t.Helper()
	if len(sizes) == 0 {
		sizes = []int{32 << 10}
	}
	var out []byte
	empty := 0
	for k := 0; ; k++ {
		p := make([]byte, sizes[k%len(sizes)])
		n, err := c.Read(p)
		if n < 0 || n > len(p) {
			t.Fatalf("Read returned %d for a %d-byte buffer", n, len(p))
		}
		out = append(out, p[:n]...)
		if err != nil {
			return out, err
		}
		if n == 0 {
			if empty++; empty > 3 {
				t.Fatal("Read returns 0, nil again and again")
			}
		} else {
			empty = 0
		}
	}
}

// limitErr returns the *LimitError in err, or nil.
func limitErr(err error) *LimitError {
	var le *LimitError
	if errors.As(err, &le) {
		return le
	}
	return nil
}

// RESP builders for test streams.

func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }

// agg is an aggregate of type t ('*', '~', '>') holding elems.
func agg(t byte, elems ...string) string {
	return string(t) + strconv.Itoa(len(elems)) + "\r\n" + strings.Join(elems, "")
}

// mapOf is a RESP3 map of the pairs kv, or with resp2 the flat array
// Redis sends instead.
func mapOf(resp2 bool, kv ...string) string {
	if resp2 {
		return agg('*', kv...)
	}
	return "%" + strconv.Itoa(len(kv)/2) + "\r\n" + strings.Join(kv, "")
}

// infoText is an INFO reply of a realistic size (about 4 KiB).
func infoText() string {
	var b strings.Builder
	sections := []string{"Server", "Clients", "Memory", "Persistence", "Stats", "Replication", "CPU", "Modules", "Errorstats", "Cluster", "Keyspace"}
	for i, s := range sections {
		fmt.Fprintf(&b, "# %s\r\n", s)
		for f := range 8 {
			fmt.Fprintf(&b, "%s_field_%d:%d\r\n", strings.ToLower(s), f, (i+1)*1000003*(f+1))
		}
		b.WriteString("\r\n")
	}
	b.WriteString("# Replication\r\nrole:master\r\nconnected_slaves:2\r\nslave0:ip=10.0.0.2,port=6379,state=online,offset=123456789,lag=0\r\nslave1:ip=10.0.0.3,port=6379,state=online,offset=123456789,lag=1\r\nmaster_replid:8371b4fb1155b71f4a04d3e1bc3e18c4a990aeeb\r\nmaster_repl_offset:123456789\r\n")
	return b.String()
}

// clusterNodes is a CLUSTER NODES reply for n nodes, half of them masters
// with a few slot ranges each.
func clusterNodes(n int) string {
	var b strings.Builder
	for i := range n {
		id := fmt.Sprintf("%040x", i*2654435761)
		if i%2 == 0 {
			fmt.Fprintf(&b, "%s 10.0.%d.%d:6379@16379,node-%d master - 0 1426238317239 %d connected %d-%d %d-%d\n",
				id, i/250, i%250, i, i, i*8, i*8+3, 16000+i%300, 16000+i%300)
		} else {
			fmt.Fprintf(&b, "%s 10.0.%d.%d:6379@16379,node-%d slave %040x 0 1426238316232 %d connected\n",
				id, i/250, i%250, i, (i-1)*2654435761, i)
		}
	}
	return b.String()
}

// realisticStream is what rediskit's own connections receive, in RESP3:
// PING, ROLE, INFO, sentinel replies, pub/sub events, CLUSTER NODES.
func realisticStream() []byte {
	replica := func(ip string) string {
		return mapOf(false, bulk("name"), bulk(ip+":6379"), bulk("ip"), bulk(ip), bulk("port"), bulk("6379"),
			bulk("runid"), bulk("a85e2b8c9e6b3c3c2d1f0e9d8c7b6a5948372615"), bulk("flags"), bulk("slave"),
			bulk("link-pending-commands"), bulk("0"), bulk("link-refcount"), bulk("1"),
			bulk("last-ping-sent"), bulk("0"), bulk("last-ok-ping-reply"), bulk("339"),
			bulk("last-ping-reply"), bulk("339"), bulk("down-after-milliseconds"), bulk("5000"),
			bulk("info-refresh"), bulk("4521"), bulk("role-reported"), bulk("slave"),
			bulk("master-link-down-time"), bulk("0"), bulk("master-link-status"), bulk("ok"),
			bulk("master-host"), bulk("10.0.0.1"), bulk("master-port"), bulk("6379"),
			bulk("slave-priority"), bulk("100"), bulk("slave-repl-offset"), bulk("123456789"))
	}
	role := agg('*', bulk("master"), ":123456789\r\n",
		agg('*', agg('*', bulk("10.0.0.2"), bulk("6379"), bulk("123456789")), agg('*', bulk("10.0.0.3"), bulk("6379"), bulk("123456700"))))
	event := agg('>', bulk("message"), bulk("+switch-master"), bulk("mymaster 10.0.0.1 6379 10.0.0.2 6379"))
	hello := mapOf(false, bulk("server"), bulk("redis"), bulk("version"), bulk("7.0.15"), bulk("proto"), ":3\r\n",
		bulk("id"), ":42\r\n", bulk("mode"), bulk("sentinel"), bulk("role"), bulk("master"), bulk("modules"), "*0\r\n")
	var s strings.Builder
	s.WriteString(hello)
	for range 4 {
		s.WriteString("+PONG\r\n")
		s.WriteString(role)
		s.WriteString(agg('*', bulk("10.0.0.1"), bulk("6379")))
		s.WriteString(agg('*', replica("10.0.0.2"), replica("10.0.0.3")))
		s.WriteString(event)
		s.WriteString("+OK\r\n:1\r\n")
	}
	s.WriteString(bulk(infoText()))
	s.WriteString(bulk(clusterNodes(60)))
	return []byte(s.String())
}

// replayConn is a net.Conn that reads data over and over, at most piece
// bytes a Read (0: as much as fits).
type replayConn struct {
	data  []byte
	piece int
	at    int
}

func (c *replayConn) Read(p []byte) (int, error) {
	if c.piece > 0 && len(p) > c.piece {
		p = p[:c.piece]
	}
	n := 0
	for n < len(p) {
		k := copy(p[n:], c.data[c.at:])
		n += k
		c.at = (c.at + k) % len(c.data)
	}
	return n, nil
}

func (c *replayConn) Write(p []byte) (int, error)      { return len(p), nil }
func (c *replayConn) Close() error                     { return nil }
func (c *replayConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (c *replayConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (c *replayConn) SetDeadline(time.Time) error      { return nil }
func (c *replayConn) SetReadDeadline(time.Time) error  { return nil }
func (c *replayConn) SetWriteDeadline(time.Time) error { return nil }
