package respguard

import (
	"bytes"
	"math"
)

// The scanner follows the RESP stream a server sends, byte by byte and
// across reads, as go-redis's reader (internal/proto/reader.go in go-redis
// v9.23) will read it, and checks each line when it is complete: before
// the conn lets go-redis see it.
//
// RESP's framing is context-free: where an element starts and ends follows
// from its own header alone, whatever encloses it. So however a go-redis
// command reads a reply (whole, element by element, or discarding parts),
// it meets the same headers the scanner checked. Nesting only affects the
// per-reply totals and the depth, and there the scanner follows the RESP3
// specification, which counts at least as much as any of go-redis's ways
// of reading does (see the attribute rule in header).

// state is where the scanner is in the stream.
type state uint8

const (
	stType     state = iota // at the start of an element: its type byte comes next
	stSimple                // in a line that is the whole element (+ - : _ , # (), up to its \n
	stHeader                // in the number of a string's or an aggregate's header
	stHeaderLF              // after the \r of a header: its \n comes next
	stBody                  // in a string's bytes, its \r\n included
)

// frame is an aggregate (or attribute) whose elements are still coming.
type frame struct {
	left int64 // elements to come
	attr bool  // an attribute: the element it annotates follows it
}

type scanner struct {
	lim  Limits // with defaults
	addr string // for errors

	st   state
	typ  byte  // the type byte of the current line
	line int64 // bytes of the current line so far, its type byte, \r and \n included
	cr   bool  // stSimple: the last byte of the line so far is \r

	// The number of a header: sign, whether a digit was seen, and its
	// value, saturated at math.MaxInt64 (go-redis fails on a number out
	// of range; here it is simply too large).
	neg, digits bool
	val         int64

	left int64 // stBody: bytes to go, \r\n included

	stack []frame // open aggregates, outermost first

	// Totals of the current top-level reply: elements declared by its
	// aggregates, and its bytes (lines, and strings as declared).
	elems, bytes int64
}

func newScanner(lim Limits, addr string) scanner {
	return scanner{lim: lim.withDefaults(), addr: addr}
}

// held is how many bytes at the end of what was scanned belong to a line
// that is not complete yet, after its type byte: the conn holds them back.
//
// The type byte itself passes once checked. go-redis acts on a line only
// once its \n arrives, but it peeks at the type byte of data waiting on an
// idle pooled connection (its health check, on RESP3 connections, with no
// deadline set): holding that byte back too would block the check for as
// long as the server keeps the line incomplete, where go-redis alone
// would return at once and drop the connection.
func (s *scanner) held() int {
	switch s.st {
	case stSimple, stHeader, stHeaderLF:
		return int(s.line) - 1
	}
	return 0
}

// cut is where, in the b being scanned, the bytes of the current line that
// must not reach go-redis begin, i being the index after the last byte
// scanned: after its type byte (which may have passed in an earlier call,
// so cut may be negative).
func (s *scanner) cut(i int) int { return i - int(s.line) + 1 }

// scan follows b, the next bytes of the stream. On a refused reply it
// returns the error and where in b the bytes that must not reach go-redis
// begin: the offending type byte; or, after the type byte, the rest of the
// offending line (negative when that line began in an earlier call); or
// the offending byte after a string. The scanner is then unusable.
//
// Each state has its own step, which reads from b[i:] what that state
// expects (at least one byte) and returns the index after it, or, with
// the error, the cut described above.
func (s *scanner) scan(b []byte) (int, *LimitError) {
	i := 0
	for i < len(b) {
		var err *LimitError
		switch s.st {
		case stBody:
			i, err = s.body(b, i)
		case stType:
			// Most lines are headers that b holds whole: they are read
			// at once, here, where the scan of a reply spends its time.
			if k := s.quickHeader(b[i:]); k > 0 {
				i += k
				if err := s.header(); err != nil {
					return s.cut(i), err
				}
				s.line = 0
				continue
			}
			i, err = s.element(b, i)
		case stSimple:
			i, err = s.simple(b, i)
		case stHeader:
			i, err = s.headerByte(b, i)
		case stHeaderLF:
			i, err = s.headerLF(b, i)
		}
		if err != nil {
			return i, err
		}
	}
	return len(b), nil
}

// body passes over a string's bytes, as many as b holds (their content is
// not checked: go-redis reads them by the declared length), then checks
// the \r\n after them, in one step when both are here, and ends the
// element. A refused byte is itself the cut.
func (s *scanner) body(b []byte, i int) (int, *LimitError) {
	if s.left > 2 {
		k := min(int64(len(b)-i), s.left-2)
		i += int(k)
		s.left -= k
		if s.left > 2 {
			return i, nil // b ended inside the string
		}
	}
	if s.left == 2 && i < len(b) {
		if b[i] != '\r' {
			return i, s.malformed(`a string not followed by \r\n`)
		}
		i++
		s.left--
	}
	if s.left == 1 && i < len(b) {
		if b[i] != '\n' {
			return i, s.malformed(`a string not followed by \r\n`)
		}
		i++
		s.left = 0
		s.st = stType
		s.done()
	}
	return i, nil
}

// element starts an element at b[i], its type byte, when it is not a
// header line that b holds whole (scan reads those with quickHeader): the
// type byte is checked here and the scanner moves to the line's rest, read
// byte by byte across calls. A refused type byte is itself the cut.
func (s *scanner) element(b []byte, i int) (int, *LimitError) {
	t := b[i]
	i++
	s.typ, s.line = t, 1
	switch t {
	case '+', '-', ':', '_', ',', '#', '(':
		s.st, s.cr = stSimple, false
	case '$', '=', '!', '*', '~', '>', '%', '|':
		if t == '|' && len(s.stack) > 0 {
			// go-redis reads an attribute inside an aggregate
			// in two ways: with the element it annotates (when
			// it reads a reply) or without it (when a command
			// discards an element: Reader.Discard). Redis sends
			// none; refusing them keeps the element counts
			// unambiguous.
			return i - 1, s.malformed("an attribute inside an aggregate or attribute, which go-redis does not read consistently")
		}
		s.st, s.neg, s.digits, s.val = stHeader, false, false, 0
	default:
		return i - 1, s.malformed(typeDetail(t))
	}
	return i, nil
}

// simple reads a line that is the whole element, up to its \n, or to the
// end of b when the \n has not come yet (remembering whether b ended in
// \r, for a \n at the start of the next b). The line is refused as soon
// as it is longer than MaxLine, and when it ends in \n without \r; a
// complete line ends the element.
func (s *scanner) simple(b []byte, i int) (int, *LimitError) {
	j := bytes.IndexByte(b[i:], '\n')
	if j < 0 {
		s.line += int64(len(b) - i)
		s.cr = b[len(b)-1] == '\r'
		i = len(b)
		if s.line > s.lim.MaxLine+1 {
			return s.cut(i), s.tooLong()
		}
		return i, nil
	}
	cr := s.cr
	if j > 0 {
		cr = b[i+j-1] == '\r'
	}
	s.line += int64(j)
	i += j
	if s.line > s.lim.MaxLine+1 {
		return s.cut(i), s.tooLong()
	}
	if !cr {
		return s.cut(i), s.malformed(`a line that ends in \n without \r`)
	}
	i++ // the \n
	s.line++
	if err := s.lineDone(); err != nil {
		return s.cut(i), err
	}
	s.st, s.line = stType, 0
	s.done()
	return i, nil
}

// headerByte reads one byte of a header's number, the slow path of a
// header cut by the end of a read or not well formed: a digit (the value
// saturates, see val), a sign right after the type byte, or the \r after
// at least one digit. Anything else is refused, '?' (RESP3's streamed
// types) with its own reason; so is a line longer than MaxLine.
func (s *scanner) headerByte(b []byte, i int) (int, *LimitError) {
	c := b[i]
	i++
	s.line++
	if s.line > s.lim.MaxLine+1 {
		return s.cut(i), s.tooLong()
	}
	switch {
	case '0' <= c && c <= '9':
		s.addDigit(c)
	case c == '\r' && s.digits:
		s.st = stHeaderLF
	case (c == '+' || c == '-') && s.line == 2:
		s.neg = c == '-'
	case c == '?' && s.line == 2:
		return s.cut(i), s.malformed("a streamed string or aggregate ('" + string(s.typ) + "?'), which go-redis cannot read")
	default:
		return s.cut(i), s.malformed("a length or count that is not a number")
	}
	return i, nil
}

// addDigit appends the digit c to the header's number, saturating at
// math.MaxInt64.
func (s *scanner) addDigit(c byte) {
	d := int64(c - '0')
	if s.val > (math.MaxInt64-d)/10 {
		s.val = math.MaxInt64
	} else {
		s.val = s.val*10 + d
	}
	s.digits = true
}

// headerLF checks the \n after a header's \r and acts on the complete
// header.
func (s *scanner) headerLF(b []byte, i int) (int, *LimitError) {
	if b[i] != '\n' {
		return s.cut(i), s.malformed(`a line with \r not followed by \n`)
	}
	i++
	s.line++
	if err := s.header(); err != nil {
		return s.cut(i), err
	}
	s.line = 0
	return i, nil
}

// quickHeader reads, when b starts with one, a whole well-formed header
// line of a string or aggregate, with at most 18 digits (no overflow) and
// within MaxLine, and returns its length, with the scanner set as the byte
// by byte path would leave it before header. It returns 0 for anything
// else (including a header cut off by the end of b, and every error),
// which the byte by byte path then reads. Most lines of Redis's replies
// are such headers: this is the fast path.
func (s *scanner) quickHeader(b []byte) int {
	t := b[0]
	switch t {
	case '$', '*', '%', '=', '!', '~', '>':
	case '|':
		if len(s.stack) > 0 {
			return 0
		}
	default:
		return 0
	}
	j, neg := 1, false
	if j < len(b) && (b[j] == '-' || b[j] == '+') {
		neg = b[j] == '-'
		j++
	}
	first := j
	var v int64
	for j < len(b) && j-first < 18 && b[j]-'0' <= 9 {
		v = v*10 + int64(b[j]-'0')
		j++
	}
	if j == first || j+1 >= len(b) || b[j] != '\r' || b[j+1] != '\n' || int64(j) > s.lim.MaxLine {
		return 0
	}
	s.typ, s.neg, s.val, s.line = t, neg, v, int64(j+2)
	return j + 2
}

// lineDone counts a complete line in its reply's bytes.
func (s *scanner) lineDone() *LimitError {
	s.bytes += s.line
	if s.bytes > s.lim.MaxReplyBytes {
		return s.limit(WhatReplyBytes, s.lim.MaxReplyBytes, s.bytes, "")
	}
	return nil
}

// header acts on a complete header line: a string's body follows, or an
// aggregate opens, or the element (a null, an empty aggregate) is done.
func (s *scanner) header() *LimitError {
	if err := s.lineDone(); err != nil {
		return err
	}
	n := s.val
	if s.neg {
		switch n {
		case 0:
		case 1:
			if s.typ == '|' {
				// go-redis reads "|-1" as an empty attribute followed by
				// the element it annotates in one place (Reader.ReadLine)
				// and as a whole reply in another (ReadRawReply).
				return s.malformed("a null attribute, which go-redis does not read consistently")
			}
			s.st = stType // a null: RESP2's $-1 and *-1, and RESP3's
			s.done()
			return nil
		default:
			return s.malformed("a negative length or count other than -1")
		}
	}
	switch s.typ {
	case '$', '=', '!':
		if n > s.lim.MaxBulk {
			return s.limit(WhatBulk, s.lim.MaxBulk, n, kindName(s.typ))
		}
		if total := satAdd(s.bytes, n+2); total > s.lim.MaxReplyBytes {
			return s.limit(WhatReplyBytes, s.lim.MaxReplyBytes, total, "")
		}
		s.bytes += n + 2
		s.st, s.left = stBody, n+2
		return nil
	}
	elems := n
	if s.typ == '%' || s.typ == '|' {
		elems = math.MaxInt64
		if n <= math.MaxInt64/2 {
			elems = 2 * n
		}
	}
	if elems > s.lim.MaxAggregate {
		return s.limit(WhatAggregate, s.lim.MaxAggregate, elems, kindName(s.typ))
	}
	if total := satAdd(s.elems, elems); total > s.lim.MaxReplyElements {
		return s.limit(WhatReplyElements, s.lim.MaxReplyElements, total, "")
	}
	// What can actually arrive: every element takes at least minElement
	// bytes, so a header declaring more than the rest of MaxReplyBytes
	// can hold is refused now, before go-redis allocates for it, rather
	// than once its elements have come.
	if total := satAdd(s.bytes, satMul(minElement, elems)); total > s.lim.MaxReplyBytes {
		return s.limit(WhatReplyBytes, s.lim.MaxReplyBytes, total, "")
	}
	s.st = stType
	if elems == 0 {
		if s.typ != '|' { // an empty attribute annotates the element that follows
			s.done()
		}
		return nil
	}
	if depth := int64(len(s.stack)) + 1; depth > s.lim.MaxDepth {
		return s.limit(WhatDepth, s.lim.MaxDepth, depth, "")
	}
	s.elems += elems
	s.stack = append(s.stack, frame{left: elems, attr: s.typ == '|'})
	return nil
}

// done records that an element is complete: it counts in the aggregate that
// holds it, which may complete in turn; a complete top-level element ends
// its reply.
func (s *scanner) done() {
	for {
		if len(s.stack) == 0 {
			s.elems, s.bytes = 0, 0
			return
		}
		top := &s.stack[len(s.stack)-1]
		top.left--
		if top.left > 0 {
			return
		}
		attr := top.attr
		s.stack = s.stack[:len(s.stack)-1]
		if attr {
			return // the element it annotates is still to come
		}
	}
}

// minElement is the fewest bytes a RESP element takes: a type byte and
// \r\n ("_\r\n", RESP3's null).
const minElement = 3

// satMul is k*n for positive k and non-negative n, saturated at
// math.MaxInt64.
func satMul(k, n int64) int64 {
	if n > math.MaxInt64/k {
		return math.MaxInt64
	}
	return k * n
}

// satAdd is a+b for non-negative a and b, saturated at math.MaxInt64 (the
// limits may be set that high).
func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

func (s *scanner) limit(what string, limit, got int64, detail string) *LimitError {
	return &LimitError{Addr: s.addr, What: what, Limit: limit, Got: got, Detail: detail}
}

func (s *scanner) tooLong() *LimitError {
	// The line so far, less the \r it may end in: at least that much.
	return s.limit(WhatLine, s.lim.MaxLine, s.line-1, "")
}

func (s *scanner) malformed(detail string) *LimitError {
	return &LimitError{Addr: s.addr, What: WhatMalformed, Detail: detail}
}

// typeDetail describes a byte that does not start a RESP element.
func typeDetail(t byte) string {
	switch t {
	case ';', '.':
		return "a chunk of a streamed reply ('" + string(t) + "'), which go-redis cannot read"
	}
	d := "unknown type byte " + quoteByte(t)
	if 'A' <= t && t <= 'Z' || 'a' <= t && t <= 'z' || t == '<' || t == '{' {
		d += ": it may not be a Redis server"
	}
	return d
}

func quoteByte(t byte) string {
	const hex = "0123456789abcdef"
	if t >= ' ' && t <= '~' && t != '\'' && t != '\\' {
		return "'" + string(t) + "'"
	}
	return `'\x` + string(hex[t>>4]) + string(hex[t&15]) + "'"
}

// kindName names the string or aggregate a type byte starts.
func kindName(t byte) string {
	switch t {
	case '$':
		return "bulk string"
	case '=':
		return "verbatim string"
	case '!':
		return "blob error"
	case '*':
		return "array"
	case '~':
		return "set"
	case '>':
		return "push"
	case '%':
		return "map"
	case '|':
		return "attribute"
	}
	return "reply"
}
