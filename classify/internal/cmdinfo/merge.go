package cmdinfo

import (
	"bytes"
	"errors"
	"fmt"
	"go/format"
	"slices"
	"strings"
)

// Source is one server's command table: its name and version as INFO
// server reports them ("redis" "7.0.15", "valkey" "8.0.1") and its COMMAND
// reply.
type Source struct {
	Server  string
	Version string
	Specs   []Spec
}

// Label is "redis 7.0.15".
func (s Source) Label() string { return s.Server + " " + s.Version }

// Variant is how one server describes a command: Known false when the
// server has no such command.
type Variant struct {
	Server string
	Known  bool
	Arity  int
	Flags  Flags
	Keys   Keys
}

// Difference is a command (or subcommand) the servers do not describe
// alike: one of them lacks it, or their arities or flags differ. Variants
// has one entry per source, in the sources' order.
type Difference struct {
	Name     string
	Variants []Variant
}

// String is "name: redis -, valkey arity -2 flags readonly keys 1 1 1"
// (the key range only when there is one).
func (d Difference) String() string {
	parts := make([]string, len(d.Variants))
	for i, v := range d.Variants {
		if !v.Known {
			parts[i] = v.Server + " -"
			continue
		}
		parts[i] = fmt.Sprintf("%s arity %d flags %s", v.Server, v.Arity, v.Flags)
		if v.Keys != (Keys{}) {
			parts[i] += " " + v.Keys.String()
		}
	}
	return d.Name + ": " + strings.Join(parts, ", ")
}

// mergeFlags combines the flags of the servers that know a command so that
// the result is safe on every one of them: ReadOnly only when every server
// says read-only (a replica of each must accept it, and it must not write
// on any), and every other flag when any server sets it (write, blocking,
// pubsub, admin, ... keep the command on the master, and the rule that
// reads them checks them before read-only).
func mergeFlags(variants []Variant) Flags {
	var some Flags
	every := ^Flags(0)
	for _, v := range variants {
		if !v.Known {
			continue
		}
		some |= v.Flags
		every &= v.Flags
	}
	return some&^ReadOnly | every&ReadOnly
}

// mergeKeys is the key range safe for routing when the servers report
// different ones. A cluster client sends a command to the node that owns
// its first key's slot; a command routed by an argument that is not a key
// still runs (on a node chosen by that argument), while a keyed command
// routed as keyless goes to any node and fails with MOVED or runs on the
// wrong shard. So a range wins over no range (the server that names a key
// is believed), and of two ranges the one with the earlier first key wins
// (the earliest argument any server reads as a key; in a cluster every key
// of a command must share one slot, so where both are keys either gives
// the slot). Between ranges with the same first key, the first source's
// range is kept. A MovableKeys flag on any server is kept by mergeFlags.
func mergeKeys(variants []Variant) Keys {
	var keys Keys
	for _, v := range variants {
		if !v.Known || v.Keys.First <= 0 {
			continue
		}
		if keys.First <= 0 || v.Keys.First < keys.First {
			keys = v.Keys
		}
	}
	if keys.First > 0 {
		return keys
	}
	for _, v := range variants {
		if v.Known {
			return v.Keys // no server names a key: the first one's (zero) range
		}
	}
	return Keys{}
}

// mergeArity is the arity every server accepts when they differ: the more
// permissive (a negative arity -n accepts n or more arguments).
func mergeArity(variants []Variant) int {
	arity, first := 0, true
	for _, v := range variants {
		if !v.Known {
			continue
		}
		if first {
			arity, first = v.Arity, false
			continue
		}
		if v.Arity == arity {
			continue
		}
		lo := min(abs(arity), abs(v.Arity))
		arity = -lo
	}
	return arity
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

// Merge combines the command tables of several servers into one: the
// union of their commands and subcommands, each command a single server
// knows described by that server, and each command they describe
// differently given the flags that are safe on all of them (mergeFlags)
// the most permissive arity and the key range safe for routing
// (mergeKeys). It also returns every such difference,
// sorted by name. The result is sorted like Parse's.
func Merge(sources []Source) ([]Spec, []Difference, error) {
	if len(sources) == 0 {
		return nil, nil, errors.New("cmdinfo: Merge needs at least one source")
	}
	type slot struct {
		variants []Variant
		subs     map[string]bool
	}
	top := map[string]*slot{}
	subs := map[string]*slot{}
	get := func(m map[string]*slot, name string) *slot {
		s := m[name]
		if s == nil {
			s = &slot{variants: make([]Variant, len(sources))}
			for i, src := range sources {
				s.variants[i].Server = src.Server
			}
			m[name] = s
		}
		return s
	}
	for i, src := range sources {
		for _, spec := range src.Specs {
			t := get(top, spec.Name)
			t.variants[i] = variantOf(src.Server, spec)
			if t.subs == nil {
				t.subs = map[string]bool{}
			}
			for _, sub := range spec.Subcommands {
				t.subs[sub.Name] = true
				get(subs, sub.Name).variants[i] = variantOf(src.Server, sub)
			}
		}
	}
	var diffs []Difference
	spec := func(name string, s *slot) Spec {
		if differ(s.variants) {
			diffs = append(diffs, Difference{Name: name, Variants: s.variants})
		}
		return Spec{Name: name, Arity: mergeArity(s.variants), Flags: mergeFlags(s.variants), Keys: mergeKeys(s.variants)}
	}
	merged := make([]Spec, 0, len(top))
	for name, t := range top {
		m := spec(name, t)
		for sub := range t.subs {
			m.Subcommands = append(m.Subcommands, spec(sub, subs[sub]))
		}
		merged = append(merged, m)
	}
	sortSpecs(merged)
	slices.SortFunc(diffs, func(a, b Difference) int { return strings.Compare(a.Name, b.Name) })
	return merged, diffs, nil
}

// variantOf is how the server describes spec.
func variantOf(server string, spec Spec) Variant {
	return Variant{Server: server, Known: true, Arity: spec.Arity, Flags: spec.Flags, Keys: spec.Keys}
}

func differ(variants []Variant) bool {
	for _, v := range variants[1:] {
		same := variants[0]
		same.Server = v.Server
		if v != same {
			return true
		}
	}
	return false
}

// RenderMerged returns the Go source of table_gen.go for a table merged
// from several servers: the sources' labels, the merged specs as
// builtinSpecs, and the differences as builtinDifferences (each also
// written as a comment), so that a reader sees what differs between the
// servers and a test can check each server against its own variant. The
// output is gofmt-formatted and deterministic for the same input.
func RenderMerged(sources []Source, specs []Spec, diffs []Difference) ([]byte, error) {
	if len(sources) == 0 {
		return nil, errors.New("cmdinfo: RenderMerged needs at least one source")
	}
	labels := make([]string, len(sources))
	for i, s := range sources {
		if s.Server == "" || s.Version == "" {
			return nil, fmt.Errorf("cmdinfo: source %d has no server name or version", i)
		}
		labels[i] = s.Label()
	}
	var b bytes.Buffer
	b.WriteString("// Code generated by \"go run ./internal/gen\"; DO NOT EDIT.\n")
	fmt.Fprintf(&b, "// Source: the COMMAND replies of %s, started by the lab package.\n\n", strings.Join(labels, " and "))
	b.WriteString("package classify\n\n")
	b.WriteString("import \"github.com/rediskit/rediskit/classify/internal/cmdinfo\"\n\n")
	b.WriteString("// builtinSources are the servers builtinSpecs was read from (name and\n")
	b.WriteString("// version from INFO server).\n")
	b.WriteString("var builtinSources = []cmdinfo.Source{\n")
	for _, s := range sources {
		fmt.Fprintf(&b, "{Server: %q, Version: %q},\n", s.Server, s.Version)
	}
	b.WriteString("}\n\n")
	b.WriteString("// builtinSpecs is the union of every command and subcommand those servers\n")
	b.WriteString("// reported, with its arity, flags and key positions, sorted by name. A\n")
	b.WriteString("// command only one server knows has that server's description; one they\n")
	b.WriteString("// describe differently has the flags safe on both (read-only only if\n")
	b.WriteString("// read-only on every server that knows it) and the key range safe for\n")
	b.WriteString("// routing (see cmdinfo.Merge).\n")
	b.WriteString("var builtinSpecs = []cmdinfo.Spec{\n")
	renderSpecs(&b, specs)
	b.WriteString("}\n\n")
	b.WriteString("// builtinDifferences lists every command the servers describe differently:\n")
	b.WriteString("//\n")
	for _, d := range diffs {
		fmt.Fprintf(&b, "//\t%s\n", d)
	}
	if len(diffs) == 0 {
		b.WriteString("//\t(none)\n")
	}
	b.WriteString("var builtinDifferences = []cmdinfo.Difference{\n")
	for _, d := range diffs {
		fmt.Fprintf(&b, "{Name: %q, Variants: []cmdinfo.Variant{\n", d.Name)
		for _, v := range d.Variants {
			fmt.Fprintf(&b, "{Server: %q, Known: %t, Arity: %d, Flags: %s", v.Server, v.Known, v.Arity, v.Flags.goExpr())
			if v.Keys != (Keys{}) {
				fmt.Fprintf(&b, ", Keys: %s", v.Keys.goExpr())
			}
			b.WriteString("},\n")
		}
		b.WriteString("}},\n")
	}
	b.WriteString("}\n")
	out, err := format.Source(b.Bytes())
	if err != nil {
		return nil, fmt.Errorf("cmdinfo: format generated source: %w", err)
	}
	return out, nil
}
