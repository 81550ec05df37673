package testkit

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// HostileReply is a reply to a caller's command that no Redis sends, for
// the tests of the data path's reply bounds: each would reach go-redis's
// reader and make it allocate what it declares or crash the process.
type HostileReply struct {
	Name  string
	Reply string
	// What is the bound internal/respguard names when it refuses the
	// reply (its What… constants).
	What string
}

// HostileFloodLimit is the MaxReplyElements the tests of HostileReplies
// set, for the attribute flood (whose attributes are each small) to go
// over it while BigReply's array (past the control path's 65,536) fits.
const HostileFloodLimit = 70_000

// HostileReplies are the hostile replies: huge aggregate and string
// headers, a line without an end, deep nesting, and a RESP3 attribute
// flood (past HostileFloodLimit) and a huge attribute header.
func HostileReplies() []HostileReply {
	return []HostileReply{
		{"an array of 2^31-1 elements", "*2147483647\r\n", "aggregate elements"},
		{"an array of 9e18 elements", "*9000000000000000000\r\n", "aggregate elements"},
		{"a map of 2^62 pairs", "%4611686018427387904\r\n", "aggregate elements"},
		{"a set of 2^31-1 elements", "~2147483647\r\n", "aggregate elements"},
		{"a bulk string of 2 GiB", "$2147483647\r\n", "string length"},
		{"a line without an end", "+" + strings.Repeat("x", 1<<20+4096), "line length"},
		{"nested 1,000 deep", strings.Repeat("*1\r\n", 1000) + ":1\r\n", "nesting depth"},
		{"an attribute flood", strings.Repeat("|1\r\n+a\r\n+b\r\n", HostileFloodLimit/2+10) + "$2\r\nok\r\n", "reply elements"},
		{"an attribute of 2^31-1 pairs", "|2147483647\r\n", "aggregate elements"},
	}
}

// HostileKey is the key (channel, SCAN pattern) that HostileNode answers
// with HostileReplies()[i].
func HostileKey(i int) string { return "hostile:" + strconv.Itoa(i) }

// What HostileNode answers to GET big: a 20 MiB string, past the control
// path's 16 MiB; and to LRANGE big: 66,000 elements, past its 65,536.
// Both are legal replies the data path must let through.
const (
	BigString = 20 << 20
	BigArray  = 66_000
)

// BigReplyTimeout is the read and write timeout of a client given
// BigString: reading 20 MiB under the race detector on a loaded 2-core
// machine took past the default 3 s (CI, load 10-20). The checks are on
// the bytes and the errors, not the time, and every hostile reply is sent
// whole, so no check waits for it.
const BigReplyTimeout = 30 * time.Second

// NewHostileNode is a FakeServer posing as a standalone Redis master
// (RESP2: HELLO is refused) whose replies to the caller's commands on
// HostileKey(i) are HostileReplies()[i]: GET, SCAN (by its MATCH
// pattern), SUBSCRIBE and SSUBSCRIBE (by channel). Other keys get healthy
// replies: GET answers "ok" (or BigString bytes for "big"), SET +OK,
// LRANGE big BigArray integers, SCAN one key and cursor 0, a subscription
// its confirmation then a "hello" message 20 ms later. extra, when set, is
// asked first (for the commands of a topology: SENTINEL, CLUSTER); ok
// false leaves the command to the node.
func NewHostileNode(t testing.TB, extra func(args []string) (reply string, ok bool)) *FakeServer {
	t.Helper()
	hostile := HostileReplies()
	lookup := func(args []string) (string, bool) {
		for _, a := range args[1:] {
			if i, err := strconv.Atoi(strings.TrimPrefix(a, "hostile:")); err == nil && strings.HasPrefix(a, "hostile:") && i < len(hostile) {
				return hostile[i].Reply, true
			}
		}
		return "", false
	}
	big := bulk(strings.Repeat("b", BigString))
	bigArray := "*" + strconv.Itoa(BigArray) + "\r\n" + strings.Repeat(":1\r\n", BigArray)
	return NewFakeServer(t, func(s *FakeSession, args []string) string {
		if extra != nil {
			if r, ok := extra(args); ok {
				return r
			}
		}
		cmd := strings.ToUpper(args[0])
		switch cmd {
		case "GET", "SCAN", "SUBSCRIBE", "SSUBSCRIBE", "LRANGE":
			if r, ok := lookup(args); ok {
				return r
			}
		}
		switch cmd {
		case "HELLO":
			return "-ERR unknown command 'HELLO'\r\n"
		case "PING":
			return "+PONG\r\n"
		case "SELECT", "CLIENT", "READONLY", "READWRITE", "SET", "AUTH":
			return "+OK\r\n"
		case "ROLE":
			return "*3\r\n$6\r\nmaster\r\n:0\r\n*0\r\n"
		case "INFO":
			return bulk("# Replication\r\nrole:master\r\nconnected_slaves:0\r\nmaster_repl_offset:0\r\n")
		case "GET":
			if len(args) > 1 && args[1] == "big" {
				return big
			}
			return bulk("ok")
		case "LRANGE":
			return bigArray
		case "SCAN":
			return "*2\r\n" + bulk("0") + "*1\r\n" + bulk("k1")
		case "SUBSCRIBE", "SSUBSCRIBE":
			kind, msg := "subscribe", "message"
			if cmd == "SSUBSCRIBE" {
				kind, msg = "ssubscribe", "smessage"
			}
			var b strings.Builder
			for i, ch := range args[1:] {
				fmt.Fprintf(&b, "*3\r\n%s%s:%d\r\n", bulk(kind), bulk(ch), i+1)
				s.Later(20*time.Millisecond, "*3\r\n"+bulk(msg)+bulk(ch)+bulk("hello"))
			}
			return b.String()
		}
		return "-ERR unknown command '" + args[0] + "'\r\n"
	})
}

// bulk is s as a RESP bulk string.
func bulk(s string) string { return "$" + strconv.Itoa(len(s)) + "\r\n" + s + "\r\n" }
