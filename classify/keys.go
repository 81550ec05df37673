package classify

import (
	"encoding"
	"iter"
	"net"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/rediskit/rediskit/classify/internal/cmdinfo"
)

// keyRule says how a command's first key is found: at the table's fixed
// position, or by reading the arguments of a command whose keys move
// (Redis flags it movablekeys).
type keyRule uint8

const (
	// keysFixed: the table's first key, when it is > 0 (none otherwise).
	keysFixed keyRule = iota
	// keysNumkeys: a key count at entry.numkeysAt, the keys right after
	// it (EVAL, FCALL, ZUNION, LMPOP, BLMPOP, ...).
	keysNumkeys
	// keysStreams: the first argument after the STREAMS keyword (XREAD,
	// XREADGROUP).
	keysStreams
	// keysMigrate: argument 3, or, when it is "", the first after KEYS.
	keysMigrate
	// keysStoreNumkeys: a destination at 1 (the first key, as keysFixed),
	// then a key count at entry.numkeysAt and the keys after it
	// (ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE).
	keysStoreNumkeys
)

// keyRuleFor returns the rule for a command or subcommand Redis names
// name, and for keysNumkeys the position of the key count.
func keyRuleFor(name string) (keyRule, int) {
	switch name {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro",
		"blmpop", "bzmpop":
		return keysNumkeys, 2
	case "zunion", "zinter", "zdiff", "zintercard", "sintercard", "lmpop", "zmpop":
		return keysNumkeys, 1
	case "xread", "xreadgroup":
		return keysStreams, 0
	case "migrate":
		return keysMigrate, 0
	case "zunionstore", "zinterstore", "zdiffstore":
		return keysStoreNumkeys, 2
	}
	// SORT, SORT_RO, GEORADIUS*, GEOSEARCH* and any other command: the
	// table.
	return keysFixed, 0
}

// firstKey returns the index in args of the command's first key, or -1.
// It does not allocate (argText formats numbers into a stack buffer).
func (t *table) firstKey(args []any) int {
	return firstKeyOf(args, t.entryOf(args))
}

// firstKeyOf is firstKey with the entry of args (entryOf) looked up.
func firstKeyOf(args []any, e *entry) int {
	if e == nil {
		return -1
	}
	switch e.keyRule {
	case keysNumkeys:
		return numkeysFirstKey(args, e.numkeysAt)
	case keysStreams:
		return streamsFirstKey(args)
	case keysMigrate:
		return migrateFirstKey(args)
	}
	if first := e.keys.First; first > 0 && first < len(args) {
		return first
	}
	return -1
}

// entryOf returns the table entry of the command args name: a container's
// subcommand entry (OBJECT ENCODING), or nil for an unknown command, a
// container without a known subcommand, or no command at all.
func (t *table) entryOf(args []any) *entry {
	return t.subEntry(args, t.command(args))
}

// subEntry is entryOf with the command's entry e (t.command(args))
// looked up.
func (t *table) subEntry(args []any, e *entry) *entry {
	if e == nil || e.subs == nil {
		return e
	}
	if len(args) < 2 {
		return nil
	}
	sub, ok := argString(args[1])
	if !ok {
		return nil
	}
	return lookup(e.subs, sub, t.maxName)
}

// numkeysFirstKey: the key count at args[at], the first key after it. A
// count that is missing, not an integer, below 1 or larger than the
// arguments that follow gives -1, as COMMAND GETKEYS finds no key there
// (and the server refuses the command).
func numkeysFirstKey(args []any, at int) int {
	if at >= len(args) {
		return -1
	}
	n, ok := argInt(args[at])
	if !ok || n < 1 || n > int64(len(args)-at-1) {
		return -1
	}
	return at + 1
}

// option is a word that takes values before a keyword searched for, with
// how many arguments after it are its values.
type option struct {
	word   string
	values int
}

// xreadOptions and migrateOptions are the options skipped, with their
// values, on the way to STREAMS and KEYS. Fixed tables, never written.
var (
	xreadOptions   = [...]option{{"block", 1}, {"count", 1}, {"group", 2}}
	migrateOptions = [...]option{{"auth", 1}, {"auth2", 2}}
)

// streamsFirstKey: the first argument after the STREAMS keyword of XREAD
// and XREADGROUP. The options before it are skipped with their values
// (BLOCK ms, COUNT n, GROUP group consumer), so that a group or consumer
// named "streams" is not taken for the keyword; an unknown word is skipped
// alone, so that an option a newer server adds does not hide the keyword.
func streamsFirstKey(args []any) int {
	return afterKeyword(args, 1, "streams", xreadOptions[:])
}

// migrateFirstKey: MIGRATE host port key|"" db timeout [COPY] [REPLACE]
// [AUTH password | AUTH2 username password] [KEYS key ...]. The key at 3,
// or, when it is "", the first after KEYS; passwords are skipped so that
// one spelled "keys" is not taken for the keyword.
func migrateFirstKey(args []any) int {
	const keyAt, optionsAt = 3, 6
	if len(args) <= keyAt {
		return -1
	}
	var buf [textBufSize]byte
	key, ok := argText(args[keyAt], &buf)
	if !ok {
		return -1
	}
	if key != "" {
		return keyAt
	}
	return afterKeyword(args, optionsAt, "keys", migrateOptions[:])
}

// afterKeyword returns the index of the argument after keyword (words are
// matched without regard to ASCII case), searched from args[from] on, or
// -1 when it is missing, last, or an argument on the way is not one
// go-redis can send. The values of the options are skipped unread.
func afterKeyword(args []any, from int, keyword string, options []option) int {
	var buf [textBufSize]byte
	for i := from; i < len(args); i++ {
		word, ok := argText(args[i], &buf)
		if !ok {
			return -1
		}
		if strings.EqualFold(word, keyword) {
			if i+1 < len(args) {
				return i + 1
			}
			return -1
		}
		for _, o := range options {
			if strings.EqualFold(word, o.word) {
				i += o.values
				break
			}
		}
	}
	return -1
}

// argInt reads an argument as the integer Redis parses from the text
// go-redis sends for it (an int, int64, "2", []byte("2"), ...): an optional
// '-' and decimal digits without a leading zero, as Redis's string2ll
// accepts them, up to 18 digits.
func argInt(a any) (int64, bool) {
	var buf [textBufSize]byte
	s, ok := argText(a, &buf)
	if !ok {
		return 0, false
	}
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	if s == "" || len(s) > 18 || (s[0] == '0' && (len(s) > 1 || neg)) {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	if neg {
		n = -n
	}
	return n, true
}

// textBufSize holds any number go-redis formats (20 digits and a sign; a
// float64 in 'f' format may be longer, and then argText allocates) and an
// RFC 3339 time.
const textBufSize = 64

// argText returns an argument as the bytes go-redis's writer sends for it
// (internal/proto.Writer.WriteArg in go-redis v9): text as it is, nil as
// "", the built-in integer types and booleans in decimal (true is "1"),
// floats as strconv formats them with 'f' and the shortest precision,
// time.Time in RFC 3339 with nanoseconds, time.Duration as nanoseconds,
// net.IP as its bytes, and a pointer to any of those (but net.IP) as what
// it points to, a nil one as the zero value. Numbers are formatted into
// buf, which the result may point into; a []byte is viewed, not copied.
// Types defined on those (type ID int) are not what go-redis's writer
// accepts, and are refused. An encoding.BinaryMarshaler, which go-redis
// also accepts, is not called here (see KeyString): reading arguments
// never runs the caller's code.
func argText(a any, buf *[textBufSize]byte) (string, bool) {
	// The types go-redis's own commands send, without reflection.
	switch v := a.(type) {
	case nil:
		return "", true
	case string:
		return v, true
	case []byte:
		return viewBuf(v), true
	case int:
		return viewBuf(strconv.AppendInt(buf[:0], int64(v), 10)), true
	case int64:
		return viewBuf(strconv.AppendInt(buf[:0], v, 10)), true
	case *string:
		return deref(v), true
	case time.Time:
		return viewBuf(v.AppendFormat(buf[:0], time.RFC3339Nano)), true
	case *time.Time:
		return viewBuf(deref(v).AppendFormat(buf[:0], time.RFC3339Nano)), true
	case time.Duration:
		return viewBuf(strconv.AppendInt(buf[:0], v.Nanoseconds(), 10)), true
	case *time.Duration:
		return viewBuf(strconv.AppendInt(buf[:0], deref(v).Nanoseconds(), 10)), true
	case net.IP:
		return viewBuf(v), true
	}
	// The other built-in numbers and bool, and pointers to them.
	rv := reflect.ValueOf(a)
	if rv.Kind() == reflect.Pointer {
		if rv.IsNil() {
			rv = reflect.Zero(rv.Type().Elem())
		} else {
			rv = rv.Elem()
		}
	}
	if typ := rv.Type(); typ.PkgPath() != "" || typ.Name() == "" {
		return "", false // a defined type, or not a scalar
	}
	switch rv.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return viewBuf(strconv.AppendInt(buf[:0], rv.Int(), 10)), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return viewBuf(strconv.AppendUint(buf[:0], rv.Uint(), 10)), true
	case reflect.Float32, reflect.Float64:
		return viewBuf(strconv.AppendFloat(buf[:0], rv.Float(), 'f', -1, 64)), true
	case reflect.Bool:
		if rv.Bool() {
			return "1", true
		}
		return "0", true
	}
	return "", false
}

// viewBuf views b as a string without copying; the caller reads it only
// while b is not changed.
func viewBuf(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b)) //nolint:gosec // read during the call only, see argText
}

// deref is *p, or the zero value for a nil p, as go-redis writes a nil
// pointer argument.
func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// FirstKey returns the index in args of the command's first key, or -1
// when it has none (PING, INFO, CLUSTER ..., SCRIPT ..., an unknown
// command, a container without a known subcommand), so that a cluster
// client may send it to any node. args are a command as go-redis sends it:
// args[0] is the name and, for a container (OBJECT ENCODING, MEMORY USAGE,
// XINFO STREAM), args[1] the subcommand, matched without regard to ASCII
// case. The position is the table's (COMMAND's first key), except for the
// commands whose keys move: EVAL, EVALSHA, FCALL and their _RO forms (key
// count at 2, first key at 3 unless the count is 0), ZUNION, ZINTER,
// ZDIFF, ZINTERCARD, SINTERCARD, LMPOP, ZMPOP (count at 1), BLMPOP, BZMPOP
// (count at 2), XREAD and XREADGROUP (the first argument after STREAMS)
// and MIGRATE (3, or the first after KEYS when it is ""). A key count may
// be anything go-redis sends as a decimal integer (an int, an int64, "2",
// []byte("2"), ...); one that is missing, not an integer, below 1 or more
// than the arguments that follow gives -1, as for COMMAND GETKEYS.
// FirstKey never panics, never calls the caller's code (MarshalBinary),
// and does not allocate for the arguments go-redis's commands hold.
// Hash the key with KeyString(args[i]).
func (c *Classifier) FirstKey(args []any) int {
	return c.table().firstKey(args)
}

// Route is what a cluster client asks of every command, with one look at
// the table: ReadOnlyArgs(args...) and FirstKey(args).
func (c *Classifier) Route(args []any) (readOnly bool, firstKey int) {
	t := c.table()
	e := t.command(args)
	return t.decideEntry(args, e).ReadOnly, firstKeyOf(args, t.subEntry(args, e))
}

// KeyIndexes returns the indexes in args of every key of the command, in
// order (none for a command without keys or one the table does not know):
// the table's range (first, last, step: MSET's every other argument from
// 1, DEL's every argument), the keys after the key count of a command
// whose keys move (EVAL, FCALL, ZUNION, LMPOP...; ZUNIONSTORE's
// destination first), the first half of what follows STREAMS (XREAD,
// XREADGROUP), MIGRATE's key or the keys after KEYS. Not found: the
// destination an option names (SORT ... STORE, GEORADIUS ... STORE and
// STOREDIST). Like FirstKey it never panics, calls none of the caller's code,
// and does not allocate for the arguments go-redis's commands hold.
func (c *Classifier) KeyIndexes(args []any) iter.Seq[int] {
	t := c.table()
	return func(yield func(int) bool) {
		dest, from, to, step := t.keyRange(args)
		if dest > 0 && !yield(dest) {
			return
		}
		for i := from; from > 0 && i <= to; i += step {
			if !yield(i) {
				return
			}
		}
	}
}

// keyRange is KeyIndexes's work: the keys are args[dest] when dest > 0,
// then args[from..to] every step when from > 0.
func (t *table) keyRange(args []any) (dest, from, to, step int) {
	e := t.entryOf(args)
	if e == nil {
		return -1, -1, -1, 1
	}
	// counted is the key count at numkeysAt and the keys after it.
	counted := func() (int, int) {
		first := numkeysFirstKey(args, e.numkeysAt)
		if first < 0 {
			return -1, -1
		}
		n, _ := argInt(args[e.numkeysAt]) // checked by numkeysFirstKey
		return first, first + int(n) - 1
	}
	dest, from, to, step = -1, -1, -1, 1
	switch e.keyRule {
	case keysNumkeys:
		from, to = counted()
	case keysStoreNumkeys:
		if e.keys.First > 0 && e.keys.First < len(args) {
			dest = e.keys.First
			from, to = counted()
		}
	case keysStreams:
		if first := streamsFirstKey(args); first > 0 {
			// STREAMS k1 k2 ... id1 id2 ...: as many keys as ids.
			from, to = first, first+(len(args)-first)/2-1
		}
	case keysMigrate:
		from = migrateFirstKey(args)
		to = len(args) - 1
		if from == 3 {
			to = 3 // one key; "" names KEYS k1 k2 ...
		}
	default:
		k := e.keys
		if k.First > 0 && k.First < len(args) {
			from, to, step = k.First, k.Last, max(k.Step, 1)
			if to < 0 {
				to += len(args)
			}
			to = min(to, len(args)-1)
		}
	}
	return dest, from, to, step
}

// FirstKey is Classifier.FirstKey with the built-in table.
func FirstKey(args []any) int { return (*Classifier)(nil).FirstKey(args) }

// KeyString returns an argument as the bytes go-redis sends for it, which
// is what a cluster client hashes to a slot: a string, []byte or *string
// as it is (a nil *string or a nil argument as ""), integers, booleans
// (1 and 0), floats, time.Time, time.Duration and net.IP formatted as
// go-redis v9's writer formats them, and an encoding.BinaryMarshaler's
// MarshalBinary. It returns false for a type go-redis cannot send (its
// writer then fails the command) and for a MarshalBinary error. A []byte
// is copied.
func KeyString(arg any) (string, bool) {
	switch v := arg.(type) {
	case string:
		return v, true // immutable: no copy needed
	case *string:
		return deref(v), true
	}
	var buf [textBufSize]byte
	if s, ok := argText(arg, &buf); ok {
		return strings.Clone(s), true // it may view buf or the caller's []byte
	}
	// go-redis tries MarshalBinary after every type argText knows (the
	// only ones of them that implement it, time.Time and *time.Time, are
	// sent as text).
	if m, ok := arg.(encoding.BinaryMarshaler); ok {
		b, err := m.MarshalBinary()
		if err != nil {
			return "", false
		}
		return string(b), true
	}
	return "", false
}

// setKeys sets an entry's key positions and rule from its spec.
func (e *entry) setKeys(s cmdinfo.Spec) {
	e.keys = s.Keys
	e.keyRule, e.numkeysAt = keyRuleFor(s.Name)
}
