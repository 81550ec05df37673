package classify

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify/internal/cmdinfo"
)

// fuzzArgs builds an argument list from the fuzzer's inputs: shape picks
// how many arguments there are (0 to 4) and which are []byte or numbers.
func fuzzArgs(name string, sub []byte, body string, shape uint8) []any {
	var first any = name
	if shape&0x04 != 0 {
		first = []byte(name)
	}
	var second any = sub
	if shape&0x08 != 0 {
		second = string(sub)
	}
	var third any = body
	if shape&0x10 != 0 {
		third = int64(len(body))
	}
	all := []any{first, second, third, "0"}
	return all[:int(shape&0x03)+int(shape>>7)]
}

// FuzzClassify feeds arbitrary argument lists to the classifier: it must
// never panic, its answers must agree across entry points and letter case,
// and it must only ever say read-only for what Redis flags readonly (or the
// documented script rules).
func FuzzClassify(f *testing.F) {
	f.Add("GET", []byte("k"), "", uint8(2))
	f.Add("object", []byte("ENCODING"), "k", uint8(3))
	f.Add("EVAL", []byte("#!lua flags=no-writes\nreturn 1"), "0", uint8(0x0b))
	f.Add("eval", []byte("#!lua name=x flags=no-writes,allow-stale\nreturn 1"), "0", uint8(0x0b))
	f.Add("CONFIG", []byte("get"), "maxmemory", uint8(0x83))
	f.Add("", []byte{}, "", uint8(0))
	c := New()
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, name string, sub []byte, body string, shape uint8) {
		args := fuzzArgs(name, sub, body, shape)
		d := c.Explain(args...)
		if got := c.ReadOnlyArgs(args...); got != d.ReadOnly {
			t.Fatalf("ReadOnlyArgs = %v, Explain = %s", got, d)
		}
		if got := c.ReadOnly(redis.NewCmd(ctx, args...)); got != d.ReadOnly {
			t.Fatalf("ReadOnly(cmd) = %v, Explain = %s", got, d)
		}
		if got := c.ReadOnlyPipeline([]redis.Cmder{redis.NewCmd(ctx, args...)}); got != d.ReadOnly {
			t.Fatalf("ReadOnlyPipeline = %v, Explain = %s", got, d)
		}
		if ro, first := c.Route(args); ro != d.ReadOnly || first != c.FirstKey(args) {
			t.Fatalf("Route = %v, %d; Explain = %s, FirstKey = %d", ro, first, d, c.FirstKey(args))
		}
		if len(args) > 0 {
			if s, ok := args[0].(string); ok {
				upper := append([]any{strings.ToUpper(s)}, args[1:]...)
				if got := c.ReadOnlyArgs(upper...); got != d.ReadOnly && isASCII(s) {
					t.Fatalf("upper-cased name: %v, Explain = %s", got, d)
				}
			}
		}
		if !d.ReadOnly {
			return
		}
		e := c.table().find(d.Command)
		if e == nil {
			t.Fatalf("read-only decision %s names no table entry", d)
		}
		switch d.Reason {
		case ReasonReadOnly:
			if e.flags&cmdinfo.ReadOnly == 0 || e.flags&(cmdinfo.Write|cmdinfo.Blocking|cmdinfo.PubSub|cmdinfo.Admin) != 0 {
				t.Fatalf("%s: flags %q", d, e.flags)
			}
		case ReasonReadOnlyScript:
			if !strings.HasSuffix(d.Command, "_ro") {
				t.Fatalf("%s: not an _RO command", d)
			}
		case ReasonScriptNoWrites:
			b, _ := argString(args[1])
			line, _, _ := strings.Cut(b, "\n")
			if !strings.HasPrefix(line, "#!lua") || !strings.Contains(line, "no-writes") {
				t.Fatalf("%s for body line %q", d, line)
			}
		default:
			t.Fatalf("read-only with reason %s", d)
		}
	})
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
