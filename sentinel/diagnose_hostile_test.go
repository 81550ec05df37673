package sentinel

import (
	"context"
	"errors"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/respguard"
)

// hostileReplies are the replies no Redis or Sentinel sends that the
// client's and Diagnose's tests answer with: each must cost an error
// naming the server, not the process.
func hostileReplies() []struct{ name, reply string } {
	return []struct{ name, reply string }{
		{"an array of 2^31-1 elements", "*2147483647\r\n"},
		{"an array of 2^63-1 elements", "*9223372036854775807\r\n"},
		{"an array of 9e18 elements", "*9000000000000000000\r\n"},
		{"a bulk string of 2 GiB", "$2147483647\r\n"},
		{"a map of 2^40 pairs", "%1099511627776\r\n"},
		{"a line without an end", "+" + strings.Repeat("x", 200_000)},
		{"nested 100 deep", strings.Repeat("*1\r\n", 100) + ":1\r\n"},
		// 17 attributes of 2^15 pairs before the reply, 2^20 + 2^16
		// elements in all (pairs count twice), 3.3 MB.
		{"an attribute flood", strings.Repeat("|32768\r\n"+strings.Repeat("_\r\n", 1<<16), 17) + "+OK\r\n"},
		{"not RESP", "HTTP/1.1 400 Bad Request\r\n\r\n"},
	}
}

// Diagnose's connections are bounded as the client's are: a sentinel or
// a node answering with a reply no server sends fails the step it
// answered, with a *StageError on that server wrapping respguard's
// *LimitError, within the configured timeouts and respguard's memory
// bound (an array header of 2^31-1 elements ran the process out of
// memory, one of 9e18 panicked in makeslice, in Diagnose on the caller's
// goroutine).
func TestDiagnoseHostileReplies(t *testing.T) {
	for _, tt := range hostileReplies() {
		t.Run(tt.name, func(t *testing.T) {
			for _, at := range []Stage{StageSentinel, StageRole} {
				// One fake server is both the sentinel and the node it
				// names; it answers the stage's command with the reply.
				var self string
				f := newFakeServer(t, func(args []string) string {
					switch strings.ToUpper(args[0]) {
					case "SENTINEL":
						if at == StageSentinel {
							return tt.reply
						}
						host, port, _ := net.SplitHostPort(self)
						return respFields(host, port)
					case "PING":
						return "+PONG\r\n"
					case "ROLE":
						return tt.reply
					}
					return "-ERR no\r\n"
				})
				self = f.Addr()
				// Timeouts far above the 0.3-1.3 s the attribute flood
				// takes to arrive and be refused (measured with -race at
				// load 20): the refusal, not a timeout, must end the step.
				cfg := Config{MasterName: "mymaster", SentinelAddrs: []string{self},
					SentinelTimeout: 10 * time.Second, DialTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second}
				// Diagnose is bounded by the stages' timeouts: at most a
				// sentinel's and a node's dial and reads.
				bound := 2*cfg.SentinelTimeout + 5*cfg.ReadTimeout
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				ctx, cancel := context.WithTimeout(context.Background(), 2*bound)
				began := time.Now()
				d, err := Diagnose(ctx, cfg)
				took := time.Since(began)
				cancel()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				grew := int64(after.TotalAlloc - before.TotalAlloc)
				t.Logf("%s: %v in %v, %d KiB allocated", at, err, took.Round(time.Millisecond), grew>>10)
				var se *StageError
				var le *respguard.LimitError
				if !errors.As(err, &se) || se.Stage != at || se.Server != self || !errors.As(err, &le) {
					t.Fatalf("%s answering %.20q: %v (%T); want a StageError of %s on %s wrapping a respguard.LimitError\n%s", at, tt.reply, err, err, at, self, d)
				}
				if le.Addr != self {
					t.Errorf("the LimitError names %q, want %s", le.Addr, self)
				}
				if len(err.Error()) > 4096 {
					t.Errorf("a %d-byte error", len(err.Error()))
				}
				if took > bound {
					t.Errorf("Diagnose took %v, past the %v its timeouts allow", took, bound)
				}
				if lim := int64(respguard.DefaultMaxReplyBytes + 64*respguard.DefaultMaxReplyElements); grew > lim {
					t.Errorf("%d bytes allocated, past respguard's bound %d", grew, lim)
				}
				if at == StageRole {
					// A node reached directly (the CLI's check of a
					// redis:// URL) goes through the same stages.
					_, err := DiagnoseNode(context.Background(), self, cfg)
					if !errors.As(err, &se) || se.Stage != StageRole || !errors.As(err, &le) {
						t.Fatalf("DiagnoseNode: %v; want a StageError of ROLE wrapping a respguard.LimitError", err)
					}
				}
			}
		})
	}
}
