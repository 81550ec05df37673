package cmdinfo

import (
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestMergeFlags(t *testing.T) {
	known := func(f Flags) Variant { return Variant{Known: true, Flags: f} }
	tests := []struct {
		name     string
		variants []Variant
		want     Flags
	}{
		{"alike", []Variant{known(ReadOnly | Fast), known(ReadOnly | Fast)}, ReadOnly | Fast},
		{"read-only on one only", []Variant{known(ReadOnly), known(0)}, 0},
		{"blocking on one", []Variant{known(NoScript), known(Blocking)}, NoScript | Blocking},
		{"write on one keeps read-only off", []Variant{known(ReadOnly), known(Write)}, Write},
		{"one server lacks it", []Variant{{}, known(ReadOnly | Fast)}, ReadOnly | Fast},
		{"descriptive flags union", []Variant{known(Stale), known(Loading | Stale)}, Loading | Stale},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeFlags(tt.variants); got != tt.want {
				t.Errorf("mergeFlags = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMergeArity(t *testing.T) {
	known := func(a int) Variant { return Variant{Known: true, Arity: a} }
	tests := []struct {
		variants []Variant
		want     int
	}{
		{[]Variant{known(3), known(3)}, 3},
		{[]Variant{known(3), known(-3)}, -3},
		{[]Variant{known(-4), known(-3)}, -3},
		{[]Variant{known(4), known(2)}, -2},
		{[]Variant{{}, known(6)}, 6},
	}
	for _, tt := range tests {
		if got := mergeArity(tt.variants); got != tt.want {
			t.Errorf("mergeArity(%v) = %d, want %d", tt.variants, got, tt.want)
		}
	}
}

func TestMerge(t *testing.T) {
	redis := Source{Server: "redis", Version: "7.0.15", Specs: []Spec{
		{Name: "get", Arity: 2, Flags: ReadOnly | Fast},
		{Name: "wait", Arity: 3, Flags: NoScript},
		{Name: "client", Arity: -2, Subcommands: []Spec{{Name: "client|list", Arity: -2, Flags: Admin}}},
	}}
	valkey := Source{Server: "valkey", Version: "8.0.1", Specs: []Spec{
		{Name: "waitaof", Arity: 4, Flags: Blocking},
		{Name: "get", Arity: 2, Flags: ReadOnly | Fast},
		{Name: "wait", Arity: 3, Flags: Blocking},
		{Name: "client", Arity: -2, Subcommands: []Spec{
			{Name: "client|setinfo", Arity: 4, Flags: NoScript},
			{Name: "client|list", Arity: -2, Flags: Admin},
		}},
	}}
	specs, diffs, err := Merge([]Source{redis, valkey})
	if err != nil {
		t.Fatal(err)
	}
	wantSpecs := []Spec{
		{Name: "client", Arity: -2, Subcommands: []Spec{
			{Name: "client|list", Arity: -2, Flags: Admin},
			{Name: "client|setinfo", Arity: 4, Flags: NoScript},
		}},
		{Name: "get", Arity: 2, Flags: ReadOnly | Fast},
		{Name: "wait", Arity: 3, Flags: NoScript | Blocking},
		{Name: "waitaof", Arity: 4, Flags: Blocking},
	}
	if !reflect.DeepEqual(specs, wantSpecs) {
		t.Errorf("Merge specs =\n%v\nwant\n%v", specs, wantSpecs)
	}
	var names []string
	for _, d := range diffs {
		names = append(names, d.String())
	}
	want := []string{
		"client|setinfo: redis -, valkey arity 4 flags noscript",
		"wait: redis arity 3 flags noscript, valkey arity 3 flags blocking",
		"waitaof: redis -, valkey arity 4 flags blocking",
	}
	if strings.Join(names, "\n") != strings.Join(want, "\n") {
		t.Errorf("differences:\n%s\nwant\n%s", strings.Join(names, "\n"), strings.Join(want, "\n"))
	}
	if _, _, err := Merge(nil); err == nil {
		t.Error("Merge(nil) succeeded")
	}

	src, err := RenderMerged([]Source{redis, valkey}, specs, diffs)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := RenderMerged([]Source{redis, valkey}, specs, diffs)
	if string(src) != string(again) {
		t.Error("RenderMerged is not deterministic")
	}
	for _, line := range append(want, "redis 7.0.15 and valkey 8.0.1") {
		if !strings.Contains(string(src), line) {
			t.Errorf("rendered table lacks %q", line)
		}
	}
	if _, err := RenderMerged([]Source{{Server: "redis"}}, specs, nil); err == nil {
		t.Error("RenderMerged without a version succeeded")
	}
}
