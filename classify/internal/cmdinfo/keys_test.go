package cmdinfo

import (
	"reflect"
	"strings"
	"testing"
)

func TestMergeKeys(t *testing.T) {
	known := func(first, last, step int) Variant {
		return Variant{Known: true, Keys: Keys{First: first, Last: last, Step: step}}
	}
	tests := []struct {
		name     string
		variants []Variant
		want     Keys
	}{
		{"alike", []Variant{known(1, 1, 1), known(1, 1, 1)}, Keys{1, 1, 1}},
		{"no keys on both", []Variant{known(0, 0, 0), known(0, 0, 0)}, Keys{}},
		{"a key on the second only", []Variant{known(0, 0, 0), known(1, -1, 1)}, Keys{1, -1, 1}},
		{"a key on the first only", []Variant{known(2, 2, 1), known(0, 0, 0)}, Keys{2, 2, 1}},
		{"the earlier first key", []Variant{known(2, -1, 1), known(1, 1, 1)}, Keys{1, 1, 1}},
		{"same first key: the first source's range", []Variant{known(1, 1, 1), known(1, -1, 2)}, Keys{1, 1, 1}},
		{"one server lacks it", []Variant{{}, known(1, 2, 1)}, Keys{1, 2, 1}},
		{"a lacking server's zero range is not a key", []Variant{{Keys: Keys{1, 1, 1}}, known(0, 0, 0)}, Keys{}},
		{"none known", []Variant{{}, {}}, Keys{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeKeys(tt.variants); got != tt.want {
				t.Errorf("mergeKeys = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestMergeKeepsKeys checks that Merge carries key positions through,
// lists servers that report different ones as a difference, and that the
// rendered table holds them.
func TestMergeKeepsKeys(t *testing.T) {
	a := Source{Server: "redis", Version: "7.0.15", Specs: []Spec{
		{Name: "get", Arity: 2, Flags: ReadOnly, Keys: Keys{1, 1, 1}},
		{Name: "newcmd", Arity: -2, Flags: Write},
		{Name: "object", Arity: -2, Subcommands: []Spec{
			{Name: "object|encoding", Arity: 3, Flags: ReadOnly, Keys: Keys{2, 2, 1}},
		}},
	}}
	b := Source{Server: "valkey", Version: "8.0.1", Specs: []Spec{
		{Name: "get", Arity: 2, Flags: ReadOnly, Keys: Keys{1, 1, 1}},
		{Name: "newcmd", Arity: -2, Flags: Write | MovableKeys, Keys: Keys{1, 1, 1}},
		{Name: "object", Arity: -2, Subcommands: []Spec{
			{Name: "object|encoding", Arity: 3, Flags: ReadOnly, Keys: Keys{2, 2, 1}},
		}},
	}}
	specs, diffs, err := Merge([]Source{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := []Spec{
		{Name: "get", Arity: 2, Flags: ReadOnly, Keys: Keys{1, 1, 1}},
		{Name: "newcmd", Arity: -2, Flags: Write | MovableKeys, Keys: Keys{1, 1, 1}},
		{Name: "object", Arity: -2, Subcommands: []Spec{
			{Name: "object|encoding", Arity: 3, Flags: ReadOnly, Keys: Keys{2, 2, 1}},
		}},
	}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("Merge specs =\n%v\nwant\n%v", specs, want)
	}
	if len(diffs) != 1 || diffs[0].String() != "newcmd: redis arity -2 flags write, valkey arity -2 flags write,movablekeys keys 1 1 1" {
		t.Errorf("differences = %v", diffs)
	}
	src, err := RenderMerged([]Source{a, b}, specs, diffs)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`{Name: "get", Arity: 2, Flags: cmdinfo.ReadOnly, Keys: cmdinfo.Keys{First: 1, Last: 1, Step: 1}},`,
		`{Name: "object|encoding", Arity: 3, Flags: cmdinfo.ReadOnly, Keys: cmdinfo.Keys{First: 2, Last: 2, Step: 1}},`,
		`{Server: "redis", Known: true, Arity: -2, Flags: cmdinfo.Write},`,
		`{Server: "valkey", Known: true, Arity: -2, Flags: cmdinfo.Write | cmdinfo.MovableKeys, Keys: cmdinfo.Keys{First: 1, Last: 1, Step: 1}},`,
	} {
		if !strings.Contains(string(src), line) {
			t.Errorf("rendered table lacks %s", line)
		}
	}
}

// entry builds one COMMAND entry as go-redis returns it (RESP2 and RESP3
// alike: integers as int64, flags as a list of strings).
func entry(name string, arity int64, flags []any, first, last, step any, subs ...any) []any {
	e := []any{name, arity, flags, first, last, step, []any{}, []any{}, []any{}}
	if subs != nil {
		e = append(e, subs)
	}
	return e
}

func TestParseKeys(t *testing.T) {
	reply := []any{
		entry("MSET", -3, []any{"write", "denyoom"}, int64(1), int64(-1), int64(2)),
		entry("ping", -1, []any{"fast"}, int64(0), int64(0), int64(0)),
		entry("object", -2, []any{}, int64(0), int64(0), int64(0),
			entry("object|encoding", 3, []any{"readonly"}, int64(2), int64(2), int64(1))),
		entry("eval", -3, []any{"noscript", "movablekeys"}, int64(0), int64(0), int64(0)),
		nil, // COMMAND INFO of an unknown name
	}
	specs, err := Parse(reply)
	if err != nil {
		t.Fatal(err)
	}
	want := []Spec{
		{Name: "eval", Arity: -3, Flags: NoScript | MovableKeys},
		{Name: "mset", Arity: -3, Flags: Write | DenyOOM, Keys: Keys{1, -1, 2}},
		{Name: "object", Arity: -2, Subcommands: []Spec{
			{Name: "object|encoding", Arity: 3, Flags: ReadOnly, Keys: Keys{2, 2, 1}},
		}},
		{Name: "ping", Arity: -1, Flags: Fast},
	}
	if !reflect.DeepEqual(specs, want) {
		t.Errorf("Parse =\n%v\nwant\n%v", specs, want)
	}

	for name, bad := range map[string][]any{
		"first key a string": {entry("get", 2, []any{}, "1", int64(1), int64(1))},
		"last key missing":   {[]any{"get", int64(2), []any{}, int64(1)}},
		"step nil":           {entry("get", 2, []any{}, int64(1), int64(1), nil)},
		"subcommand's key":   {entry("object", -2, []any{}, int64(0), int64(0), int64(0), entry("object|freq", 3, []any{}, 2.0, int64(2), int64(1)))},
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s: Parse succeeded", name)
		} else {
			t.Logf("%s: %v", name, err)
		}
	}
}
