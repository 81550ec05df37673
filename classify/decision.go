package classify

//go:generate go run golang.org/x/tools/cmd/stringer@v0.52.0 -type=Reason -linecomment

// Reason says why a command was classified the way it was. The zero value
// is ReasonUnknown. Its String is a short human description, such as
// "write command".
type Reason uint8

// The reasons, in the order the rules are applied (see the package
// documentation for the full rule list).
const (
	// ReasonUnknown: the command is not in the table (a typo, a renamed
	// command, a module command the table has not learned, or a first
	// argument that is not a string). Master.
	ReasonUnknown Reason = iota // unknown command
	// ReasonEmpty: no arguments at all. Master.
	ReasonEmpty // empty command
	// ReasonMissingSubcommand: a container command (CONFIG, OBJECT, XINFO,
	// …) without its subcommand. Master.
	ReasonMissingSubcommand // missing subcommand
	// ReasonUnknownSubcommand: a container command with a subcommand the
	// table does not know. Master.
	ReasonUnknownSubcommand // unknown subcommand
	// ReasonTransaction: MULTI, EXEC, DISCARD, WATCH, UNWATCH. Master.
	ReasonTransaction // transaction
	// ReasonSelect: SELECT changes the connection's database. Master.
	ReasonSelect // SELECT changes the connection's database
	// ReasonServer: a command that describes or manages the server (INFO,
	// ROLE, CLIENT, CONFIG, MEMORY, …, or any command Redis flags admin).
	// Master, even where Redis flags it readonly (MEMORY USAGE, LOLWUT).
	ReasonServer // server management
	// ReasonScriptMayWrite: EVAL whose body does not start with a "#!lua"
	// shebang Redis accepts and whose flags include no-writes. Master.
	ReasonScriptMayWrite // script without no-writes shebang
	// ReasonScriptUnseen: EVALSHA and FCALL, whose script or function body
	// the classifier cannot see. Master; use EVALSHA_RO / FCALL_RO.
	ReasonScriptUnseen // script body not visible (use EVALSHA_RO or FCALL_RO)
	// ReasonWrite: Redis flags the command write. Master.
	ReasonWrite // write command
	// ReasonPubSub: Redis flags the command pubsub. Master.
	ReasonPubSub // pub/sub
	// ReasonBlocking: Redis flags the command blocking (BLPOP, XREAD, …).
	// Master.
	ReasonBlocking // blocking
	// ReasonModule: a module command Redis does not flag readonly. Master.
	ReasonModule // module command not flagged readonly
	// ReasonNotReadOnly: Redis flags the command neither readonly nor write
	// (PING, ECHO, TIME, HELLO, AUTH, …). Master: only what Redis calls
	// read-only is sent to a replica.
	ReasonNotReadOnly // not flagged readonly
	// ReasonReadOnly: Redis flags the command readonly and no rule
	// overrides it. Replica allowed.
	ReasonReadOnly // read-only command
	// ReasonReadOnlyScript: EVAL_RO, EVALSHA_RO, FCALL_RO. Replica allowed.
	ReasonReadOnlyScript // read-only script command
	// ReasonScriptNoWrites: EVAL whose body starts with a "#!lua" shebang
	// whose flags include no-writes. Replica allowed.
	ReasonScriptNoWrites // script with no-writes shebang
)

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
