package classify

import "strconv"

// Reason says why a command was classified the way it was. The zero value
// is ReasonUnknown.
type Reason uint8

// The reasons, in the order the rules are applied (see the package
// documentation for the full rule list).
const (
	// ReasonUnknown: the command is not in the table (a typo, a renamed
	// command, a module command the table has not learned, or a first
	// argument that is not a string). Master.
	ReasonUnknown Reason = iota
	// ReasonEmpty: no arguments at all. Master.
	ReasonEmpty
	// ReasonMissingSubcommand: a container command (CONFIG, OBJECT, XINFO,
	// …) without its subcommand. Master.
	ReasonMissingSubcommand
	// ReasonUnknownSubcommand: a container command with a subcommand the
	// table does not know. Master.
	ReasonUnknownSubcommand
	// ReasonTransaction: MULTI, EXEC, DISCARD, WATCH, UNWATCH. Master.
	ReasonTransaction
	// ReasonSelect: SELECT changes the connection's database. Master.
	ReasonSelect
	// ReasonServer: a command that describes or manages the server (INFO,
	// ROLE, CLIENT, CONFIG, MEMORY, …, or any command Redis flags admin).
	// Master, even where Redis flags it readonly (MEMORY USAGE, LOLWUT).
	ReasonServer
	// ReasonScriptMayWrite: EVAL whose body does not start with a "#!lua"
	// shebang Redis accepts and whose flags include no-writes. Master.
	ReasonScriptMayWrite
	// ReasonScriptUnseen: EVALSHA and FCALL, whose script or function body
	// the classifier cannot see. Master; use EVALSHA_RO / FCALL_RO.
	ReasonScriptUnseen
	// ReasonWrite: Redis flags the command write. Master.
	ReasonWrite
	// ReasonPubSub: Redis flags the command pubsub. Master.
	ReasonPubSub
	// ReasonBlocking: Redis flags the command blocking (BLPOP, XREAD, …).
	// Master.
	ReasonBlocking
	// ReasonModule: a module command Redis does not flag readonly. Master.
	ReasonModule
	// ReasonNotReadOnly: Redis flags the command neither readonly nor write
	// (PING, ECHO, TIME, HELLO, AUTH, …). Master: only what Redis calls
	// read-only is sent to a replica.
	ReasonNotReadOnly
	// ReasonReadOnly: Redis flags the command readonly and no rule
	// overrides it. Replica allowed.
	ReasonReadOnly
	// ReasonReadOnlyScript: EVAL_RO, EVALSHA_RO, FCALL_RO. Replica allowed.
	ReasonReadOnlyScript
	// ReasonScriptNoWrites: EVAL whose body starts with a "#!lua" shebang
	// whose flags include no-writes. Replica allowed.
	ReasonScriptNoWrites
)

// String is a short human description, such as "write command".
func (r Reason) String() string {
	switch r {
	case ReasonUnknown:
		return "unknown command"
	case ReasonEmpty:
		return "empty command"
	case ReasonMissingSubcommand:
		return "missing subcommand"
	case ReasonUnknownSubcommand:
		return "unknown subcommand"
	case ReasonTransaction:
		return "transaction"
	case ReasonSelect:
		return "SELECT changes the connection's database"
	case ReasonServer:
		return "server management"
	case ReasonScriptMayWrite:
		return "script without no-writes shebang"
	case ReasonScriptUnseen:
		return "script body not visible (use EVALSHA_RO or FCALL_RO)"
	case ReasonWrite:
		return "write command"
	case ReasonPubSub:
		return "pub/sub"
	case ReasonBlocking:
		return "blocking"
	case ReasonModule:
		return "module command not flagged readonly"
	case ReasonNotReadOnly:
		return "not flagged readonly"
	case ReasonReadOnly:
		return "read-only command"
	case ReasonReadOnlyScript:
		return "read-only script command"
	case ReasonScriptNoWrites:
		return "script with no-writes shebang"
	}
	return "Reason(" + strconv.Itoa(int(r)) + ")"
}

// Decision is the classifier's answer for one command, with the reason.
type Decision struct {
	// ReadOnly reports whether the command may run on a replica.
	ReadOnly bool
	// Reason says why.
	Reason Reason
	// Command is the table entry that decided, as Redis names it ("get",
	// "object|encoding"). For unknown commands and subcommands, Explain
	// sets it to the lower-cased name it was given; it is empty for an
	// empty command and for a pipeline that is read-only as a whole.
	Command string
}

// String formats the decision for logs and the CLI, such as
// "object|encoding: read-only command (replica)" or
// "set: write command (master)".
func (d Decision) String() string {
	where := " (master)"
	if d.ReadOnly {
		where = " (replica)"
	}
	if d.Command == "" {
		return d.Reason.String() + where
	}
	return d.Command + ": " + d.Reason.String() + where
}
