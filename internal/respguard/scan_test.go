package respguard

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"syscall"
	"testing"

	"github.com/rediskit/rediskit/internal/failure"
)

// small are limits small enough to reach in a table.
var small = Limits{MaxLine: 16, MaxBulk: 20, MaxAggregate: 6, MaxReplyElements: 10, MaxDepth: 3, MaxReplyBytes: 80}

// roomy30 bounds a reply's bytes only: its aggregates are refused by what
// can arrive in 30 bytes.
var roomy30 = Limits{MaxLine: 16, MaxBulk: 20, MaxAggregate: 100, MaxReplyElements: 100, MaxDepth: 3, MaxReplyBytes: 30}

// splits are the ways a test stream is cut into reads: the server's
// pieces, and go-redis's buffer sizes.
func splits(n int) []struct {
	name          string
	chunks, reads []int
} {
	rng := rand.New(rand.NewPCG(uint64(n), 7))
	random := func(max int) []int {
		s := make([]int, 17)
		for i := range s {
			s[i] = 1 + rng.IntN(max)
		}
		return s
	}
	return []struct {
		name          string
		chunks, reads []int
	}{
		{"whole", nil, nil},
		{"byte by byte", []int{1}, nil},
		{"1-byte reads", nil, []int{1}},
		{"3-byte pieces, 2-byte reads", []int{3}, []int{2}},
		{"random pieces", random(13), nil},
		{"random pieces and reads", random(29), random(11)},
	}
}

func TestScan(t *testing.T) {
	deep := strings.Repeat("*1\r\n", 40)
	tests := []struct {
		name string
		in   string
		lim  Limits
		pass int    // bytes passed on (of a refused or incomplete line, its type byte; see held); -1: all
		what string // the bound exceeded; "" for none
		got  int64  // LimitError.Got, when what is a declared size
	}{
		// Valid streams pass unchanged.
		{name: "status", in: "+OK\r\n", pass: -1},
		{name: "every simple type", in: "+OK\r\n-ERR no\r\n:42\r\n:-7\r\n_\r\n#t\r\n,3.14\r\n,inf\r\n(3492890328409238509324850943850943825024385\r\n+\r\n", pass: -1},
		{name: "a \\r inside a simple line", in: "+a\rb\r\n", pass: -1},
		{name: "bulk", in: "$5\r\nhello\r\n$0\r\n\r\n", pass: -1},
		{name: "bulk holding CRLF and type bytes", in: "$12\r\n*999999999\r\n\r\n", pass: -1},
		{name: "nulls", in: "$-1\r\n*-1\r\n%-1\r\n~-1\r\n=-1\r\n!-1\r\n>-1\r\n", pass: -1},
		{name: "numbers as strconv.Atoi reads them", in: "*+2\r\n:1\r\n:2\r\n*-0\r\n$003\r\nabc\r\n", pass: -1},
		{name: "array of mixed", in: "*3\r\n$3\r\nfoo\r\n:1\r\n*2\r\n+a\r\n_\r\n", pass: -1},
		{name: "RESP3 map", in: "%2\r\n+first\r\n:1\r\n+second\r\n%1\r\n+x\r\n~2\r\n:1\r\n:2\r\n", pass: -1},
		{name: "verbatim and blob error", in: "=15\r\ntxt:Some string\r\n!21\r\nSYNTAX invalid syntax\r\n", pass: -1},
		{name: "push", in: ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$5\r\nhello\r\n", pass: -1},
		{name: "attribute before a reply", in: "|1\r\n+key-popularity\r\n%2\r\n$1\r\na\r\n,0.19\r\n$1\r\nb\r\n,0.05\r\n*2\r\n:2039123\r\n:9543892\r\n", pass: -1},
		{name: "two attributes, an empty one", in: "|0\r\n|1\r\n+k\r\n+v\r\n+OK\r\n", pass: -1},
		{name: "empty aggregates", in: "*0\r\n%0\r\n~0\r\n", pass: -1},
		{name: "incomplete line held back", in: "+OK\r\n*21", pass: 5 + 1},
		{name: "incomplete header \\r held back", in: "+OK\r\n$5\r", pass: 5 + 1},
		{name: "incomplete body passes", in: "$10\r\nhell", pass: -1},
		{name: "incomplete body trailer passes", in: "$4\r\nhell\r", pass: -1},

		// At and over each limit (small limits).
		{name: "line at the limit", in: "+" + strings.Repeat("a", 15) + "\r\n", lim: small, pass: -1},
		{name: "line over the limit", in: "+OK\r\n+" + strings.Repeat("a", 16) + "\r\n", lim: small, pass: 5 + 1, what: WhatLine},
		{name: "line over the limit, no end", in: "-" + strings.Repeat("e", 100), lim: small, pass: 0 + 1, what: WhatLine},
		{name: "header of leading zeros over the line limit", in: "*" + strings.Repeat("0", 16) + "1\r\n", lim: small, pass: 0 + 1, what: WhatLine},
		{name: "bulk at the limit", in: "$20\r\n" + strings.Repeat("b", 20) + "\r\n", lim: small, pass: -1},
		{name: "bulk over the limit", in: "$21\r\n", lim: small, pass: 0 + 1, what: WhatBulk, got: 21},
		{name: "verbatim over the limit", in: ":1\r\n=21\r\n", lim: small, pass: 4 + 1, what: WhatBulk, got: 21},
		{name: "aggregate at the limit", in: "*6\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n:6\r\n", lim: small, pass: -1},
		{name: "aggregate over the limit", in: "*7\r\n", lim: small, pass: 0 + 1, what: WhatAggregate, got: 7},
		{name: "map pairs count twice", in: "%4\r\n", lim: small, pass: 0 + 1, what: WhatAggregate, got: 8},
		{name: "reply elements over the limit", in: "*2\r\n*4\r\n:1\r\n:2\r\n:3\r\n:4\r\n*5\r\n", lim: small, pass: 24 + 1, what: WhatReplyElements, got: 11},
		{name: "reply elements count again in the next reply", in: "*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n*5\r\n:1\r\n:2\r\n:3\r\n:4\r\n:5\r\n", lim: small, pass: -1},
		{name: "depth at the limit", in: "*1\r\n*1\r\n*1\r\n:1\r\n", lim: small, pass: -1},
		{name: "depth over the limit", in: "*1\r\n*1\r\n*1\r\n*1\r\n", lim: small, pass: 12 + 1, what: WhatDepth, got: 4},
		{name: "empty aggregate does not nest", in: "*1\r\n*1\r\n*1\r\n*0\r\n", lim: small, pass: -1},
		{name: "reply bytes over the limit", in: "*3\r\n$20\r\n" + strings.Repeat("x", 20) + "\r\n$20\r\n" + strings.Repeat("y", 20) + "\r\n$20\r\n", lim: small, pass: 58 + 1, what: WhatReplyBytes, got: 85},
		{name: "reply bytes count lines", in: "*6\r\n" + strings.Repeat("+"+strings.Repeat("z", 13)+"\r\n", 6), lim: small, pass: 4 + 16*4 + 1, what: WhatReplyBytes},
		{name: "an empty attribute's bytes count with its reply", in: "|0\r\n*3\r\n" + strings.Repeat("$18\r\n"+strings.Repeat("q", 18)+"\r\n", 3), lim: small, pass: 58 + 1, what: WhatReplyBytes, got: 83},
		{name: "a string's \\r\\n counts in the reply's bytes", in: "*4\r\n" + strings.Repeat("$20\r\n"+strings.Repeat("s", 20)+"\r\n", 2) + ":" + strings.Repeat("9", 15) + "\r\n:12\r\n", lim: small, pass: 76 + 1, what: WhatReplyBytes, got: 81},
		{name: "an aggregate whose elements fit in the reply bytes", in: "*8\r\n" + strings.Repeat("_\r\n", 8), lim: roomy30, pass: -1},
		{name: "an aggregate whose elements cannot arrive in the reply bytes", in: "*9\r\n", lim: roomy30, pass: 0 + 1, what: WhatReplyBytes, got: 31},
		{name: "a nested aggregate whose elements cannot arrive", in: "*2\r\n_\r\n%4\r\n", lim: roomy30, pass: 7 + 1, what: WhatReplyBytes, got: 35},
		{name: "attribute counts with its reply", in: "|3\r\n+a\r\n+b\r\n+c\r\n+d\r\n+e\r\n+f\r\n*5\r\n", lim: small, pass: 28 + 1, what: WhatReplyElements, got: 11},

		// The reports' hostile replies, with the default limits.
		{name: "2^31-1 elements", in: "*2147483647\r\n", pass: 0 + 1, what: WhatAggregate, got: 2147483647},
		{name: "2^63-1 elements", in: "*9223372036854775807\r\n", pass: 0 + 1, what: WhatAggregate, got: 9223372036854775807},
		{name: "elements beyond int64", in: "~99999999999999999999999\r\n", pass: 0 + 1, what: WhatAggregate, got: 9223372036854775807},
		{name: "2^31-1 bytes", in: "$2147483647\r\n", pass: 0 + 1, what: WhatBulk, got: 2147483647},
		{name: "map of 2^40 pairs", in: "%1099511627776\r\n", pass: 0 + 1, what: WhatAggregate, got: 1 << 41},
		{name: "map of 2^62 pairs", in: "%4611686018427387904\r\n", pass: 0 + 1, what: WhatAggregate, got: 9223372036854775807},
		{name: "100 kB line without \\n", in: "+" + strings.Repeat("a", 100_000), pass: 0 + 1, what: WhatLine},
		{name: "deep nesting", in: deep, pass: 32*4 + 1, what: WhatDepth, got: 33},
		{name: "after a good reply", in: "+PONG\r\n$2147483647\r\n", pass: 7 + 1, what: WhatBulk},
		{name: "inside an array", in: "*2\r\n:1\r\n*2147483647\r\n", pass: 8 + 1, what: WhatAggregate},

		// Malformed: refused where go-redis would fail or read it two ways.
		{name: "HTTP", in: "HTTP/1.1 400 Bad Request\r\n", pass: 0, what: WhatMalformed},
		{name: "unknown type", in: "+OK\r\n\x00", pass: 5, what: WhatMalformed},
		{name: "empty line", in: "\r\n", pass: 0, what: WhatMalformed},
		{name: "\\n without \\r", in: "+OK\n", pass: 0 + 1, what: WhatMalformed},
		{name: "\\n right after the type", in: ":\n", pass: 0 + 1, what: WhatMalformed},
		{name: "no digits", in: "*\r\n", pass: 0 + 1, what: WhatMalformed},
		{name: "sign only", in: "$-\r\n", pass: 0 + 1, what: WhatMalformed},
		{name: "two signs", in: "*+-1\r\n", pass: 0 + 1, what: WhatMalformed},
		{name: "letter in a count", in: "*1x\r\n", pass: 0 + 1, what: WhatMalformed},
		{name: "space in a count", in: "* 1\r\n", pass: 0 + 1, what: WhatMalformed},
		{name: "\\r not followed by \\n", in: "*1\rX", pass: 0 + 1, what: WhatMalformed},
		{name: "negative count", in: "*-2\r\n", pass: 0 + 1, what: WhatMalformed},
		{name: "negative length", in: "$-5\r\n", pass: 0 + 1, what: WhatMalformed},
		{name: "bulk without its \\r\\n", in: "$3\r\nabcXY", pass: 7, what: WhatMalformed},
		{name: "bulk with \\r but no \\n", in: "$3\r\nabc\rY", pass: 8, what: WhatMalformed},
		{name: "streamed string", in: "$?\r\n;4\r\nHell\r\n;0\r\n", pass: 0 + 1, what: WhatMalformed},
		{name: "streamed aggregate", in: "*?\r\n:1\r\n.\r\n", pass: 0 + 1, what: WhatMalformed},
		{name: "stream chunk", in: ";4\r\n", pass: 0, what: WhatMalformed},
		{name: "attribute inside an aggregate", in: "*1\r\n|1\r\n+a\r\n+b\r\n+c\r\n", pass: 4, what: WhatMalformed},
		{name: "attribute inside an attribute", in: "|1\r\n|1\r\n+a\r\n+b\r\n", pass: 4, what: WhatMalformed},
		{name: "null attribute", in: "|-1\r\n+OK\r\n", pass: 0 + 1, what: WhatMalformed},
	}
	for _, tt := range tests {
		for _, sp := range splits(len(tt.in)) {
			t.Run(tt.name+"/"+sp.name, func(t *testing.T) {
				fc := &chunkConn{data: []byte(tt.in), sizes: sp.chunks}
				c := wrap(fc, tt.lim, "192.0.2.1:6379")
				out, err := readAll(t, c, sp.reads)
				want := tt.in
				if tt.pass >= 0 {
					want = tt.in[:tt.pass]
				}
				if !bytes.Equal(out, []byte(want)) {
					t.Errorf("passed on %q, want %q", trim(out), trim([]byte(want)))
				}
				le := limitErr(err)
				if tt.what == "" {
					if !errors.Is(err, io.EOF) || le != nil {
						t.Fatalf("err = %v, want io.EOF", err)
					}
					if fc.closed {
						t.Error("the connection was closed")
					}
					return
				}
				if le == nil {
					t.Fatalf("err = %v, want a *LimitError", err)
				}
				if le.What != tt.what || (tt.got != 0 && le.Got != tt.got) {
					t.Errorf("What %q, Got %d; want %q, %d (%v)", le.What, le.Got, tt.what, tt.got, le)
				}
				if !fc.closed {
					t.Error("the connection is still open")
				}
				if n, again := c.Read(make([]byte, 10)); n != 0 || again != err {
					t.Errorf("Read after the error: %d, %v; want 0, the same error", n, again)
				}
			})
		}
	}
}

func trim(b []byte) string {
	if len(b) > 80 {
		return fmt.Sprintf("%s…(%d bytes)", b[:80], len(b))
	}
	return string(b)
}

func TestLimitsDefaults(t *testing.T) {
	got := Limits{MaxLine: -1, MaxBulk: 5, MaxDepth: 1 << 62}.withDefaults()
	want := Limits{MaxLine: DefaultMaxLine, MaxBulk: 5, MaxAggregate: DefaultMaxAggregate,
		MaxReplyElements: DefaultMaxReplyElements, MaxDepth: maxLimit, MaxReplyBytes: DefaultMaxReplyBytes}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	// The documented figures.
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"MaxLine", DefaultMaxLine, 65536},
		{"MaxBulk", DefaultMaxBulk, 16 << 20},
		{"MaxAggregate", DefaultMaxAggregate, 65536},
		{"MaxReplyElements", DefaultMaxReplyElements, 1 << 20},
		{"MaxDepth", DefaultMaxDepth, 32},
		{"MaxReplyBytes", DefaultMaxReplyBytes, 32 << 20},
	} {
		if c.got != c.want {
			t.Errorf("Default%s = %d, the documentation says %d", c.name, c.got, c.want)
		}
	}
}

// TestDataLimitsDefaults checks ForData: the data path's defaults for the
// fields not set, the caller's values kept, the cap above 2^60, and the
// documented figures; and that they refuse the headers that kill the
// process while a 512 MB string and an LRANGE of millions pass.
func TestDataLimitsDefaults(t *testing.T) {
	got := Limits{MaxLine: -1, MaxBulk: 5, MaxDepth: 1 << 62}.ForData()
	want := Limits{MaxLine: DefaultDataMaxLine, MaxBulk: 5, MaxAggregate: DefaultDataMaxAggregate,
		MaxReplyElements: DefaultDataMaxReplyElements, MaxDepth: maxLimit, MaxReplyBytes: DefaultDataMaxReplyBytes}
	if got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if again := got.ForData(); again != got {
		t.Fatalf("ForData twice: %+v, then %+v", got, again)
	}
	for _, c := range []struct {
		name      string
		got, want int64
	}{
		{"MaxLine", DefaultDataMaxLine, 1 << 20},
		{"MaxBulk", DefaultDataMaxBulk, 512 << 20},
		{"MaxAggregate", DefaultDataMaxAggregate, 16_777_216},
		{"MaxReplyElements", DefaultDataMaxReplyElements, 33_554_432},
		{"MaxDepth", DefaultDataMaxDepth, 128},
		{"MaxReplyBytes", DefaultDataMaxReplyBytes, 1 << 30},
	} {
		if c.got != c.want {
			t.Errorf("DefaultData%s = %d, the documentation says %d", c.name, c.got, c.want)
		}
	}
	data := Limits{}.ForData()
	for _, tt := range []struct {
		in, what string
	}{
		{"*2147483647\r\n", WhatAggregate},
		{"*9000000000000000000\r\n", WhatAggregate},
		{"%9223372036854775807\r\n", WhatAggregate},
		{"$2147483647\r\n", WhatBulk},
		{"+" + strings.Repeat("x", DefaultDataMaxLine+1), WhatLine},
		{strings.Repeat("*1\r\n", DefaultDataMaxDepth+1), WhatDepth},
		{"$536870912\r\n", ""},       // 512 MiB: legal
		{"*16777216\r\n", ""},        // an LRANGE of 16 million
		{"%8388608\r\n", ""},         // an HGETALL of 8 million fields
		{"*3\r\n$536870912\r\n", ""}, // a big string in an array
	} {
		s := newScanner(data, "d:1")
		_, err := s.scan([]byte(tt.in))
		switch {
		case tt.what == "" && err != nil:
			t.Errorf("%.30q refused on the data path: %v", tt.in, err)
		case tt.what != "" && (err == nil || err.What != tt.what):
			t.Errorf("%.30q on the data path: %v, want a %s refusal", tt.in, err, tt.what)
		}
	}
}

// TestBulkAtDefaultLimit passes a string of exactly DefaultMaxBulk bytes
// and refuses one byte more.
func TestBulkAtDefaultLimit(t *testing.T) {
	body := bytes.Repeat([]byte{'i'}, DefaultMaxBulk)
	in := append(append([]byte(fmt.Sprintf("$%d\r\n", DefaultMaxBulk)), body...), "\r\n"...)
	c := wrap(&chunkConn{data: in}, Limits{}, "a:1")
	out, err := readAll(t, c, nil)
	if !errors.Is(err, io.EOF) || !bytes.Equal(out, in) {
		t.Fatalf("a %d-byte string: %v, %d of %d bytes passed", DefaultMaxBulk, err, len(out), len(in))
	}
	over := fmt.Sprintf("$%d\r\n", DefaultMaxBulk+1)
	_, err = readAll(t, wrap(&chunkConn{data: []byte(over)}, Limits{}, "a:1"), nil)
	if le := limitErr(err); le == nil || le.What != WhatBulk {
		t.Fatalf("one byte more: %v, want a %s LimitError", err, WhatBulk)
	}
}

func TestLimitErrorMessage(t *testing.T) {
	tests := []struct {
		err  *LimitError
		want []string
	}{
		{&LimitError{Addr: "10.0.0.1:26379", What: WhatAggregate, Limit: 65536, Got: 2147483647, Detail: "array"},
			[]string{"10.0.0.1:26379", "declaring 2147483647 elements in one array", "the limit is 65536", "refused as oversized", "bad server"}},
		{&LimitError{Addr: "h:1", What: WhatAggregate, Limit: 65536, Got: 1 << 41, Detail: "map"},
			[]string{"2199023255552 elements in one map (pairs count twice)"}},
		{&LimitError{Addr: "h:1", What: WhatBulk, Limit: 16 << 20, Got: 2147483647, Detail: "bulk string"},
			[]string{"a 2147483647-byte bulk string", "the limit is 16777216"}},
		{&LimitError{Addr: "h:1", What: WhatLine, Limit: 65536, Got: 65537}, []string{"a line of at least 65537 bytes"}},
		{&LimitError{Addr: "h:1", What: WhatDepth, Limit: 32, Got: 33}, []string{"nested 33 levels deep", "the limit is 32"}},
		{&LimitError{Addr: "h:1", What: WhatReplyElements, Limit: 10, Got: 11}, []string{"at least 11 elements in all"}},
		{&LimitError{Addr: "h:1", What: WhatReplyBytes, Limit: 80, Got: 86}, []string{"at least 86 bytes"}},
		{&LimitError{Addr: "h:80", What: WhatMalformed, Detail: typeDetail('H')},
			[]string{"h:80 sent a malformed reply (unknown type byte 'H': it may not be a Redis server): refused", "bad server", "check what listens at h:80"}},
		{&LimitError{What: WhatMalformed, Detail: typeDetail(0)}, []string{`(unknown address)`, `'\x00'`}},
	}
	for _, tt := range tests {
		msg := tt.err.Error()
		for _, w := range tt.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%q does not say %q", msg, w)
			}
		}
		if tt.err.What == WhatMalformed && strings.Contains(msg, "oversized") {
			t.Errorf("%q calls a malformed reply oversized", msg)
		}
	}
}

// TestErrorClass checks how go-redis's rules and rediskit's classify what
// Read returns: a lost connection, not a timeout, not proof that the
// command did not run.
func TestErrorClass(t *testing.T) {
	c := Wrap(&chunkConn{data: []byte("*2147483647\r\n")}, Limits{})
	_, err := readAll(t, c, nil)
	var op *net.OpError
	if !errors.As(err, &op) || op.Op != "read" || op.Net != "tcp" {
		t.Fatalf("err = %#v, want a read *net.OpError", err)
	}
	le := limitErr(err)
	if le == nil || le.Addr != "192.0.2.1:6379" {
		t.Fatalf("LimitError %+v, want Addr 192.0.2.1:6379 (the remote address)", le)
	}
	if !errors.Is(le, net.ErrClosed) {
		t.Error("the LimitError alone (as go-redis returns it from HELLO) does not say the connection is closed")
	}
	for _, e := range []error{err, le} {
		if !failure.Network(e) || failure.Timeout(e) || !failure.Signal(e) {
			t.Errorf("%T: Network %v Timeout %v Signal %v", e, failure.Network(e), failure.Timeout(e), failure.Signal(e))
		}
	}
	var ne net.Error
	if !errors.As(err, &ne) || ne.Timeout() || le.Timeout() || le.Temporary() {
		t.Error("a refused reply reads as a timeout or as temporary")
	}
	if !failure.Network(err) || failure.Timeout(err) || failure.NotExecuted(err) || failure.IsDial(err) || failure.Reply(err) || !failure.Signal(err) {
		t.Errorf("failure classes: Network %v Timeout %v NotExecuted %v IsDial %v Reply %v Signal %v; want true false false false false true",
			failure.Network(err), failure.Timeout(err), failure.NotExecuted(err), failure.IsDial(err), failure.Reply(err), failure.Signal(err))
	}
	if !strings.Contains(err.Error(), "192.0.2.1:6379") {
		t.Errorf("%q does not name the server", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close after the refusal: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestWrapKeepsSyscallConn(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	c := Wrap(raw, Limits{})
	defer c.Close()
	if _, ok := c.(syscall.Conn); !ok {
		t.Error("a wrapped TCP connection lost syscall.Conn: go-redis cannot check idle connections")
	}
	if _, ok := Wrap(&chunkConn{}, Limits{}).(syscall.Conn); ok {
		t.Error("a wrapped connection without a descriptor has syscall.Conn")
	}
}

// TestReadDoesNotAllocate reads a stream through the conn, in pieces that
// cut lines, and counts allocations: none once the held-line buffer exists.
func TestReadDoesNotAllocate(t *testing.T) {
	stream := realisticStream()
	for _, piece := range []int{0, 1000, 512, 7} {
		rc := &replayConn{data: stream, piece: piece}
		c := wrap(rc, Limits{}, "a:1")
		buf := make([]byte, 32<<10)
		read := func() {
			for range 20 {
				if _, err := c.Read(buf); err != nil {
					t.Fatal(err)
				}
			}
		}
		for range 50 {
			read()
		}
		if n := testing.AllocsPerRun(100, read); n != 0 {
			t.Errorf("pieces of %d bytes: %v allocations for 20 reads", piece, n)
		}
	}
}
