// Package classify decides whether a Redis command may run on a replica.
// It is the one classifier rediskit uses wherever it routes commands (the
// Sentinel client, the CLI), so there is no second list of "commands that
// write" that could drift from it.
//
//	c := classify.New()
//	c.ReadOnlyArgs("GET", "k")                          // true
//	c.ReadOnlyArgs("object", "encoding", "k")           // true: OBJECT ENCODING is read-only
//	c.ReadOnly(redis.NewStatusCmd(ctx, "set", "k", "v")) // false (a go-redis command, as a hook sees it)
//	c.ReadOnlyPipeline(cmds)                            // true only if every command is
//	c.Explain("INFO")                                   // info: server management (master)
//
// The package-level functions (ReadOnly, ReadOnlyArgs, ReadOnlyPipeline,
// Explain) use the built-in table and never change. A Classifier starts
// with the same table and can Refresh it from a server.
//
// # Where the answers come from
//
// Per command, from the servers' own metadata: the flags COMMAND reports
// for each command and subcommand. The built-in table (table_gen.go) is
// generated from the COMMAND replies of Redis 7.0.15 and Valkey 8.0.1 by a
// generator kept in this package (internal/gen; run "go generate
// ./classify/" with redis-server and valkey-server on PATH; it starts a lab
// server of each, reads COMMAND and INFO, and writes the merged table with
// every command's arity, flags and key positions). The table is the union
// of both: a command only one server knows (Valkey's WAITAOF, CLIENT CAPA,
// CLUSTER SLOT-STATS, ...) is classified from that server's flags; a
// command they describe differently gets the flags that are safe on both
// (read-only only when both say read-only; WAIT is blocking, as Valkey
// flags it). The
// differences are listed in table_gen.go (builtinDifferences), and a test
// checks the committed table against a live server of either kind at the
// same major.minor version, as that server described it.
//
// Refresh replaces a Classifier's table with one built from the connected
// server's COMMAND reply, so module commands and the commands of newer
// servers are classified by that server's flags. Refresh is explicit: the
// classifier never talks to Redis on its own.
//
// Subcommands are classified as subcommands: OBJECT ENCODING, XINFO
// STREAM, MEMORY USAGE and CONFIG GET are looked up as "object|encoding",
// "xinfo|stream", … as Redis names them. Command and subcommand names are
// matched without regard to ASCII case.
//
// # Keys, for cluster routing
//
// A Redis Cluster client sends each command to the node that owns its
// first key's hash slot, and a command without a key to any node; so it
// needs, per command, which argument is that key. FirstKey answers it
// (an index in the arguments, or -1 for PING, INFO, CLUSTER ..., SCRIPT
// ..., an unknown command), and KeyString gives the argument as the bytes
// go-redis sends for it, which are what the client hashes (a key given as
// an int is sent, and hashed, as its decimal text). The positions come
// from the same COMMAND replies as the flags (each entry's first key, last
// key and step, kept in the table), because the servers are the authority
// on their own commands and a second hand-written list would drift; where
// Redis and Valkey report different ranges, the table keeps the one safe
// for routing (a key over none, the earlier of two). Commands whose keys
// move (COMMAND flags them movablekeys) are read by rules: the key count of
// EVAL, FCALL, ZUNION, LMPOP, BLMPOP and the like, the STREAMS keyword of
// XREAD and XREADGROUP, MIGRATE's KEYS; the others movable (SORT,
// GEORADIUS, ZUNIONSTORE, ...) have their first key at the fixed position
// COMMAND reports. FirstKey never panics and does not allocate.
//
//	classify.FirstKey([]any{"get", "user:{42}"})                  // 1
//	classify.FirstKey([]any{"eval", "return 1", 1, "user:{42}"})  // 3
//	classify.FirstKey([]any{"object", "encoding", "user:{42}"})   // 2
//	classify.FirstKey([]any{"ping"})                              // -1
//
// # The rules
//
// A command may run on a replica only if the first rule that applies says
// so. In order:
//
//  1. No arguments, a first argument that is not text (string, []byte,
//     *string), an unknown command, a container command without its
//     subcommand (OBJECT) or with an unknown one: master.
//  2. Transactions (MULTI, EXEC, DISCARD, WATCH, UNWATCH): master. A
//     pipeline containing any of them is therefore not read-only, which
//     covers every command inside a transaction.
//  3. SELECT: master (it changes the connection's database).
//  4. Commands that describe or manage the server, with every subcommand:
//     ACL, BGREWRITEAOF, BGSAVE, CLIENT, CLUSTER, COMMAND, CONFIG, DEBUG,
//     FAILOVER, INFO, LASTSAVE, LATENCY, LOLWUT, MEMORY, MODULE, MONITOR,
//     PFDEBUG, PFSELFTEST, PSYNC, REPLCONF, REPLICAOF, ROLE, SAVE, SHUTDOWN,
//     SLAVEOF, SLOWLOG, SYNC; and any command Redis flags admin: master.
//     A dashboard asking INFO or CLIENT LIST means the server it believes
//     it is connected to, not whichever replica answers.
//  5. Scripts: EVAL is master unless its body starts with a "#!lua"
//     shebang that Redis accepts and whose flags include no-writes (then
//     Redis itself runs it read-only, and allows it on a replica).
//     EVALSHA and FCALL are master: the classifier cannot see the script
//     or function. EVAL_RO, EVALSHA_RO and FCALL_RO may run on a replica.
//  6. Redis flags the command write, pubsub or blocking: master. Blocking
//     includes XREAD (Redis flags it blocking even without BLOCK).
//  7. Redis flags the command readonly: replica allowed.
//  8. Anything else (PING, ECHO, TIME, HELLO, AUTH, module commands not
//     flagged readonly): master.
//
// Where the rules override Redis's readonly flag (Redis 7.0): LOLWUT and
// MEMORY USAGE (rule 4) and XREAD (rule 6) are flagged readonly but go to
// the master. INFO, ROLE, CLIENT, CONFIG, SLOWLOG, LATENCY and the other
// server commands are not flagged readonly by Redis at all; rule 4 makes
// the decision explicit (and keeps it if a server or module flags one
// readonly). Data commands Redis flags readonly stay read-only, including
// KEYS, SCAN, DBSIZE, RANDOMKEY and TOUCH.
//
// # Scripts and shebangs
//
// Redis 7 reads flags from the first line of an EVAL body when it starts
// with "#!". The classifier follows Redis's parser: "#!" must be the very
// first bytes (a body starting with whitespace has no shebang); the line
// must end with a newline; its words (separated by spaces, tabs or carriage
// returns) must be "#!lua" and then only "flags=a,b,…" with flags Redis
// knows (no-writes, allow-oom, allow-stale, no-cluster,
// allow-cross-slot-keys), case-sensitive. A shebang Redis rejects, such as
// "#!lua name=x flags=no-writes" (name= is for FUNCTION LOAD, not EVAL),
// makes EVAL fail everywhere, so it is classified as master. Quoted words
// and escapes, which Redis's splitter accepts, are not reproduced: such a
// shebang is classified as master, the safe direction.
//
// go-redis's *redis.Script: Run sends EVALSHA (then EVAL on NOSCRIPT), so
// it is classified as master; RunRO sends EVALSHA_RO / EVAL_RO, which may
// run on a replica. Use RunRO (or EvalRO, EvalShaRO, FCallRO) for scripts
// that only read. Likewise SORT, GEORADIUS and GEORADIUSBYMEMBER are write
// commands (they take STORE); use SORT_RO, GEORADIUS_RO, … to read on a
// replica.
//
// # Performance
//
// ReadOnly, ReadOnlyArgs, ReadOnlyPipeline and FirstKey do not allocate: the command
// name is lower-cased into a stack buffer and looked up in a map built when
// the table is. They read cmd.Args(), not cmd.Name(), which lower-cases
// into a new string. See BENCHMARKS.md for the figures.
//
// # Limits
//
//   - Renamed commands (rename-command) are unknown, hence master: COMMAND
//     reports them under their original names.
//   - A command sent inside a transaction by other means than the pipeline
//     being classified (MULTI on a pinned connection, then commands one by
//     one) is classified alone; route the whole connection to the master.
package classify
