package classify

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify/internal/cmdinfo"
	"github.com/rediskit/rediskit/lab"
)

func TestFirstKey(t *testing.T) {
	var nilString *string
	name := "GET"
	tests := []struct {
		args []any
		want int
	}{
		// Fixed positions from the table.
		{[]any{"GET", "k"}, 1},
		{[]any{"get", "k"}, 1},
		{[]any{[]byte("gEt"), "k"}, 1},
		{[]any{&name, "k"}, 1},
		{[]any{"SET", "k", "v"}, 1},
		{[]any{"MGET", "a", "b"}, 1},
		{[]any{"MSET", "a", "1", "b", "2"}, 1},
		{[]any{"HSET", "h", "f", "v"}, 1},
		{[]any{"BLPOP", "a", "b", 0}, 1},
		{[]any{"BLMOVE", "a", "b", "LEFT", "RIGHT", 0}, 1},
		{[]any{"WATCH", "a"}, 1},
		{[]any{"SPUBLISH", "channel", "m"}, 1}, // sharded channels hash like keys
		{[]any{"PFDEBUG", "GETREG", "h"}, 2},
		{[]any{"GEOSEARCH", "g", "FROMLONLAT", 0, 0, "BYRADIUS", 1, "km"}, 1},
		{[]any{"GEOSEARCHSTORE", "dst", "src", "FROMMEMBER", "m", "BYRADIUS", 1, "km"}, 1},
		{[]any{"GEORADIUS", "g", 0, 0, 1, "km", "STORE", "d"}, 1},
		{[]any{"GEORADIUSBYMEMBER_RO", "g", "m", 1, "km"}, 1},
		{[]any{"SORT", "l", "BY", "w_*", "STORE", "d"}, 1},
		{[]any{"sort_ro", "l"}, 1},
		{[]any{"ZUNIONSTORE", "dst", 2, "a", "b"}, 1},
		{[]any{"ZINTERSTORE", "dst", 1, "a"}, 1},
		{[]any{"ZDIFFSTORE", "dst", 1, "a"}, 1},

		// Containers: the subcommand's key.
		{[]any{"OBJECT", "ENCODING", "k"}, 2},
		{[]any{"object", []byte("freq"), "k"}, 2},
		{[]any{"MEMORY", "USAGE", "k", "SAMPLES", 5}, 2},
		{[]any{"XINFO", "STREAM", "s"}, 2},
		{[]any{"XGROUP", "CREATE", "s", "g", "$"}, 2},
		{[]any{"OBJECT"}, -1},
		{[]any{"OBJECT", "NOPE", "k"}, -1},
		{[]any{"OBJECT", 7, "k"}, -1},
		{[]any{"OBJECT", "HELP"}, -1},

		// No key.
		{[]any{"PING"}, -1},
		{[]any{"INFO", "replication"}, -1},
		{[]any{"CLUSTER", "INFO"}, -1},
		{[]any{"CLUSTER", "KEYSLOT", "k"}, -1},
		{[]any{"SCRIPT", "LOAD", "return 1"}, -1},
		{[]any{"FUNCTION", "LIST"}, -1},
		{[]any{"PUBLISH", "c", "m"}, -1},
		{[]any{"COMMAND", "GETKEYS", "GET", "k"}, -1},
		{[]any{"KEYS", "*"}, -1},
		{[]any{"NOSUCHCMD", "k"}, -1},
		{[]any{"object|encoding", "k"}, -1},

		// Scripts: numkeys at 2, key at 3.
		{[]any{"EVAL", "return 1", 1, "k"}, 3},
		{[]any{"EVAL", "return 1", "2", "a", "b", "arg"}, 3},
		{[]any{"eval", "return 1", int64(1), "k"}, 3},
		{[]any{"EVAL", "return 1", []byte("1"), "k"}, 3},
		{[]any{"EVAL", "return 1", uint8(1), "k"}, 3},
		{[]any{"EVAL", "return 1", 1.0, "k"}, 3},
		{[]any{"EVAL", "return 1", true, "k"}, 3}, // go-redis writes true as 1
		{[]any{"EVALSHA", "abc", 1, "k"}, 3},
		{[]any{"EVAL_RO", "return 1", 1, "k"}, 3},
		{[]any{"EVALSHA_RO", "abc", 1, "k"}, 3},
		{[]any{"FCALL", "f", 1, "k"}, 3},
		{[]any{"fcall_ro", "f", 1, "k"}, 3},
		{[]any{"EVAL", "return 1", 0}, -1},
		{[]any{"EVAL", "return 1", "0", "arg"}, -1},
		{[]any{"EVAL", "return 1", false, "arg"}, -1},
		{[]any{"EVAL", "return 1"}, -1},             // numkeys missing
		{[]any{"EVAL"}, -1},                         // shorter than the position
		{[]any{"EVAL", "return 1", "one", "k"}, -1}, // not a number
		{[]any{"EVAL", "return 1", "1x", "k"}, -1},
		{[]any{"EVAL", "return 1", "01", "k"}, -1}, // Redis's string2ll refuses a leading zero
		{[]any{"EVAL", "return 1", "", "k"}, -1},
		{[]any{"EVAL", "return 1", -1, "k"}, -1},
		{[]any{"EVAL", "return 1", 1.5, "k"}, -1},
		{[]any{"EVAL", "return 1", 2, "k"}, -1}, // more keys than arguments: refused
		{[]any{"EVAL", "return 1", nil, "k"}, -1},
		{[]any{"EVAL", "return 1", struct{}{}, "k"}, -1},
		{[]any{"EVAL", "return 1", "99999999999999999999", "k"}, -1},

		// numkeys at 1, key at 2.
		{[]any{"ZUNION", 2, "a", "b"}, 2},
		{[]any{"ZINTER", "1", "a", "WITHSCORES"}, 2},
		{[]any{"ZDIFF", 2, "a", "b"}, 2},
		{[]any{"ZINTERCARD", 2, "a", "b", "LIMIT", 1}, 2},
		{[]any{"SINTERCARD", 1, "a"}, 2},
		{[]any{"LMPOP", 1, "l", "LEFT"}, 2},
		{[]any{"ZMPOP", 1, "z", "MIN", "COUNT", 2}, 2},
		{[]any{"ZUNION", 0, "a"}, -1},
		{[]any{"ZUNION"}, -1},
		{[]any{"ZUNION", "x", "a"}, -1},

		// numkeys at 2, key at 3.
		{[]any{"BLMPOP", 0, 2, "a", "b", "LEFT"}, 3},
		{[]any{"BZMPOP", "0.5", "1", "z", "MAX"}, 3},
		{[]any{"BLMPOP", 0}, -1},
		{[]any{"BZMPOP", 0, 0, "z", "MAX"}, -1},

		// STREAMS.
		{[]any{"XREAD", "STREAMS", "s", "0"}, 2},
		{[]any{"XREAD", "COUNT", 10, "BLOCK", 100, "streams", "a", "b", "0", "0"}, 6},
		{[]any{"xread", "block", 0, []byte("StReAmS"), "s", "$"}, 4},
		{[]any{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}, 5},
		{[]any{"XREADGROUP", "GROUP", "streams", "streams", "NOACK", "STREAMS", "s", ">"}, 6},
		{[]any{"XREADGROUP", "GROUP", "g", "c", "COUNT", 1, "BLOCK", 0, "STREAMS", "s", ">"}, 9},
		{[]any{"XREAD", "COUNT", 1, "s", "0"}, -1},  // STREAMS missing
		{[]any{"XREAD", "STREAMS"}, -1},             // nothing after it
		{[]any{"XREAD", "COUNT", "STREAMS"}, -1},    // the keyword is COUNT's value
		{[]any{"XREAD", 5, "STREAMS", "s", "0"}, 3}, // a number is a word too
		{[]any{"XREAD"}, -1},
		{[]any{"XREAD", struct{}{}, "STREAMS", "s", "0"}, -1},

		// MIGRATE.
		{[]any{"MIGRATE", "127.0.0.1", 6379, "k", 0, 5000}, 3},
		{[]any{"MIGRATE", "127.0.0.1", 6379, "", 0, 5000, "KEYS", "a", "b"}, 7},
		{[]any{"MIGRATE", "127.0.0.1", 6379, []byte{}, 0, 5000, "COPY", "REPLACE", "keys", "a"}, 9},
		{[]any{"MIGRATE", "127.0.0.1", 6379, nil, 0, 5000, "AUTH", "keys", "KEYS", "a"}, 9},
		{[]any{"MIGRATE", "127.0.0.1", 6379, nilString, 0, 5000, "AUTH2", "keys", "keys", "KEYS", "a"}, 10},
		{[]any{"MIGRATE", "127.0.0.1", 6379, 42, 0, 5000}, 3}, // sent as "42"
		{[]any{"MIGRATE", "127.0.0.1", 6379, "", 0, 5000}, -1},
		{[]any{"MIGRATE", "127.0.0.1", 6379, "", 0, 5000, "KEYS"}, -1},
		{[]any{"MIGRATE", "127.0.0.1", 6379}, -1},

		// Args shorter than the position, and no command at all.
		{[]any{"GET"}, -1},
		{[]any{"OBJECT", "ENCODING"}, -1},
		{[]any{"ZUNIONSTORE"}, -1},
		{nil, -1},
		{[]any{}, -1},
		{[]any{nil}, -1},
		{[]any{42, "k"}, -1},
		{[]any{nilString, "k"}, -1},
		{[]any{""}, -1},
	}
	c := New()
	for _, tt := range tests {
		if got := c.FirstKey(tt.args); got != tt.want {
			t.Errorf("FirstKey(%q) = %d, want %d", tt.args, got, tt.want)
		}
		if got := FirstKey(tt.args); got != tt.want {
			t.Errorf("package FirstKey(%q) = %d, want %d", tt.args, got, tt.want)
		}
		var zero Classifier
		if got := zero.FirstKey(tt.args); got != tt.want {
			t.Errorf("zero Classifier: FirstKey(%q) = %d, want %d", tt.args, got, tt.want)
		}
		if len(tt.args) > 0 {
			if s, ok := tt.args[0].(string); ok {
				upper := append([]any{strings.ToUpper(s)}, tt.args[1:]...)
				if got := c.FirstKey(upper); got != tt.want {
					t.Errorf("FirstKey(%q) = %d, want %d", upper, got, tt.want)
				}
			}
		}
	}
	t.Logf("%d cases", len(tests))
}

// refreshOver refreshes c from node over RESP protocol (2 or 3), and
// fails the test if it cannot.
func refreshOver(ctx context.Context, t *testing.T, c *Classifier, node *lab.Node, protocol int) {
	t.Helper()
	opt := node.Options()
	opt.Protocol = protocol
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	if err := c.Refresh(ctx, rdb); err != nil {
		t.Fatalf("RESP%d: Refresh: %v", protocol, err)
	}
}

// TestFirstKeyAfterRefresh checks that a refreshed table keeps key
// positions, read from the server's COMMAND reply.
func TestFirstKeyAfterRefresh(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Standalone())
	for _, protocol := range []int{2, 3} {
		c := partialClassifier("get", "object|encoding", "eval", "xread")
		refreshOver(ctx, t, c, l.Node(0), protocol)
		for _, tt := range []struct {
			args []any
			want int
		}{
			{[]any{"GET", "k"}, 1},
			{[]any{"OBJECT", "ENCODING", "k"}, 2},
			{[]any{"EVAL", "return 1", 1, "k"}, 3},
			{[]any{"XREAD", "STREAMS", "s", "0"}, 2},
			{[]any{"PING"}, -1},
		} {
			if got := c.FirstKey(tt.args); got != tt.want {
				t.Errorf("RESP%d: after Refresh, FirstKey(%q) = %d, want %d", protocol, tt.args, got, tt.want)
			}
		}
	}
}

// TestParseKeysOverBothProtocols reads COMMAND over RESP2 and RESP3, as
// go-redis returns each, and checks that Parse reads the same key
// positions from both, and that they are the built-in table's where the
// servers agree.
func TestParseKeysOverBothProtocols(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Standalone())
	v := l.ServerVersion()
	builtinSourceFor(t, v)
	byProtocol := map[int]map[string]cmdinfo.Keys{}
	for _, protocol := range []int{2, 3} {
		opt := l.Node(0).Options()
		opt.Protocol = protocol
		rdb := redis.NewClient(opt)
		reply, err := rdb.Do(ctx, "COMMAND").Result()
		rdb.Close()
		if err != nil {
			t.Fatalf("RESP%d: COMMAND: %v", protocol, err)
		}
		specs, err := cmdinfo.Parse(reply)
		if err != nil {
			t.Fatalf("RESP%d: Parse: %v", protocol, err)
		}
		keys := map[string]cmdinfo.Keys{}
		for _, s := range allSpecs(specs) {
			keys[s.Name] = s.Keys
		}
		byProtocol[protocol] = keys
	}
	if len(byProtocol[2]) != len(byProtocol[3]) {
		t.Fatalf("RESP2 has %d commands, RESP3 %d", len(byProtocol[2]), len(byProtocol[3]))
	}
	view := builtinView(v.Name)
	var keyed int
	for name, k2 := range byProtocol[2] {
		if k3 := byProtocol[3][name]; k3 != k2 {
			t.Errorf("%s: RESP2 %s, RESP3 %s", name, k2, k3)
		}
		if got := view[name]; got.Known && got.Keys != k2 {
			t.Errorf("%s: table %s, server %s", name, got.Keys, k2)
		}
		if k2.First > 0 {
			keyed++
		}
	}
	for name, want := range map[string]cmdinfo.Keys{
		"get":             {First: 1, Last: 1, Step: 1},
		"mset":            {First: 1, Last: -1, Step: 2},
		"object|encoding": {First: 2, Last: 2, Step: 1},
		"ping":            {},
	} {
		if got := byProtocol[2][name]; got != want {
			t.Errorf("%s: parsed %s, want %s", name, got, want)
		}
	}
	t.Logf("%s: %d commands, %d with a first key", v, len(byProtocol[2]), keyed)
}

// getKeysSamples are argument lists for the commands whose keys COMMAND
// GETKEYS finds by reading the arguments (movable keys, keywords): an
// argument list built from the arity alone would not parse. Keys are named
// k1, k2, ...; the other arguments so that none is mistaken for a key.
var getKeysSamples = map[string][]any{
	"eval":              {"eval", "return 1", "2", "k1", "k2", "arg"},
	"eval_ro":           {"eval_ro", "return 1", "2", "k1", "k2", "arg"},
	"evalsha":           {"evalsha", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "1", "k1"},
	"evalsha_ro":        {"evalsha_ro", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", "1", "k1"},
	"fcall":             {"fcall", "f", "1", "k1", "arg"},
	"fcall_ro":          {"fcall_ro", "f", "1", "k1", "arg"},
	"zunion":            {"zunion", "2", "k1", "k2", "WITHSCORES"},
	"zinter":            {"zinter", "2", "k1", "k2"},
	"zdiff":             {"zdiff", "2", "k1", "k2"},
	"zintercard":        {"zintercard", "2", "k1", "k2", "LIMIT", "1"},
	"sintercard":        {"sintercard", "2", "k1", "k2"},
	"lmpop":             {"lmpop", "2", "k1", "k2", "LEFT"},
	"zmpop":             {"zmpop", "2", "k1", "k2", "MIN"},
	"blmpop":            {"blmpop", "0", "2", "k1", "k2", "LEFT"},
	"bzmpop":            {"bzmpop", "0", "2", "k1", "k2", "MIN"},
	"zunionstore":       {"zunionstore", "k1", "2", "k2", "k3"},
	"zinterstore":       {"zinterstore", "k1", "2", "k2", "k3"},
	"zdiffstore":        {"zdiffstore", "k1", "2", "k2", "k3"},
	"xread":             {"xread", "COUNT", "1", "BLOCK", "0", "STREAMS", "k1", "k2", "0", "0"},
	"xreadgroup":        {"xreadgroup", "GROUP", "g", "streams", "NOACK", "STREAMS", "k1", ">"},
	"sort":              {"sort", "k1", "BY", "nosort", "STORE", "k2"},
	"sort_ro":           {"sort_ro", "k1", "BY", "nosort"},
	"migrate":           {"migrate", "127.0.0.1", "1", "", "0", "1000", "COPY", "AUTH", "keys", "KEYS", "k1", "k2"},
	"georadius":         {"georadius", "k1", "0", "0", "1", "km", "STORE", "k2"},
	"georadiusbymember": {"georadiusbymember", "k1", "m", "1", "km", "STOREDIST", "k2"},
	"pfmerge":           {"pfmerge", "k1", "k2"}, // GETKEYS refuses the destination alone
}

// sampleArgs builds an argument list for a command from its arity: the
// name (and subcommand), then "a<i>" at every other position i, as many
// as the arity requires and at least one (COMMAND GETKEYS needs an
// argument after the name). Where COMMAND GETKEYS must read the arguments,
// getKeysSamples gives the list.
func sampleArgs(s cmdinfo.Spec) []any {
	if args, ok := getKeysSamples[s.Name]; ok {
		return args
	}
	args := argsFor(s.Name)
	n := max(s.Arity, -s.Arity, len(args)+1)
	for i := len(args); i < n; i++ {
		args = append(args, fmt.Sprintf("a%d", i))
	}
	return args
}

// TestFirstKeyMatchesServer asks a live server COMMAND GETKEYS for a
// sample argument list of every command and subcommand of the table it
// knows (one pipeline), and checks FirstKey against the first key it
// names: every command GETKEYS finds keys in has FirstKey at that key's
// index, every command the table gives a first key (or movable keys) is
// checked unless GETKEYS refuses its sample, and the refusals are logged.
func TestFirstKeyMatchesServer(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Standalone())
	v := l.ServerVersion()
	live := map[string]bool{}
	for _, s := range allSpecs(serverSpecs(ctx, t, l.Node(0))) {
		live[s.Name] = true
	}
	rdb := l.Node(0).NewClient()
	defer rdb.Close()

	type sample struct {
		spec cmdinfo.Spec
		args []any
		cmd  *redis.StringSliceCmd
	}
	var samples []sample
	pipe := rdb.Pipeline()
	for _, s := range allSpecs(builtinSpecs) {
		if !live[s.Name] || len(s.Subcommands) > 0 {
			continue // a command this server lacks, or a container alone
		}
		args := sampleArgs(s)
		cmd := pipe.CommandGetKeys(ctx, args...)
		samples = append(samples, sample{spec: s, args: args, cmd: cmd})
	}
	_, _ = pipe.Exec(ctx) // each command's own error is read below

	var checked, keyless int
	var refused []string
	c := New()
	for _, sm := range samples {
		keyed := sm.spec.Keys.First > 0 || sm.spec.Flags&cmdinfo.MovableKeys != 0
		got := c.FirstKey(sm.args)
		keys, err := sm.cmd.Result()
		if err != nil {
			var rerr redis.Error
			if !errors.As(err, &rerr) {
				t.Fatalf("%s: COMMAND GETKEYS %q: %v", sm.spec.Name, sm.args, err)
			}
			if keyed {
				refused = append(refused, fmt.Sprintf("%s (FirstKey %d): %v", sm.spec.Name, got, err))
			} else {
				keyless++
				if got != -1 {
					t.Errorf("%s: FirstKey(%q) = %d, but the command has no key", sm.spec.Name, sm.args, got)
				}
			}
			continue
		}
		checked++
		want := -1
		if len(keys) > 0 {
			for i, a := range sm.args {
				if a == keys[0] {
					want = i
					break
				}
			}
			if want < 0 {
				t.Fatalf("%s: GETKEYS %q named %q, not one of the arguments", sm.spec.Name, sm.args, keys[0])
			}
		}
		if got != want {
			t.Errorf("%s: FirstKey(%q) = %d, COMMAND GETKEYS says %q (index %d)", sm.spec.Name, sm.args, got, keys, want)
		}
		var all []string
		for i := range c.KeyIndexes(sm.args) {
			all = append(all, fmt.Sprint(sm.args[i]))
		}
		if !slices.Equal(all, keys) && !(len(keys) == 0 && len(all) == 0) && !keyIndexesPartial[sm.spec.Name] {
			t.Errorf("%s: KeyIndexes(%q) finds %q, COMMAND GETKEYS says %q", sm.spec.Name, sm.args, all, keys)
		}
		if !keyed && want >= 0 {
			t.Errorf("%s: the table has no key for it, GETKEYS finds %q", sm.spec.Name, keys)
		}
	}
	allowed := map[string]bool{}
	for _, name := range allowedRefusals {
		allowed[name] = true
	}
	for _, r := range refused {
		if name, _, _ := strings.Cut(r, " "); !allowed[name] {
			t.Errorf("GETKEYS refused %s: the sample is wrong, or the command needs a sample in getKeysSamples", r)
			continue
		}
		t.Logf("GETKEYS refused: %s", r)
	}
	t.Logf("%s: %d commands checked against GETKEYS, %d keyed ones refused by GETKEYS, %d keyless", v, checked, len(refused), keyless)
	if checked == 0 {
		t.Error("no command was checked")
	}
}

// allowedRefusals are the keyed commands COMMAND GETKEYS does not report
// keys for: their keys are channels (flagged not-key), which a cluster
// client still routes by.
var allowedRefusals = []string{"spublish", "ssubscribe", "sunsubscribe"}

// keyFuzzArgs builds an argument list for FuzzFirstKey: the name, then
// the words of rest (split on spaces, at most 16), each given the type
// two bits of types pick: string, []byte, its length as an int, or (for
// the fourth) nil, a *string or a value go-redis cannot send, by turns.
func keyFuzzArgs(name, rest string, types uint64) []any {
	args := []any{name}
	if types&1 != 0 {
		args[0] = []byte(name)
	}
	types >>= 1
	if rest == "" {
		return args
	}
	for i, w := range strings.SplitN(rest, " ", 16) {
		switch types >> (2 * i) & 3 {
		case 0:
			args = append(args, w)
		case 1:
			args = append(args, []byte(w))
		case 2:
			args = append(args, len(w)-1)
		default:
			odd := []any{nil, &w, struct{}{}}
			args = append(args, odd[i%len(odd)])
		}
	}
	return args
}

// FuzzFirstKey feeds arbitrary argument lists to FirstKey: it must never
// panic, must answer -1 or an index of args, whatever the letter case of
// the name, and the Classifier and the package-level function must agree.
func FuzzFirstKey(f *testing.F) {
	f.Add("GET", "k", uint64(0))
	f.Add("EVAL", "return 1", uint64(0))
	f.Add("eval", "return 1 k", uint64(0b10000))
	f.Add("XREAD", "COUNT 1 STREAMS s 0", uint64(0))
	f.Add("xreadgroup", "GROUP g c STREAMS s >", uint64(0b101010))
	f.Add("object", "ENCODING k", uint64(1))
	f.Add("zunion", "1 k", uint64(0))
	f.Add("MIGRATE", "h 1  0 0 AUTH2 u p KEYS a b", uint64(0))
	f.Add("bzmpop", "0 2 a b MIN", uint64(0))
	f.Add("", "", uint64(0))
	c := New()
	f.Fuzz(func(t *testing.T, name, rest string, types uint64) {
		args := keyFuzzArgs(name, rest, types)
		got := c.FirstKey(args)
		if got != -1 && (got < 1 || got >= len(args)) {
			t.Fatalf("FirstKey(%q) = %d, not -1 or an index of args", args, got)
		}
		if pkg := FirstKey(args); pkg != got {
			t.Fatalf("FirstKey(%q): Classifier %d, package %d", args, got, pkg)
		}
		if s, ok := args[0].(string); ok && isASCII(s) {
			upper := append([]any{strings.ToUpper(s)}, args[1:]...)
			if u := c.FirstKey(upper); u != got {
				t.Fatalf("FirstKey(%q) = %d, FirstKey(%q) = %d", args, got, upper, u)
			}
		}
	})
}

type binaryKey struct {
	b   []byte
	err error
}

func (k binaryKey) MarshalBinary() ([]byte, error) { return k.b, k.err }

// keyStringCases are arguments of every type go-redis's writer accepts,
// and some it refuses.
func keyStringCases() []struct {
	arg  any
	want string
	ok   bool
} {
	s, i, i64, u, f, b := "str", -7, int64(math.MinInt64), uint64(math.MaxUint64), 0.1, true
	i8, i16, i32 := int8(-8), int16(-16), int32(-32)
	u0, u8, u16, u32, up := uint(3), uint8(8), uint16(16), uint32(32), uintptr(9)
	f32 := float32(1.5)
	tm := time.Date(2024, 5, 6, 7, 8, 9, 123456789, time.UTC)
	d := 1500 * time.Millisecond
	var nilInt *int
	var nilString *string
	var nilTime *time.Time
	return []struct {
		arg  any
		want string
		ok   bool
	}{
		{"user:{42}:name", "user:{42}:name", true},
		{"", "", true},
		{[]byte("bytes\x00\xff"), "bytes\x00\xff", true},
		{&s, "str", true},
		{nilString, "", true},
		{nil, "", true},
		{42, "42", true},
		{&i, "-7", true},
		{nilInt, "0", true},
		{i8, "-8", true},
		{&i8, "-8", true},
		{i16, "-16", true},
		{&i16, "-16", true},
		{i32, "-32", true},
		{&i32, "-32", true},
		{i64, "-9223372036854775808", true},
		{&i64, "-9223372036854775808", true},
		{u0, "3", true},
		{&u0, "3", true},
		{u8, "8", true},
		{&u8, "8", true},
		{u16, "16", true},
		{&u16, "16", true},
		{u32, "32", true},
		{&u32, "32", true},
		{u, "18446744073709551615", true},
		{&u, "18446744073709551615", true},
		{up, "9", true},
		{&up, "9", true},
		{f, "0.1", true},
		{&f, "0.1", true},
		{f32, "1.5", true},
		{&f32, "1.5", true},
		{1e21, "1000000000000000000000", true},
		{math.MaxFloat64, strconv.FormatFloat(math.MaxFloat64, 'f', -1, 64), true}, // longer than the stack buffer
		{math.Copysign(0, -1), "-0", true},
		{b, "1", true},
		{&b, "1", true},
		{false, "0", true},
		{tm, "2024-05-06T07:08:09.123456789Z", true},
		{&tm, "2024-05-06T07:08:09.123456789Z", true},
		{nilTime, "0001-01-01T00:00:00Z", true},
		{d, "1500000000", true},
		{&d, "1500000000", true},
		{net.IPv4(10, 0, 0, 1).To4(), "\x0a\x00\x00\x01", true},
		{binaryKey{b: []byte("bin")}, "bin", true},
		{binaryKey{err: errors.New("no")}, "", false},
		{struct{}{}, "", false},
		{[]string{"a"}, "", false},
		{map[string]int{}, "", false},
	}
}

func TestKeyString(t *testing.T) {
	for _, tt := range keyStringCases() {
		got, ok := KeyString(tt.arg)
		if got != tt.want || ok != tt.ok {
			t.Errorf("KeyString(%T %v) = %q, %v; want %q, %v", tt.arg, tt.arg, got, ok, tt.want, tt.ok)
		}
	}
	// A []byte key is copied: the caller may reuse its buffer.
	buf := []byte("abc")
	got, _ := KeyString(buf)
	buf[0] = 'x'
	if got != "abc" {
		t.Errorf("KeyString kept a view of the []byte: %q", got)
	}
}

// TestKeyStringIsWhatGoRedisSends sends every argument KeyString reads
// through go-redis (ECHO, one pipeline) and checks that the server
// received the bytes KeyString returns; the ones KeyString refuses,
// go-redis refuses to send.
func TestKeyStringIsWhatGoRedisSends(t *testing.T) {
	ctx := testContext(t)
	rdb := lab.New(t, lab.Standalone()).Node(0).NewClient()
	defer rdb.Close()
	// A command go-redis cannot write fails the whole pipeline it is in,
	// so those are sent one by one, the rest in one pipeline.
	cases := keyStringCases()
	cmds := make([]*redis.StringCmd, len(cases))
	pipe := rdb.Pipeline()
	for i, tt := range cases {
		cmds[i] = redis.NewStringCmd(ctx, "echo", tt.arg)
		if tt.ok {
			_ = pipe.Process(ctx, cmds[i])
		} else {
			_ = rdb.Process(ctx, cmds[i])
		}
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("ECHO pipeline: %v", err)
	}
	for i, tt := range cases {
		sent, err := cmds[i].Result()
		want, ok := KeyString(tt.arg)
		switch {
		case ok && err != nil:
			t.Errorf("%T %v: go-redis: %v; KeyString %q", tt.arg, tt.arg, err, want)
		case !ok && err == nil:
			t.Errorf("%T %v: go-redis sent %q; KeyString refuses it", tt.arg, tt.arg, sent)
		case ok && sent != want:
			t.Errorf("%T %v: go-redis sent %q, KeyString %q", tt.arg, tt.arg, sent, want)
		}
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("PING after the refused arguments: %v", err)
	}
}

// TestFirstKeyDoesNotAllocate checks the promise FirstKey makes, for the
// commands a cluster client routes most, given as go-redis builds them.
func TestFirstKeyDoesNotAllocate(t *testing.T) {
	c := New()
	for _, args := range firstKeyBenchCases {
		if n := testing.AllocsPerRun(100, func() { c.FirstKey(args.args) }); n != 0 {
			t.Errorf("FirstKey(%q): %v allocations", args.args, n)
		}
		if n := testing.AllocsPerRun(100, func() { FirstKey(args.args) }); n != 0 {
			t.Errorf("package FirstKey(%q): %v allocations", args.args, n)
		}
	}
}

var firstKeyBenchCases = []struct {
	name string
	args []any
}{
	{"GET", redis.NewStringCmd(context.Background(), "get", "user:{42}:name").Args()},
	{"SET", redis.NewStatusCmd(context.Background(), "set", "user:{42}:name", "Ada").Args()},
	{"EVAL", redis.NewCmd(context.Background(), "eval", "return redis.call('GET', KEYS[1])", 1, "k").Args()},
	{"EVAL_text_numkeys", []any{"EVAL", "return 1", "1", "k"}},
	{"OBJECT_ENCODING", []any{"OBJECT", "ENCODING", "k"}},
	{"XREAD", []any{"xread", "count", 10, "block", 100, "streams", "s", "0"}},
	{"ZUNION", []any{"ZUNION", 2, "a", "b"}},
}

// BenchmarkFirstKey measures FirstKey next to what go-redis's
// ClusterClient does for a raw command's first key (command.go,
// cmdFirstKeyPosWithInfo, unexported, so reproduced here for the cases
// benchmarked: cmd.Name(), which lower-cases into a new string, EVAL's
// numkeys read with its stringArg, else the position from the COMMAND info
// it read), on the same commands and the same lab server's COMMAND reply.
//
//	go test -run '^$' -bench FirstKey -benchmem ./classify/
func BenchmarkFirstKey(b *testing.B) {
	ctx := context.Background()
	info := labCommandInfo(b)
	goRedisFirstKey := func(cmd redis.Cmder) int {
		name := cmd.Name()
		switch name {
		case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
			if args := cmd.Args(); len(args) > 2 && fmt.Sprint(args[2]) != "0" {
				return 3
			}
			return 0
		}
		if ci := info[name]; ci != nil {
			return int(ci.FirstKeyPos)
		}
		return 0
	}
	c := New()
	for _, tc := range firstKeyBenchCases {
		cmd := redis.NewCmd(ctx, tc.args...)
		b.Run(tc.name+"/rediskit", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				c.FirstKey(cmd.Args())
			}
		})
		b.Run(tc.name+"/go-redis", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				goRedisFirstKey(cmd)
			}
		})
	}
	b.Run("KeyString/string", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_, _ = KeyString("user:{42}:name")
		}
	})
	b.Run("KeyString/int64", func(b *testing.B) {
		var id any = int64(1234567890)
		b.ReportAllocs()
		for b.Loop() {
			_, _ = KeyString(id)
		}
	})
}

// keyIndexesPartial are the commands whose keys KeyIndexes finds only in
// part: a destination named by an option (STORE, STOREDIST), found by
// neither the legacy key range nor a rule of this package.
var keyIndexesPartial = map[string]bool{"sort": true, "georadius": true, "georadiusbymember": true}

// TestRoute: Route answers what ReadOnlyArgs and FirstKey answer, for every
// command and subcommand of the built-in table, with keys, a key count
// and a STREAMS keyword where its arguments take them.
func TestRoute(t *testing.T) {
	c := New()
	check := func(args []any) {
		t.Helper()
		ro, first := c.Route(args)
		if ro != c.ReadOnlyArgs(args...) || first != c.FirstKey(args) {
			t.Errorf("%v: Route = %v, %d; ReadOnlyArgs = %v, FirstKey = %d", args, ro, first, c.ReadOnlyArgs(args...), c.FirstKey(args))
		}
	}
	for _, s := range builtinSpecs {
		names := [][]any{{s.Name}}
		for _, sub := range s.Subcommands {
			_, name, _ := strings.Cut(sub.Name, "|")
			names = append(names, []any{s.Name, name})
		}
		for _, n := range names {
			check(n)
			check(append(slices.Clone(n), "k1", "k2", "v"))
			check(append(slices.Clone(n), "2", "k1", "k2", "v"))
			check(append(slices.Clone(n), "COUNT", "1", "STREAMS", "s1", "s2", "0", "0"))
		}
	}
	check(nil)
	check([]any{"EVAL", "#!lua flags=no-writes\nreturn 1", 1, "k"})
}
