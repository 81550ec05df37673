package classify

import (
	"strings"
	"sync"
	"unsafe"

	"github.com/rediskit/rediskit/classify/internal/cmdinfo"
)

// entry is one command or subcommand of a table, with its decision worked
// out when the table is built, so that classifying is a map lookup.
type entry struct {
	name     string // as Redis names it: "get", "object|encoding"
	flags    cmdinfo.Flags
	evalBody bool // EVAL: read-only when the body has a no-writes shebang
	decision Decision
	// keys are COMMAND's key positions; keyRule says whether FirstKey
	// reads them or the arguments (numkeysAt: where the key count is).
	keys      cmdinfo.Keys
	keyRule   keyRule
	numkeysAt int
	// subs holds a container's subcommands by their own lower-case name
	// ("encoding"); nil for other commands.
	subs map[string]*entry
}

// table is an immutable snapshot: built once, then only read.
type table struct {
	commands map[string]*entry // by lower-case name
	maxName  int               // longest command or subcommand name, for a cheap miss
	source   string
}

// builtinTable is the table built from the generated builtinSpecs. It is
// built on first use and never changes; every Classifier starts with it and
// the package-level functions use only it.
var builtinTable = sync.OnceValue(func() *table {
	return buildTable(builtinSpecs, "built-in table ("+builtinLabel()+")")
})

// builtinLabel names the servers the built-in table was read from:
// "redis 7.0.15 + valkey 8.0.1".
func builtinLabel() string {
	labels := make([]string, len(builtinSources))
	for i, s := range builtinSources {
		labels[i] = s.Label()
	}
	return strings.Join(labels, " + ")
}

func buildTable(specs []cmdinfo.Spec, source string) *table {
	t := &table{commands: make(map[string]*entry, len(specs)), source: source}
	for _, s := range specs {
		top := &entry{
			name:     s.Name,
			flags:    s.Flags,
			evalBody: s.Name == "eval",
			decision: rule(s.Name, s),
		}
		top.setKeys(s)
		t.commands[s.Name] = top
		t.maxName = max(t.maxName, len(s.Name))
		if len(s.Subcommands) == 0 {
			continue
		}
		if !isFamilyRule(top.decision.Reason) {
			// A container alone (OBJECT, XINFO) is an incomplete command.
			top.decision = Decision{Reason: ReasonMissingSubcommand, Command: s.Name}
		}
		top.subs = make(map[string]*entry, len(s.Subcommands))
		for _, sub := range s.Subcommands {
			_, short, _ := strings.Cut(sub.Name, "|")
			se := &entry{name: sub.Name, flags: sub.Flags, decision: rule(s.Name, sub)}
			se.setKeys(sub)
			top.subs[short] = se
			t.maxName = max(t.maxName, len(short))
		}
	}
	return t
}

// find returns the entry Redis names fullName ("get", "object|encoding").
func (t *table) find(fullName string) *entry {
	parent, sub, isSub := strings.Cut(fullName, "|")
	e := t.commands[parent]
	if !isSub || e == nil {
		return e
	}
	return e.subs[sub]
}

// rule decides one command or subcommand; top is the top-level command's
// name (for a subcommand, its container's). The order is the one the
// package documentation gives: rules by name first, then Redis's flags.
func rule(top string, s cmdinfo.Spec) Decision {
	master := func(r Reason) Decision { return Decision{Reason: r, Command: s.Name} }
	replica := func(r Reason) Decision { return Decision{ReadOnly: true, Reason: r, Command: s.Name} }
	switch {
	case isTransaction(top):
		return master(ReasonTransaction)
	case top == "select":
		return master(ReasonSelect)
	case isServerCommand(top) || s.Flags&cmdinfo.Admin != 0:
		return master(ReasonServer)
	}
	switch s.Name {
	case "eval":
		return master(ReasonScriptMayWrite) // unless the body says otherwise; see decide
	case "evalsha", "fcall":
		return master(ReasonScriptUnseen)
	case "eval_ro", "evalsha_ro", "fcall_ro":
		return replica(ReasonReadOnlyScript)
	}
	switch f := s.Flags; {
	case f&cmdinfo.Write != 0:
		return master(ReasonWrite)
	case f&cmdinfo.PubSub != 0:
		return master(ReasonPubSub)
	case f&cmdinfo.Blocking != 0:
		return master(ReasonBlocking)
	case f&cmdinfo.ReadOnly != 0:
		return replica(ReasonReadOnly)
	case f&cmdinfo.Module != 0:
		return master(ReasonModule)
	}
	return master(ReasonNotReadOnly)
}

// isFamilyRule reports whether r comes from a rule that covers a command
// and all its subcommands by name.
func isFamilyRule(r Reason) bool {
	return r == ReasonTransaction || r == ReasonSelect || r == ReasonServer
}

func isTransaction(name string) bool {
	switch name {
	case "multi", "exec", "discard", "watch", "unwatch":
		return true
	}
	return false
}

// isServerCommand lists the commands (with all their subcommands) that
// describe or manage the server, the replication or the cluster. They go to
// the master whatever Redis's flags say: a dashboard or tool asking INFO,
// CLIENT LIST or MEMORY USAGE means the server it thinks it talks to.
func isServerCommand(name string) bool {
	switch name {
	case "acl", "bgrewriteaof", "bgsave", "client", "cluster", "command", "config",
		"debug", "failover", "info", "lastsave", "latency", "lolwut", "memory",
		"module", "monitor", "pfdebug", "pfselftest", "psync", "replconf", "replicaof",
		"role", "save", "shutdown", "slaveof", "slowlog", "sync":
		return true
	}
	return false
}

// blocking reports whether the command given as go-redis arguments may
// wait on the server: Redis flags it blocking, and for XREAD and
// XREADGROUP (flagged blocking even without it) it has a BLOCK argument.
// It does not allocate (as decide).
func (t *table) blocking(args []any) bool {
	e := t.command(args)
	if e == nil || e.flags&cmdinfo.Blocking == 0 {
		return false
	}
	if e.name != "xread" && e.name != "xreadgroup" {
		return true
	}
	for _, a := range args[1:] {
		if s, ok := argString(a); ok && strings.EqualFold(s, "block") {
			return true
		}
	}
	return false
}

// command returns the entry of the command args[0] names (a container's
// own entry, not its subcommand's), or nil for no arguments, a name that
// is not text or a command the table does not know. It does not allocate
// (see lookup).
func (t *table) command(args []any) *entry {
	if len(args) == 0 {
		return nil
	}
	name, ok := argString(args[0])
	if !ok {
		return nil
	}
	return lookup(t.commands, name, t.maxName)
}

// decide classifies one command given as go-redis arguments. It does not
// allocate unless a name has upper-case letters and is longer than 64 bytes
// while the table has names that long (module commands).
func (t *table) decide(args []any) Decision {
	return t.decideEntry(args, t.command(args))
}

// decideEntry is decide with the command's entry e (t.command(args))
// already looked up.
func (t *table) decideEntry(args []any, e *entry) Decision {
	if len(args) == 0 {
		return Decision{Reason: ReasonEmpty}
	}
	if e == nil {
		return Decision{Reason: ReasonUnknown}
	}
	if e.subs != nil {
		if len(args) < 2 {
			return e.decision
		}
		sub, ok := argString(args[1])
		if !ok {
			return Decision{Reason: ReasonUnknownSubcommand, Command: e.name}
		}
		se := lookup(e.subs, sub, t.maxName)
		if se == nil {
			return Decision{Reason: ReasonUnknownSubcommand, Command: e.name}
		}
		return se.decision
	}
	if e.evalBody && len(args) >= 2 {
		if body, ok := argString(args[1]); ok && shebangNoWrites(body) {
			return Decision{ReadOnly: true, Reason: ReasonScriptNoWrites, Command: e.name}
		}
	}
	return e.decision
}

// lookup finds name in m, whose keys are lower case, ignoring ASCII case.
// A lower-case name (as go-redis's typed commands send them) is looked up
// as it is; otherwise it is lower-cased into a stack buffer, and indexing
// the map with string(bytes) does not copy.
func lookup(m map[string]*entry, name string, maxName int) *entry {
	if name == "" || len(name) > maxName {
		return nil
	}
	upper := false
	for i := 0; i < len(name); i++ {
		if c := name[i]; 'A' <= c && c <= 'Z' {
			upper = true
			break
		}
	}
	if !upper {
		return m[name]
	}
	var buf [64]byte
	key := buf[:0]
	if len(name) > len(buf) {
		key = make([]byte, 0, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		key = append(key, c)
	}
	return m[string(key)]
}

// argString returns a command argument that is text, as go-redis would send
// it: a string, a []byte or a *string. A []byte is viewed, not copied; the
// view is only read during the call that made it.
func argString(a any) (string, bool) {
	switch v := a.(type) {
	case string:
		return v, true
	case []byte:
		return unsafe.String(unsafe.SliceData(v), len(v)), true //nolint:gosec // used only for the map lookup, see above
	case *string:
		if v != nil {
			return *v, true
		}
	}
	return "", false
}

// explain is decide plus, for unknown commands, the name that was asked
// about (which costs an allocation, so only Explain does it).
func (t *table) explain(args []any) Decision {
	d := t.decide(args)
	if len(args) == 0 {
		return d
	}
	switch d.Reason {
	case ReasonUnknown:
		if name, ok := argString(args[0]); ok {
			d.Command = strings.ToLower(name)
		}
	case ReasonUnknownSubcommand:
		if len(args) > 1 {
			if sub, ok := argString(args[1]); ok {
				d.Command += "|" + strings.ToLower(sub)
			}
		}
	}
	return d
}
