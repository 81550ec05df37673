package respguard

import (
	"bytes"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"
)

// refCheck is the guard's rules read a second time, apart from the
// scanner: a recursive descent over the whole input instead of a state
// machine over pieces. It returns how many leading bytes of in may reach
// go-redis, and the bound the first refused reply breaks ("" when in is
// valid, possibly cut short). Of a line that is refused or not complete,
// only the type byte may pass (when it is a valid one).
func refCheck(in []byte, lim Limits) (int, string) {
	r := &refParser{in: in, lim: lim.withDefaults()}
	for r.pos < len(in) {
		r.elems, r.bytes = 0, 0
		if st := r.reply(); st != nil {
			return st.cut, st.what
		}
	}
	return len(in), ""
}

type refParser struct {
	in           []byte
	lim          Limits
	pos          int
	elems, bytes int64
}

// refStop ends the reading: at a refused reply (what set) or at the end of
// the input (what empty), with the bytes that may pass.
type refStop struct {
	cut  int
	what string
}

// reply reads one top-level reply: attributes, then an element.
func (r *refParser) reply() *refStop {
	for {
		if r.pos == len(r.in) {
			return &refStop{cut: r.pos}
		}
		attr := r.in[r.pos] == '|'
		if st := r.elem(0); st != nil || !attr {
			return st
		}
	}
}

// elem reads one element with depth aggregates open around it.
func (r *refParser) elem(depth int64) *refStop {
	if r.pos == len(r.in) {
		return &refStop{cut: r.pos}
	}
	start := r.pos
	t := r.in[start]
	simple := strings.IndexByte("+-:_,#(", t) >= 0
	if !simple && strings.IndexByte("$=!*~>%|", t) < 0 || t == '|' && depth > 0 {
		return &refStop{cut: start, what: WhatMalformed} // not even the type byte passes
	}
	stop := func(what string) *refStop { return &refStop{cut: start + 1, what: what} }
	bad := stop(WhatMalformed)
	end, st := r.line(start, !simple)
	if st != nil {
		return st
	}
	r.pos = end
	r.bytes += int64(end - start)
	if r.bytes > r.lim.MaxReplyBytes {
		return stop(WhatReplyBytes)
	}
	if simple {
		return nil
	}
	num := string(r.in[start+1 : end-2])
	neg := num[0] == '-'
	num = strings.TrimLeft(num, "+-")
	n := int64(0)
	for _, c := range []byte(num) {
		if n > (math.MaxInt64-9)/10 {
			n = math.MaxInt64 // sure to exceed any limit (they stop at 2^60)
			break
		}
		n = n*10 + int64(c-'0')
	}
	if neg && n == 1 && t != '|' {
		return nil // a null
	}
	if neg && n != 0 {
		return bad
	}
	if strings.IndexByte("$=!", t) >= 0 {
		if n > r.lim.MaxBulk {
			return stop(WhatBulk)
		}
		if r.bytes+n+2 > r.lim.MaxReplyBytes {
			return stop(WhatReplyBytes)
		}
		r.bytes += n + 2
		if int64(len(r.in)-r.pos) < n {
			return &refStop{cut: len(r.in)} // the body passes as it comes
		}
		p := r.pos + int(n)
		for k, want := range []byte("\r\n") {
			if p+k == len(r.in) {
				return &refStop{cut: len(r.in)}
			}
			if r.in[p+k] != want {
				return &refStop{cut: p + k, what: WhatMalformed}
			}
		}
		r.pos = p + 2
		return nil
	}
	elems := n
	if t == '%' || t == '|' {
		elems = min(n, math.MaxInt64/2) * 2
	}
	if elems > r.lim.MaxAggregate {
		return stop(WhatAggregate)
	}
	if r.elems+elems > r.lim.MaxReplyElements {
		return stop(WhatReplyElements)
	}
	if elems > (r.lim.MaxReplyBytes-r.bytes)/3 {
		return stop(WhatReplyBytes) // 3 bytes an element at least: they cannot all arrive
	}
	if elems == 0 {
		return nil
	}
	if depth+1 > r.lim.MaxDepth {
		return stop(WhatDepth)
	}
	r.elems += elems
	for range elems {
		if st := r.elem(depth + 1); st != nil {
			return st
		}
	}
	return nil
}

// line reads the line at start and returns where the next begins. A
// header's number is [+-]digits.
func (r *refParser) line(start int, header bool) (int, *refStop) {
	incomplete := &refStop{cut: start + 1}
	bad := &refStop{cut: start + 1, what: WhatMalformed}
	count := int64(1) // bytes before the \n, the type byte first
	digits := false
	for i := start + 1; ; i++ {
		if i == len(r.in) {
			return 0, incomplete
		}
		c := r.in[i]
		if !header && c == '\n' {
			if r.in[i-1] != '\r' {
				return 0, bad
			}
			return i + 1, nil
		}
		if count++; count > r.lim.MaxLine+1 {
			return 0, &refStop{cut: start + 1, what: WhatLine}
		}
		if !header {
			continue
		}
		switch {
		case '0' <= c && c <= '9':
			digits = true
		case c == '\r' && digits:
			if i+1 == len(r.in) {
				return 0, incomplete
			}
			if r.in[i+1] != '\n' {
				return 0, bad
			}
			return i + 2, nil
		case (c == '+' || c == '-') && i == start+1:
		default:
			return 0, bad
		}
	}
}

// sizes turns fuzz bytes into read sizes from 1 to max.
func sizes(b []byte, max int) []int {
	s := make([]int, len(b))
	for i, v := range b {
		s[i] = 1 + int(v)%max
	}
	return s
}

// checkStream reads in through the guard, in the pieces and buffer sizes
// that cuts describes, and compares the outcome with refCheck's.
func checkStream(t *testing.T, in []byte, cuts []byte, lim Limits) {
	t.Helper()
	half := len(cuts) / 2
	fc := &chunkConn{data: in, sizes: sizes(cuts[:half], 97)}
	c := wrap(fc, lim, "192.0.2.1:6379")
	out, err := readAll(t, c, sizes(cuts[half:], 61))
	cut, what := refCheck(in, lim)
	if !bytes.Equal(out, in[:cut]) {
		if !bytes.HasPrefix(in, out) {
			t.Fatalf("passed on bytes that are not the server's: %q", trim(out))
		}
		t.Fatalf("passed on %d bytes, want %d (the reference stops with %q)", len(out), cut, what)
	}
	le := limitErr(err)
	if what == "" {
		if le != nil || !errors.Is(err, io.EOF) {
			t.Fatalf("err = %v, want io.EOF", err)
		}
		return
	}
	if le == nil || le.What != what {
		t.Fatalf("err = %v, want a %s *LimitError", err, what)
	}
	if !fc.closed {
		t.Fatal("refused, but the connection is open")
	}
}

// fuzzLimits are the limits a fuzz input runs with: small ones, that
// short inputs can reach, or the defaults.
func fuzzLimits(smallLimits bool) Limits {
	if smallLimits {
		return small
	}
	return Limits{}
}

// FuzzRead reads arbitrary bytes through the guard, cut into pieces and
// read into buffers as cuts says, with small or default limits, and checks
// that:
//
//   - it never panics, and a Read never returns 0, nil for long;
//   - what passes is the server's bytes, unchanged and in order;
//   - it is exactly what the reference reading (refCheck) lets pass: all
//     of a valid stream but a line not yet complete at its end (its type
//     byte aside), or the bytes before the line that breaks a bound and
//     its type byte (so no header beyond a limit ever reaches go-redis
//     whole), and then a *LimitError naming the same bound, with the
//     connection closed.
func FuzzRead(f *testing.F) {
	for _, seed := range []string{
		"+OK\r\n", "-ERR unknown command\r\n:12\r\n_\r\n#t\r\n,1.5\r\n(12345678901234567890\r\n",
		"$5\r\nhello\r\n$-1\r\n*-1\r\n", "*2\r\n$3\r\nfoo\r\n*1\r\n:1\r\n",
		"%1\r\n+a\r\n~2\r\n:1\r\n:2\r\n", ">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n",
		"|1\r\n+k\r\n+v\r\n+OK\r\n", "=8\r\ntxt:abcd\r\n!5\r\nERR x\r\n",
		"*2147483647\r\n", "*9223372036854775807\r\n", "$2147483647\r\n", "%1099511627776\r\n",
		"+" + strings.Repeat("a", 200), strings.Repeat("*1\r\n", 40), "*3\r\n*3\r\n*3\r\n*3\r\n",
		"$?\r\n;4\r\nHell\r\n;0\r\n", "*1\r\n|1\r\n+a\r\n+b\r\n+c\r\n", "|-1\r\n+OK\r\n",
		"$3\r\nabcXY", "*+2\r\n:1\r\n:2\r\n*-0\r\n", "HTTP/1.1 400 Bad Request\r\n", "+a\rb\r\n",
		"|0\r\n*3\r\n$18\r\nqqqqqqqqqqqqqqqqqq\r\n$18\r\nqqqqqqqqqqqqqqqqqq\r\n$18\r\nqqqqqqqqqqqqqqqqqq\r\n",
	} {
		f.Add([]byte(seed), []byte{3, 200, 7, 1, 5}, true)
		f.Add([]byte(seed), []byte{}, false)
	}
	f.Fuzz(func(t *testing.T, in, cuts []byte, smallLimits bool) {
		checkStream(t, in, cuts, fuzzLimits(smallLimits))
	})
}

// gen writes a valid RESP stream as a program of bytes directs: element
// types, sizes and contents, within the default limits.
type gen struct {
	prog []byte
	at   int
	out  strings.Builder
}

func (g *gen) next() byte {
	if g.at >= len(g.prog) {
		return 0
	}
	g.at++
	return g.prog[g.at-1]
}

// text is n bytes of the program; in a line, no \n.
func (g *gen) text(n int, line bool) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = g.next()
		if line && b[i] == '\n' {
			b[i] = 'n'
		}
	}
	return string(b)
}

func (g *gen) line(t byte, s string) { g.out.WriteString(string(t) + s + "\r\n") }

func (g *gen) str(t byte, body string) {
	g.out.WriteString(string(t) + strconv.Itoa(len(body)) + "\r\n" + body + "\r\n")
}

func (g *gen) elem(depth int) {
	op := g.next() % 16
	if depth >= 5 && op >= 10 {
		op %= 10
	}
	n := int(g.next() % 6)
	switch op {
	case 0:
		g.line('+', g.text(n, true))
	case 1:
		g.line('-', "ERR "+g.text(n, true))
	case 2:
		g.line(':', strconv.Itoa(int(int8(g.next()))*1000003))
	case 3:
		g.line('_', "")
	case 4:
		g.line('#', "tf"[n%2:n%2+1])
	case 5:
		g.line(',', strconv.FormatFloat(float64(int8(g.next()))/7, 'g', -1, 64))
	case 6:
		g.line('(', strings.Repeat("1234567890", n+1))
	case 7:
		if n == 5 {
			g.line('$', "-1")
			return
		}
		g.str('$', g.text(int(g.next()%64), false))
	case 8:
		g.str('=', "txt:"+g.text(n*3, false))
	case 9:
		g.str('!', "ERR "+g.text(n*3, false))
	case 10, 11, 12:
		g.line("*~>"[op-10], strconv.Itoa(n))
		for range n {
			g.elem(depth + 1)
		}
	case 13:
		g.line('%', strconv.Itoa(n))
		for range 2 * n {
			g.elem(depth + 1)
		}
	case 14:
		g.line('*', "-1")
	case 15:
		g.line("*%~"[n%3], "0")
	}
}

// genStream is the stream a program directs: top-level replies, some with
// an attribute, until the program ends.
func genStream(prog []byte) []byte {
	g := &gen{prog: prog}
	for g.at < len(g.prog) {
		if b := g.next(); b%8 == 0 {
			n := int(b>>3) % 3
			g.line('|', strconv.Itoa(n))
			for range 2 * n {
				g.elem(1)
			}
		}
		g.elem(0)
	}
	return []byte(g.out.String())
}

// FuzzValidStream generates a valid stream within the default limits and
// checks that every byte passes, unchanged and in order, however the
// stream is cut into pieces and reads (and that the reference reading
// agrees that the stream is valid).
func FuzzValidStream(f *testing.F) {
	f.Add([]byte("\x01\x0a\x03\x07\x00\x28abcdefghij"), []byte{1, 1, 2})
	f.Add([]byte("\x08\x0d\x04\x00\x02ab\x07\x00\x05\x0a\x02"), []byte{50, 3, 9, 0})
	f.Add([]byte("\x07\x01\x30\r\n\r\n*1\r\n$5\r\nhello\r\n"), []byte{})
	f.Add([]byte("\x0c\x05\x0c\x05\x0c\x05\x0c\x05\x0c\x05\x0c\x05"), []byte{7})
	f.Fuzz(func(t *testing.T, prog, cuts []byte) {
		in := genStream(prog)
		if cut, what := refCheck(in, Limits{}); cut != len(in) || what != "" {
			t.Fatalf("the reference refuses a generated stream at %d (%q): %q", cut, what, trim(in))
		}
		half := len(cuts) / 2
		fc := &chunkConn{data: in, sizes: sizes(cuts[:half], 97)}
		out, err := readAll(t, wrap(fc, Limits{}, "a:1"), sizes(cuts[half:], 61))
		if !errors.Is(err, io.EOF) || limitErr(err) != nil {
			t.Fatalf("err = %v, want io.EOF", err)
		}
		if !bytes.Equal(out, in) {
			t.Fatalf("passed on %q, want %q", trim(out), trim(in))
		}
	})
}
