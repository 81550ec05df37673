// Package cmdinfo reads Redis's COMMAND reply into command specs and renders
// them as Go source. It is shared by the classify package (Refresh), its
// generator (internal/gen, which writes table_gen.go) and the test that
// checks the committed table against a live server, so all three read the
// reply the same way.
package cmdinfo

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
)

// Flags are the command flags Redis reports in COMMAND (element 3 of each
// entry), one bit per flag name Redis 7 publishes. Flag names a newer server
// adds are not kept; the classifier's rules only use the ones below.
type Flags uint32

// The flags, named after Redis's own (server.c, addReplyCommandFlags).
const (
	Write Flags = 1 << iota
	ReadOnly
	DenyOOM
	Module
	Admin
	PubSub
	NoScript
	Blocking
	Loading
	Stale
	SkipMonitor
	SkipSlowlog
	Asking
	Fast
	NoAuth
	NoMandatoryKeys
	NoAsyncLoading
	NoMulti
	MovableKeys
	AllowBusy
)

// flagNames maps each flag to the name Redis uses for it and to its Go
// constant's name (for Render). It is a fixed table, never written.
var flagNames = [...]struct {
	flag       Flags
	redis, goN string
}{
	{Write, "write", "Write"},
	{ReadOnly, "readonly", "ReadOnly"},
	{DenyOOM, "denyoom", "DenyOOM"},
	{Module, "module", "Module"},
	{Admin, "admin", "Admin"},
	{PubSub, "pubsub", "PubSub"},
	{NoScript, "noscript", "NoScript"},
	{Blocking, "blocking", "Blocking"},
	{Loading, "loading", "Loading"},
	{Stale, "stale", "Stale"},
	{SkipMonitor, "skip_monitor", "SkipMonitor"},
	{SkipSlowlog, "skip_slowlog", "SkipSlowlog"},
	{Asking, "asking", "Asking"},
	{Fast, "fast", "Fast"},
	{NoAuth, "no_auth", "NoAuth"},
	{NoMandatoryKeys, "no_mandatory_keys", "NoMandatoryKeys"},
	{NoAsyncLoading, "no_async_loading", "NoAsyncLoading"},
	{NoMulti, "no_multi", "NoMulti"},
	{MovableKeys, "movablekeys", "MovableKeys"},
	{AllowBusy, "allow_busy", "AllowBusy"},
}

// ParseFlag returns the flag Redis calls name, and false for a name this
// package does not know.
func ParseFlag(name string) (Flags, bool) {
	for _, f := range &flagNames {
		if f.redis == name {
			return f.flag, true
		}
	}
	return 0, false
}

// String lists the flags by their Redis names, comma-separated.
func (f Flags) String() string {
	var names []string
	for _, n := range &flagNames {
		if f&n.flag != 0 {
			names = append(names, n.redis)
		}
	}
	return strings.Join(names, ",")
}

// goExpr renders f as a Go expression over this package's constants.
func (f Flags) goExpr() string {
	if f == 0 {
		return "0"
	}
	var parts []string
	for _, n := range &flagNames {
		if f&n.flag != 0 {
			parts = append(parts, "cmdinfo."+n.goN)
		}
	}
	return strings.Join(parts, " | ")
}

// Keys are a command's key positions as COMMAND reports them (elements 4
// to 6 of an entry, Redis's "legacy" range): the index of the first key in
// the arguments (0 is the command name, so a subcommand's first key is at
// 2 or more), the index of the last (negative counts from the end: -1 is
// the last argument), and the step between keys. The zero value means the
// command has no key at a fixed position: it has none, or, when the
// command is flagged MovableKeys, its keys are found by reading its
// arguments. A MovableKeys command may also report a range: the keys found
// at fixed positions (GEORADIUS's first key, SORT's).
type Keys struct {
	First, Last, Step int
}

// goExpr renders k as a Go composite literal of this package's type.
func (k Keys) goExpr() string {
	return fmt.Sprintf("cmdinfo.Keys{First: %d, Last: %d, Step: %d}", k.First, k.Last, k.Step)
}

// String is "keys 1 -1 1" (first, last, step), or "no keys".
func (k Keys) String() string {
	if k == (Keys{}) {
		return "no keys"
	}
	return fmt.Sprintf("keys %d %d %d", k.First, k.Last, k.Step)
}

// Spec is one command (or subcommand) as the server describes it. Names
// are lower case; a subcommand's name is "parent|sub", as Redis writes it.
type Spec struct {
	Name        string
	Arity       int
	Flags       Flags
	Keys        Keys
	Subcommands []Spec
}

// Parse reads the reply of COMMAND (or COMMAND INFO) as go-redis returns it
// from a *redis.Cmd (RESP2 or RESP3): a list of entries, each a list whose
// first six elements are the name, the arity, the flags and the key
// positions (first key, last key, step), and whose tenth (Redis 7 and
// newer) lists the subcommands in the same shape. Nil
// entries (COMMAND INFO of an unknown name) are skipped. The specs come
// back sorted by name, subcommands too.
func Parse(reply any) ([]Spec, error) {
	list, ok := reply.([]any)
	if !ok {
		return nil, fmt.Errorf("cmdinfo: COMMAND reply is %T, want an array", reply)
	}
	specs := make([]Spec, 0, len(list))
	for i, v := range list {
		if v == nil {
			continue
		}
		s, err := parseEntry(v, "")
		if err != nil {
			return nil, fmt.Errorf("cmdinfo: COMMAND entry %d: %w", i, err)
		}
		specs = append(specs, s)
	}
	sortSpecs(specs)
	return specs, nil
}

func parseEntry(v any, parent string) (Spec, error) {
	e, ok := v.([]any)
	if !ok || len(e) < 6 {
		return Spec{}, fmt.Errorf("entry is %T of length %d, want an array of at least 6", v, lenOf(v))
	}
	name, ok := e[0].(string)
	if !ok || name == "" {
		return Spec{}, fmt.Errorf("name is %T %v, want a non-empty string", e[0], e[0])
	}
	name = strings.ToLower(name)
	if parent != "" && !strings.HasPrefix(name, parent+"|") {
		return Spec{}, fmt.Errorf("subcommand %q is not named %q", name, parent+"|…")
	}
	if parent == "" && strings.Contains(name, "|") {
		return Spec{}, fmt.Errorf("top-level command %q contains '|'", name)
	}
	arity, ok := e[1].(int64)
	if !ok {
		return Spec{}, fmt.Errorf("%s: arity is %T, want an integer", name, e[1])
	}
	flagList, ok := e[2].([]any)
	if !ok {
		return Spec{}, fmt.Errorf("%s: flags are %T, want an array", name, e[2])
	}
	s := Spec{Name: name, Arity: int(arity)}
	for _, fv := range flagList {
		fs, ok := fv.(string)
		if !ok {
			return Spec{}, fmt.Errorf("%s: flag is %T, want a string", name, fv)
		}
		if f, known := ParseFlag(fs); known {
			s.Flags |= f
		}
	}
	keys, err := parseKeys(name, e[3:6])
	if err != nil {
		return Spec{}, err
	}
	s.Keys = keys
	if len(e) >= 10 && e[9] != nil {
		subs, ok := e[9].([]any)
		if !ok {
			return Spec{}, fmt.Errorf("%s: subcommands are %T, want an array", name, e[9])
		}
		if parent != "" && len(subs) > 0 {
			return Spec{}, fmt.Errorf("%s: subcommand has subcommands", name)
		}
		for _, sv := range subs {
			sub, err := parseEntry(sv, name)
			if err != nil {
				return Spec{}, err
			}
			s.Subcommands = append(s.Subcommands, sub)
		}
	}
	return s, nil
}

// parseKeys reads an entry's elements 4 to 6: first key, last key, step.
func parseKeys(name string, e []any) (Keys, error) {
	var pos [3]int
	for i, v := range e {
		n, ok := v.(int64)
		if !ok {
			return Keys{}, fmt.Errorf("%s: key position %d (COMMAND element %d) is %T, want an integer", name, i+1, 4+i, v)
		}
		pos[i] = int(n)
	}
	return Keys{First: pos[0], Last: pos[1], Step: pos[2]}, nil
}

func lenOf(v any) int {
	if l, ok := v.([]any); ok {
		return len(l)
	}
	return 0
}

func sortSpecs(specs []Spec) {
	slices.SortFunc(specs, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
	for i := range specs {
		sortSpecs(specs[i].Subcommands)
	}
}

func renderSpecs(b *bytes.Buffer, specs []Spec) {
	for _, s := range specs {
		fmt.Fprintf(b, "{Name: %q, Arity: %d, Flags: %s", s.Name, s.Arity, s.Flags.goExpr())
		if s.Keys != (Keys{}) {
			fmt.Fprintf(b, ", Keys: %s", s.Keys.goExpr())
		}
		if len(s.Subcommands) > 0 {
			b.WriteString(", Subcommands: []cmdinfo.Spec{\n")
			renderSpecs(b, s.Subcommands)
			b.WriteString("}")
		}
		b.WriteString("},\n")
	}
}
