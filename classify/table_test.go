package classify

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify/internal/cmdinfo"
	"github.com/rediskit/rediskit/lab"
)

// builtinSourceFor returns the built-in table's source for the server v,
// and skips the test when the table was read from another major.minor of
// it (or not from that server at all).
func builtinSourceFor(t *testing.T, v lab.ServerVersion) cmdinfo.Source {
	t.Helper()
	for _, s := range builtinSources {
		if s.Server != v.Name {
			continue
		}
		if majorMinor(s.Version) != majorMinor(v.Version) {
			t.Skipf("the built-in table was generated from %s; this lab runs %s: regenerate it with go generate ./classify/", s.Label(), v)
		}
		return s
	}
	t.Skipf("the built-in table was generated from %s, not from %s", builtinLabel(), v)
	return cmdinfo.Source{}
}

// builtinView is the built-in table as one server described it when the
// table was generated: every command and subcommand of the merged table,
// with that server's own variant where the servers differ (Known false for
// a command that server lacks).
func builtinView(server string) map[string]cmdinfo.Variant {
	differ := map[string]cmdinfo.Variant{}
	for _, d := range builtinDifferences {
		for _, v := range d.Variants {
			if v.Server == server {
				differ[d.Name] = v
			}
		}
	}
	view := map[string]cmdinfo.Variant{}
	for _, s := range allSpecs(builtinSpecs) {
		if v, ok := differ[s.Name]; ok {
			view[s.Name] = v
			continue
		}
		view[s.Name] = cmdinfo.Variant{Server: server, Known: true, Arity: s.Arity, Flags: s.Flags, Keys: s.Keys}
	}
	return view
}

// TestGeneratedTableMatchesServer checks the committed table_gen.go against
// the live server's COMMAND reply (Redis or Valkey, whichever the lab
// runs): the table, read as that server's view of it (builtinView), has
// the same commands, subcommands, arities, flags and key positions. When both servers the
// table came from are installed at the versions it records, it also checks
// that the generator would write the same bytes today.
func TestGeneratedTableMatchesServer(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Standalone())
	v := l.ServerVersion()
	src := builtinSourceFor(t, v)
	t.Logf("server: %s; table: %s", v, builtinLabel())

	live := map[string]cmdinfo.Spec{}
	for _, s := range allSpecs(serverSpecs(ctx, t, l.Node(0))) {
		live[s.Name] = s
	}
	view := builtinView(v.Name)
	for name, s := range live {
		got := view[name]
		switch {
		case !got.Known:
			t.Errorf("%s: on %s, missing from the table's %s view", name, v, v.Name)
		case got.Flags != s.Flags:
			t.Errorf("%s: table flags for %s %q, server %q", name, v.Name, got.Flags, s.Flags)
		case got.Arity != s.Arity:
			t.Errorf("%s: table arity for %s %d, server %d", name, v.Name, got.Arity, s.Arity)
		case got.Keys != s.Keys:
			t.Errorf("%s: table key positions for %s %s, server %s", name, v.Name, got.Keys, s.Keys)
		}
	}
	for name, got := range view {
		if _, ok := live[name]; got.Known && !ok {
			t.Errorf("%s: the table says %s has it; %s does not know it", name, v.Name, v)
		}
	}

	if v.Version != src.Version {
		return
	}
	var sources []cmdinfo.Source
	for _, s := range builtinSources {
		kind, err := lab.ParseServerKind(s.Server)
		if err != nil {
			t.Fatal(err)
		}
		sl, err := lab.Start(ctx, lab.Config{Server: kind, Logger: l.Config().Logger})
		if err != nil {
			t.Logf("not comparing bytes: %v", err)
			return
		}
		sv := sl.ServerVersion()
		s.Specs = serverSpecs(ctx, t, sl.Node(0))
		if err := sl.Close(); err != nil {
			t.Fatal(err)
		}
		if sv.Version != s.Version {
			t.Logf("not comparing bytes: the table records %s, this machine has %s", s.Label(), sv)
			return
		}
		sources = append(sources, s)
	}
	specs, diffs, err := cmdinfo.Merge(sources)
	if err != nil {
		t.Fatal(err)
	}
	want, err := cmdinfo.RenderMerged(sources, specs, diffs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("table_gen.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("table_gen.go is not what the generator writes for %s: run go generate ./classify/", builtinLabel())
	}
}

// TestEveryServerCommand classifies every command and subcommand a live
// server reports and checks the decision against the server's own flags:
// nothing Redis does not flag readonly is ever sent to a replica, and the
// only readonly-flagged commands kept on the master are the documented
// overrides. A classifier refreshed from the server agrees with the
// built-in one on every command, in any letter case.
func TestEveryServerCommand(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Standalone())
	v := l.ServerVersion()
	builtinSourceFor(t, v)
	specs := serverSpecs(ctx, t, l.Node(0))
	rdb := l.Node(0).NewClient()
	defer rdb.Close()
	refreshed := New()
	if err := refreshed.Refresh(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	builtin := New()

	differs := map[string]bool{}
	for _, d := range builtinDifferences {
		differs[d.Name] = true
	}
	overrides := map[string]Reason{"lolwut": ReasonServer, "memory|usage": ReasonServer, "xread": ReasonBlocking}
	var readOnly, master int
	for _, s := range specs {
		for _, spec := range append([]cmdinfo.Spec{s}, s.Subcommands...) {
			t.Run(spec.Name, func(t *testing.T) {
				args := argsFor(spec.Name)
				d := builtin.Explain(args...)
				if d.Command != spec.Name {
					t.Errorf("Explain(%q).Command = %q, want %q", args, d.Command, spec.Name)
				}
				if d.ReadOnly {
					readOnly++
					if spec.Flags&cmdinfo.ReadOnly == 0 {
						t.Errorf("%s is read-only (%s) but the server flags it %q", spec.Name, d, spec.Flags)
					}
					if bad := spec.Flags & (cmdinfo.Write | cmdinfo.Blocking | cmdinfo.PubSub | cmdinfo.Admin); bad != 0 {
						t.Errorf("%s is read-only but the server flags it %q", spec.Name, bad)
					}
				} else {
					master++
					if spec.Flags&cmdinfo.ReadOnly != 0 && !strings.HasSuffix(spec.Name, "_ro") {
						if want, ok := overrides[spec.Name]; !ok || d.Reason != want {
							t.Errorf("%s: server flags it readonly, classified %s; only %v are documented overrides", spec.Name, d, overrides)
						}
					}
				}
				// Where the servers differ, the built-in table has the
				// flags safe on both, so its reason may differ from this
				// server's own; where it goes must not, unless the
				// other server forbids a replica.
				if got := refreshed.Explain(args...); got != d {
					if !differs[spec.Name] || (d.ReadOnly && !got.ReadOnly) {
						t.Errorf("refreshed classifier: %s, built-in: %s", got, d)
					} else {
						t.Logf("%s: %s here, built-in %s (the servers differ)", spec.Name, got, d)
					}
				}
				upper := make([]any, len(args))
				for i, a := range args {
					upper[i] = strings.ToUpper(a.(string))
				}
				if got := builtin.Explain(upper...); got != d {
					t.Errorf("Explain(%q) = %s, Explain(%q) = %s", upper, got, args, d)
				}
				if got := builtin.ReadOnlyArgs(args...); got != d.ReadOnly {
					t.Errorf("ReadOnlyArgs = %v, Explain says %s", got, d)
				}
			})
		}
	}
	t.Logf("%d commands and subcommands: %d read-only, %d master", readOnly+master, readOnly, master)
}

func TestDecisions(t *testing.T) {
	name := "get"
	var nilName *string
	tests := []struct {
		args    []any
		want    bool
		reason  Reason
		command string
	}{
		{[]any{"GET", "k"}, true, ReasonReadOnly, "get"},
		{[]any{"get", "k"}, true, ReasonReadOnly, "get"},
		{[]any{"GeT", "k"}, true, ReasonReadOnly, "get"},
		{[]any{[]byte("GET"), "k"}, true, ReasonReadOnly, "get"},
		{[]any{&name, "k"}, true, ReasonReadOnly, "get"},
		{[]any{"MGET", "a", "b"}, true, ReasonReadOnly, "mget"},
		{[]any{"HGETALL", "h"}, true, ReasonReadOnly, "hgetall"},
		{[]any{"ZRANGE", "z", 0, -1}, true, ReasonReadOnly, "zrange"},
		{[]any{"KEYS", "*"}, true, ReasonReadOnly, "keys"},
		{[]any{"SCAN", 0}, true, ReasonReadOnly, "scan"},
		{[]any{"DBSIZE"}, true, ReasonReadOnly, "dbsize"},
		{[]any{"RANDOMKEY"}, true, ReasonReadOnly, "randomkey"},
		{[]any{"TOUCH", "k"}, true, ReasonReadOnly, "touch"},
		{[]any{"SORT_RO", "l"}, true, ReasonReadOnly, "sort_ro"},
		{[]any{"GEORADIUS_RO", "g", 0, 0, 1, "km"}, true, ReasonReadOnly, "georadius_ro"},
		{[]any{"BITFIELD_RO", "b", "GET", "u8", 0}, true, ReasonReadOnly, "bitfield_ro"},

		{[]any{"SET", "k", "v"}, false, ReasonWrite, "set"},
		{[]any{"set", "k", "v"}, false, ReasonWrite, "set"},
		{[]any{"INCR", "k"}, false, ReasonWrite, "incr"},
		{[]any{"SORT", "l"}, false, ReasonWrite, "sort"},
		{[]any{"GEORADIUS", "g", 0, 0, 1, "km"}, false, ReasonWrite, "georadius"},
		{[]any{"FLUSHALL"}, false, ReasonWrite, "flushall"},
		{[]any{"SWAPDB", 0, 1}, false, ReasonWrite, "swapdb"},
		{[]any{"BLPOP", "l", 0}, false, ReasonWrite, "blpop"},
		{[]any{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "s", ">"}, false, ReasonWrite, "xreadgroup"},

		// Subcommands.
		{[]any{"OBJECT", "ENCODING", "k"}, true, ReasonReadOnly, "object|encoding"},
		{[]any{"ObJeCt", []byte("eNcOdInG"), "k"}, true, ReasonReadOnly, "object|encoding"},
		{[]any{"object", "freq", "k"}, true, ReasonReadOnly, "object|freq"},
		{[]any{"OBJECT", "HELP"}, false, ReasonNotReadOnly, "object|help"},
		{[]any{"OBJECT"}, false, ReasonMissingSubcommand, "object"},
		{[]any{"OBJECT", "NOPE", "k"}, false, ReasonUnknownSubcommand, "object|nope"},
		{[]any{"OBJECT", 5}, false, ReasonUnknownSubcommand, "object"},
		{[]any{"XINFO", "STREAM", "s"}, true, ReasonReadOnly, "xinfo|stream"},
		{[]any{"XINFO", "GROUPS", "s"}, true, ReasonReadOnly, "xinfo|groups"},
		{[]any{"XGROUP", "CREATE", "s", "g", "$"}, false, ReasonWrite, "xgroup|create"},
		{[]any{"PUBSUB", "CHANNELS"}, false, ReasonPubSub, "pubsub|channels"},
		{[]any{"FUNCTION", "LIST"}, false, ReasonNotReadOnly, "function|list"},
		{[]any{"FUNCTION", "LOAD", "x"}, false, ReasonWrite, "function|load"},
		{[]any{"SCRIPT", "LOAD", "return 1"}, false, ReasonNotReadOnly, "script|load"},

		// Server commands, whatever Redis's flags say.
		{[]any{"INFO"}, false, ReasonServer, "info"},
		{[]any{"info", "replication"}, false, ReasonServer, "info"},
		{[]any{"ROLE"}, false, ReasonServer, "role"},
		{[]any{"CONFIG", "GET", "maxmemory"}, false, ReasonServer, "config|get"},
		{[]any{"CONFIG"}, false, ReasonServer, "config"},
		{[]any{"CONFIG", "NOPE"}, false, ReasonUnknownSubcommand, "config|nope"},
		{[]any{"CLIENT", "LIST"}, false, ReasonServer, "client|list"},
		{[]any{"CLIENT", "SETNAME", "x"}, false, ReasonServer, "client|setname"},
		{[]any{"SLOWLOG", "GET"}, false, ReasonServer, "slowlog|get"},
		{[]any{"LATENCY", "LATEST"}, false, ReasonServer, "latency|latest"},
		{[]any{"MEMORY", "USAGE", "k"}, false, ReasonServer, "memory|usage"},
		{[]any{"MEMORY", "STATS"}, false, ReasonServer, "memory|stats"},
		{[]any{"DEBUG", "SLEEP", 0}, false, ReasonServer, "debug"},
		{[]any{"MONITOR"}, false, ReasonServer, "monitor"},
		{[]any{"ACL", "WHOAMI"}, false, ReasonServer, "acl|whoami"},
		{[]any{"COMMAND", "COUNT"}, false, ReasonServer, "command|count"},
		{[]any{"MODULE", "LIST"}, false, ReasonServer, "module|list"},
		{[]any{"CLUSTER", "INFO"}, false, ReasonServer, "cluster|info"},
		{[]any{"LOLWUT"}, false, ReasonServer, "lolwut"},
		{[]any{"LASTSAVE"}, false, ReasonServer, "lastsave"},
		{[]any{"SAVE"}, false, ReasonServer, "save"},
		{[]any{"BGSAVE"}, false, ReasonServer, "bgsave"},
		{[]any{"SHUTDOWN"}, false, ReasonServer, "shutdown"},
		{[]any{"REPLICAOF", "NO", "ONE"}, false, ReasonServer, "replicaof"},
		{[]any{"FAILOVER"}, false, ReasonServer, "failover"},
		{[]any{"PFSELFTEST"}, false, ReasonServer, "pfselftest"},
		{[]any{"PFDEBUG", "GETREG", "h"}, false, ReasonServer, "pfdebug"},

		// Transactions and SELECT.
		{[]any{"MULTI"}, false, ReasonTransaction, "multi"},
		{[]any{"EXEC"}, false, ReasonTransaction, "exec"},
		{[]any{"DISCARD"}, false, ReasonTransaction, "discard"},
		{[]any{"WATCH", "k"}, false, ReasonTransaction, "watch"},
		{[]any{"UNWATCH"}, false, ReasonTransaction, "unwatch"},
		{[]any{"SELECT", 1}, false, ReasonSelect, "select"},

		// Scripts.
		{[]any{"EVAL", "return 1", 0}, false, ReasonScriptMayWrite, "eval"},
		{[]any{"EVAL"}, false, ReasonScriptMayWrite, "eval"},
		{[]any{"EVAL", "#!lua flags=no-writes\nreturn 1", 0}, true, ReasonScriptNoWrites, "eval"},
		{[]any{"eval", []byte("#!lua flags=no-writes\nreturn 1"), 0}, true, ReasonScriptNoWrites, "eval"},
		{[]any{"EVAL", "#!lua\nreturn 1", 0}, false, ReasonScriptMayWrite, "eval"},
		{[]any{"EVAL", 42, 0}, false, ReasonScriptMayWrite, "eval"},
		{[]any{"EVALSHA", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", 0}, false, ReasonScriptUnseen, "evalsha"},
		{[]any{"FCALL", "f", 0}, false, ReasonScriptUnseen, "fcall"},
		{[]any{"EVAL_RO", "return 1", 0}, true, ReasonReadOnlyScript, "eval_ro"},
		{[]any{"EVALSHA_RO", "e0e1f9fabfc9d4800c877a703b823ac0578ff8db", 0}, true, ReasonReadOnlyScript, "evalsha_ro"},
		{[]any{"FCALL_RO", "f", 0}, true, ReasonReadOnlyScript, "fcall_ro"},

		// Blocking and pub/sub.
		{[]any{"XREAD", "STREAMS", "s", "0"}, false, ReasonBlocking, "xread"},
		{[]any{"XREAD", "BLOCK", 0, "STREAMS", "s", "$"}, false, ReasonBlocking, "xread"},
		{[]any{"SUBSCRIBE", "c"}, false, ReasonPubSub, "subscribe"},
		{[]any{"PSUBSCRIBE", "c*"}, false, ReasonPubSub, "psubscribe"},
		{[]any{"PUBLISH", "c", "m"}, false, ReasonPubSub, "publish"},
		{[]any{"SPUBLISH", "c", "m"}, false, ReasonPubSub, "spublish"},

		// Neither readonly nor write in Redis's flags.
		{[]any{"PING"}, false, ReasonNotReadOnly, "ping"},
		{[]any{"ECHO", "x"}, false, ReasonNotReadOnly, "echo"},
		{[]any{"TIME"}, false, ReasonNotReadOnly, "time"},
		{[]any{"HELLO", 3}, false, ReasonNotReadOnly, "hello"},
		{[]any{"AUTH", "pw"}, false, ReasonNotReadOnly, "auth"},
		// Valkey flags WAIT blocking, Redis 7.0 does not: the merged table
		// keeps the flag (see builtinDifferences).
		{[]any{"WAIT", 0, 0}, false, ReasonBlocking, "wait"},

		// Not commands.
		{nil, false, ReasonEmpty, ""},
		{[]any{}, false, ReasonEmpty, ""},
		{[]any{"NOSUCHCMD", "k"}, false, ReasonUnknown, "nosuchcmd"},
		{[]any{"redis+get"}, false, ReasonUnknown, "redis+get"},
		{[]any{"get\x00"}, false, ReasonUnknown, "get\x00"},
		{[]any{""}, false, ReasonUnknown, ""},
		{[]any{strings.Repeat("g", 200)}, false, ReasonUnknown, strings.Repeat("g", 200)},
		{[]any{"object|encoding", "k"}, false, ReasonUnknown, "object|encoding"},
		{[]any{42}, false, ReasonUnknown, ""},
		{[]any{nilName}, false, ReasonUnknown, ""},
		{[]any{nil}, false, ReasonUnknown, ""},
	}
	c := New()
	ctx := context.Background()
	for _, tt := range tests {
		want := Decision{ReadOnly: tt.want, Reason: tt.reason, Command: tt.command}
		if got := c.Explain(tt.args...); got != want {
			t.Errorf("Explain(%q) = %s (%#v), want %s", tt.args, got, got, want)
		}
		if got := Explain(tt.args...); got != want {
			t.Errorf("package Explain(%q) = %s, want %s", tt.args, got, want)
		}
		if got := c.ReadOnlyArgs(tt.args...); got != tt.want {
			t.Errorf("ReadOnlyArgs(%q) = %v, want %v", tt.args, got, tt.want)
		}
		if got := ReadOnlyArgs(tt.args...); got != tt.want {
			t.Errorf("package ReadOnlyArgs(%q) = %v, want %v", tt.args, got, tt.want)
		}
		cmd := redis.NewCmd(ctx, tt.args...)
		if got := c.ReadOnly(cmd); got != tt.want {
			t.Errorf("ReadOnly(NewCmd(%q)) = %v, want %v", tt.args, got, tt.want)
		}
		if got := ReadOnly(cmd); got != tt.want {
			t.Errorf("package ReadOnly(NewCmd(%q)) = %v, want %v", tt.args, got, tt.want)
		}
		if got := c.ExplainCmd(cmd); got != want {
			t.Errorf("ExplainCmd(%q) = %s, want %s", tt.args, got, want)
		}
	}
}

// TestTypedCommands classifies commands built by go-redis's own typed
// methods, as the Sentinel client and hooks will see them. The commands are
// never sent.
func TestTypedCommands(t *testing.T) {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer rdb.Close()
	pipe := rdb.Pipeline() // queues without sending
	tests := []struct {
		cmd  redis.Cmder
		want bool
	}{
		{pipe.Get(ctx, "k"), true},
		{pipe.MGet(ctx, "a", "b"), true},
		{pipe.HGetAll(ctx, "h"), true},
		{pipe.ZRangeWithScores(ctx, "z", 0, -1), true},
		{pipe.ObjectEncoding(ctx, "k"), true},
		{pipe.XInfoStream(ctx, "s"), true},
		{pipe.MemoryUsage(ctx, "k"), false},
		{pipe.Set(ctx, "k", "v", 0), false},
		{pipe.Incr(ctx, "k"), false},
		{pipe.Info(ctx), false},
		{pipe.ConfigGet(ctx, "maxmemory"), false},
		{pipe.ClientList(ctx), false},
		{pipe.Ping(ctx), false},
		{pipe.BLPop(ctx, 0, "l"), false},
		{pipe.XRead(ctx, &redis.XReadArgs{Streams: []string{"s", "0"}}), false},
		{pipe.Publish(ctx, "c", "m"), false},
		{pipe.Eval(ctx, "return 1", nil), false},
		{pipe.Eval(ctx, "#!lua flags=no-writes\nreturn 1", nil), true},
		{pipe.EvalRO(ctx, "return 1", nil), true},
		{pipe.EvalSha(ctx, "abc", nil), false},
		{pipe.EvalShaRO(ctx, "abc", nil), true},
		{pipe.FCall(ctx, "f", nil), false},
		{pipe.FCallRo(ctx, "f", nil), true},
		{pipe.SortRO(ctx, "l", &redis.Sort{}), true},
		{pipe.Sort(ctx, "l", &redis.Sort{}), false},
	}
	for _, tt := range tests {
		if got := ReadOnly(tt.cmd); got != tt.want {
			t.Errorf("ReadOnly(%v) = %v (%s), want %v", tt.cmd.Args(), got, New().ExplainCmd(tt.cmd), tt.want)
		}
	}
}

func TestZeroAndNilClassifierUseBuiltinTable(t *testing.T) {
	var zero Classifier
	var nilC *Classifier
	for _, c := range []*Classifier{&zero, nilC} {
		if !c.ReadOnlyArgs("GET", "k") || c.ReadOnlyArgs("SET", "k", "v") {
			t.Errorf("%p: GET/SET misclassified", c)
		}
		if got, want := c.Source(), New().Source(); got != want {
			t.Errorf("Source() = %q, want %q", got, want)
		}
	}
	if c := New(); c.ReadOnly(nil) {
		t.Error("ReadOnly(nil) = true")
	}
	if got := New().ExplainCmd(nil); got.Reason != ReasonEmpty {
		t.Errorf("ExplainCmd(nil) = %s", got)
	}
	if !strings.Contains(New().Source(), builtinLabel()) {
		t.Errorf("Source() = %q, want it to name %s", New().Source(), builtinLabel())
	}
}

func TestReasonAndDecisionStrings(t *testing.T) {
	for r := ReasonUnknown; r <= ReasonScriptNoWrites; r++ {
		if s := r.String(); s == "" || strings.HasPrefix(s, "Reason(") {
			t.Errorf("Reason %d has no text", r)
		}
	}
	if got := Reason(200).String(); got != "Reason(200)" {
		t.Errorf("Reason(200).String() = %q", got)
	}
	tests := []struct {
		d    Decision
		want string
	}{
		{Decision{ReadOnly: true, Reason: ReasonReadOnly, Command: "object|encoding"}, "object|encoding: read-only command (replica)"},
		{Decision{Reason: ReasonWrite, Command: "set"}, "set: write command (master)"},
		{Decision{Reason: ReasonEmpty}, "empty command (master)"},
	}
	for _, tt := range tests {
		if got := tt.d.String(); got != tt.want {
			t.Errorf("%#v.String() = %q, want %q", tt.d, got, tt.want)
		}
	}
}

func TestBlocking(t *testing.T) {
	ctx := context.Background()
	c := New()
	tests := []struct {
		cmd  redis.Cmder
		want bool
	}{
		{redis.NewStringSliceCmd(ctx, "blpop", "q", 0), true},
		{redis.NewStringCmd(ctx, "BLMOVE", "a", "b", "LEFT", "RIGHT", 0), true},
		{redis.NewZWithKeyCmd(ctx, "bzpopmin", "z", 1), true},
		{redis.NewXStreamSliceCmd(ctx, "xread", "count", 1, "streams", "s", "0"), false},
		{redis.NewXStreamSliceCmd(ctx, "xread", "block", 0, "streams", "s", "$"), true},
		{redis.NewXStreamSliceCmd(ctx, "XREADGROUP", "GROUP", "g", "c", "BLOCK", 100, "STREAMS", "s", ">"), true},
		{redis.NewXStreamSliceCmd(ctx, "xreadgroup", "group", "g", "c", "streams", "s", ">"), false},
		{redis.NewStringCmd(ctx, "get", "k"), false},
		{redis.NewCmd(ctx, "nosuchcommand"), false},
		{nil, false},
	}
	for _, tt := range tests {
		if got := c.Blocking(tt.cmd); got != tt.want {
			t.Errorf("Blocking(%v) = %v, want %v", tt.cmd, got, tt.want)
		}
	}
	get := redis.NewStringCmd(ctx, "blpop", "q", 0)
	if n := testing.AllocsPerRun(100, func() { c.Blocking(get) }); n != 0 {
		t.Errorf("Blocking allocates %v times", n)
	}
}
