package classify

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify/internal/cmdinfo"
)

//go:generate go run ./internal/gen -out table_gen.go

// Classifier answers "may this command run on a replica?". It holds an
// immutable table behind an atomic pointer: classifying only reads it and
// never allocates, and Refresh swaps in a new table, so a Classifier is
// safe for concurrent use. The zero value (and a nil *Classifier) uses the
// built-in table.
type Classifier struct {
	t atomic.Pointer[table]
}

// New returns a Classifier using the built-in table, generated from the
// COMMAND replies of Redis 7.0 and Valkey 8.0 (see the package
// documentation).
func New() *Classifier {
	c := &Classifier{}
	c.t.Store(builtinTable())
	return c
}

func (c *Classifier) table() *table {
	if c != nil {
		if t := c.t.Load(); t != nil {
			return t
		}
	}
	return builtinTable()
}

// ReadOnly reports whether a go-redis command may run on a replica. It
// reads the command's arguments (cmd.Args), not cmd.Name, and does not
// allocate. A nil command is not read-only.
func (c *Classifier) ReadOnly(cmd redis.Cmder) bool {
	if cmd == nil {
		return false
	}
	return c.table().decide(cmd.Args()).ReadOnly
}

// Blocking reports whether a go-redis command may wait on the server for
// data: Redis flags it blocking (BLPOP, BLMOVE, BZPOPMIN, ...), and
// XREAD and XREADGROUP only with a BLOCK argument. It does not allocate.
// A routed client runs such a command where it can end the wait without
// its having run (CLIENT UNBLOCK) when the node it waits on is replaced.
func (c *Classifier) Blocking(cmd redis.Cmder) bool {
	if cmd == nil {
		return false
	}
	return c.table().blocking(cmd.Args())
}

// ReadOnlyArgs reports whether a command given as its arguments, such as
// ("GET", "k") or ("OBJECT", "ENCODING", "k"), may run on a replica.
// Arguments are read as go-redis sends them: the command name and
// subcommand must be a string, []byte or *string.
func (c *Classifier) ReadOnlyArgs(args ...any) bool {
	return c.table().decide(args).ReadOnly
}

// ReadOnlyPipeline reports whether every command of a pipeline may run on a
// replica. An empty pipeline is not read-only (there is nothing to route,
// so the master is the safe answer), and neither is one containing a
// transaction (MULTI, EXEC, …): go-redis's TxPipeline hands hooks the
// commands wrapped in MULTI and EXEC, so a transaction is recognised there.
func (c *Classifier) ReadOnlyPipeline(cmds []redis.Cmder) bool {
	if len(cmds) == 0 {
		return false
	}
	t := c.table()
	for _, cmd := range cmds {
		if cmd == nil || !t.decide(cmd.Args()).ReadOnly {
			return false
		}
	}
	return true
}

// Explain is ReadOnlyArgs with the reason, for diagnostics and the CLI.
// Unlike the ReadOnly methods it may allocate: for an unknown command it
// reports the lower-cased name it was given.
func (c *Classifier) Explain(args ...any) Decision {
	return c.table().explain(args)
}

// ExplainCmd is Explain for a go-redis command.
func (c *Classifier) ExplainCmd(cmd redis.Cmder) Decision {
	if cmd == nil {
		return Decision{Reason: ReasonEmpty}
	}
	return c.table().explain(cmd.Args())
}

// ExplainPipeline explains ReadOnlyPipeline: it returns the decision of the
// first command that keeps the pipeline on the master and that command's
// index, or, when every command is read-only, a read-only decision and -1.
// An empty pipeline gives ReasonEmpty and -1.
func (c *Classifier) ExplainPipeline(cmds []redis.Cmder) (Decision, int) {
	if len(cmds) == 0 {
		return Decision{Reason: ReasonEmpty}, -1
	}
	t := c.table()
	for i, cmd := range cmds {
		if cmd == nil {
			return Decision{Reason: ReasonEmpty}, i
		}
		if d := t.explain(cmd.Args()); !d.ReadOnly {
			return d, i
		}
	}
	return Decision{ReadOnly: true, Reason: ReasonReadOnly}, -1
}

// Source describes the table in use: the built-in one and the Redis version
// it was generated from, or the server the last successful Refresh read.
func (c *Classifier) Source() string {
	return c.table().source
}

// Refresh replaces the classifier's table with one built from the
// connected server's COMMAND reply, so that module commands and commands of
// newer servers are classified by the server's own flags. The rules by name
// (transactions, SELECT, server commands, scripts) still apply. On error
// the classifier keeps its current table.
//
// Refresh sends one COMMAND (no retries of its own; rdb's settings apply)
// and is bounded by ctx. It reads a data node: a sentinel's COMMAND reply
// describes the sentinel's commands, not the data's. Renamed commands
// (rename-command) stay unknown, because COMMAND reports them under their
// original names.
func (c *Classifier) Refresh(ctx context.Context, rdb redis.Cmdable) error {
	if c == nil {
		return &RefreshError{Err: errors.New("nil *Classifier")}
	}
	if rdb == nil {
		return &RefreshError{Err: errors.New("nil client")}
	}
	server := serverName(rdb)
	cmd := redis.NewCmd(ctx, "command")
	var err error
	if p, ok := rdb.(interface {
		Process(context.Context, redis.Cmder) error
	}); ok {
		err = p.Process(ctx, cmd)
	} else {
		pipe := rdb.Pipeline()
		_ = pipe.Process(ctx, cmd)
		_, err = pipe.Exec(ctx)
	}
	if err != nil {
		return &RefreshError{Server: server, Err: err}
	}
	specs, err := cmdinfo.Parse(cmd.Val())
	if err != nil {
		return &RefreshError{Server: server, Err: err}
	}
	if len(specs) == 0 {
		return &RefreshError{Server: server, Err: errors.New("COMMAND returned no commands")}
	}
	source := "COMMAND reply"
	if server != "" {
		source += " of " + server
	}
	c.t.Store(buildTable(specs, fmt.Sprintf("%s (%d commands)", source, len(specs))))
	return nil
}

func serverName(rdb redis.Cmdable) string {
	if o, ok := rdb.(interface{ Options() *redis.Options }); ok {
		if opt := o.Options(); opt != nil {
			return opt.Addr
		}
	}
	return ""
}

// RefreshError is returned by Refresh when the server could not be asked
// or its reply could not be read. The classifier keeps its previous table.
type RefreshError struct {
	Server string // the client's address when it is known
	Err    error
}

func (e *RefreshError) Error() string {
	where := ""
	if e.Server != "" {
		where = " from " + e.Server
	}
	return fmt.Sprintf("classify: refresh%s: %v (the previous command table stays in use)", where, e.Err)
}

func (e *RefreshError) Unwrap() error { return e.Err }

// ReadOnly reports whether a go-redis command may run on a replica,
// according to the built-in table. It does not allocate.
func ReadOnly(cmd redis.Cmder) bool { return (*Classifier)(nil).ReadOnly(cmd) }

// ReadOnlyArgs is ReadOnly for a command given as its arguments.
func ReadOnlyArgs(args ...any) bool { return (*Classifier)(nil).ReadOnlyArgs(args...) }

// ReadOnlyPipeline reports whether every command of a pipeline may run on a
// replica, according to the built-in table. Empty is not read-only.
func ReadOnlyPipeline(cmds []redis.Cmder) bool { return (*Classifier)(nil).ReadOnlyPipeline(cmds) }

// Explain is ReadOnlyArgs with the reason, according to the built-in table.
func Explain(args ...any) Decision { return (*Classifier)(nil).Explain(args...) }

// ScriptWrite says whether a command may run as a write inside a Lua
// script, which is how rediskit makes a write exactly-once (package
// exactlyonce): it returns "" for a command the table knows, flagged
// write, allowed in scripts (not flagged noscript: MULTI, WAIT, EVAL...),
// not waiting for data (a blocking command, XREAD... BLOCK), with at
// least one key; and otherwise why not, in a few words ("not a write").
// It does not allocate.
func (c *Classifier) ScriptWrite(args []any) string {
	t := c.table()
	e := t.entryOf(args)
	switch {
	case e == nil:
		return "a command the command table does not know"
	case t.blocking(args):
		return "a blocking command"
	case e.flags&cmdinfo.NoScript != 0:
		return "not allowed in scripts"
	case e.flags&cmdinfo.Write == 0:
		return "not a write"
	}
	if dest, from, _, _ := t.keyRange(args); dest <= 0 && from <= 0 {
		return "a command without keys"
	}
	return ""
}
