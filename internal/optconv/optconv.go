package optconv

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Refused is one field a conversion refused.
type Refused struct {
	// Field is the field's name in the go-redis struct.
	Field string
	// Value is the value refused: a number, a boolean or a duration as
	// written in Go, or "set" for anything else (never quoted: it could
	// be a secret).
	Value string
	// Reason says why, and what to do instead.
	Reason string
}

// Rule converts one field of opts into state, and returns why it is
// refused ("" when it is not).
type Rule[O, S any] func(opts *O, state *S) (refused string)

// UnknownField is the reason of a set field no rule knows.
const UnknownField = "this version of rediskit does not know the field (a later go-redis added it), so it cannot tell what converting it would change; leave it unset"

// Convert applies rules to every exported field of *opts, in order, and
// returns the fields refused.
func Convert[O, S any](opts *O, state *S, rules map[string]Rule[O, S]) []Refused {
	var refused []Refused
	v := reflect.ValueOf(opts).Elem()
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		rule, ok := rules[f.Name]
		var reason string
		switch {
		case ok:
			reason = rule(opts, state)
		case !v.Field(i).IsZero():
			reason = UnknownField
		}
		if reason != "" {
			refused = append(refused, Refused{Field: f.Name, Value: shownValue(v.Field(i)), Reason: reason})
		}
	}
	return refused
}

// Message is the error text of refused fields of a go-redis struct
// (typ, e.g. "redis.FailoverOptions"), prefixed by pkg ("sentinel").
func Message(pkg, typ string, refused []Refused) string {
	var b strings.Builder
	if len(refused) == 1 {
		fmt.Fprintf(&b, "%s: a %s field has no counterpart: ", pkg, typ)
	} else {
		fmt.Fprintf(&b, "%s: %d %s fields have no counterpart: ", pkg, len(refused), typ)
	}
	for i, r := range refused {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s (%s): %s", r.Field, r.Value, r.Reason)
	}
	return b.String()
}

// shownValue is a refused value as an error may show it: numbers,
// booleans and durations; "set" for anything else.
func shownValue(v reflect.Value) string {
	if d, ok := v.Interface().(time.Duration); ok {
		return d.String()
	}
	switch v.Kind() {
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(v.Uint(), 10)
	}
	return "set"
}

// Fields are the exported fields of O, in order.
func Fields[O any]() []string {
	var names []string
	t := reflect.TypeFor[O]()
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			names = append(names, f.Name)
		}
	}
	return names
}

// CheckRules fails tb unless rules has a rule for every exported field of
// O and none for a field O lacks (where names the rules, for the message):
// a go-redis upgrade that adds a field fails the check until it is
// handled.
func CheckRules[O, S any](tb interface {
	Helper()
	Errorf(format string, args ...any)
}, rules map[string]Rule[O, S], where string) {
	tb.Helper()
	t := reflect.TypeFor[O]()
	have := map[string]bool{}
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.IsExported() {
			have[f.Name] = true
			if _, ok := rules[f.Name]; !ok {
				tb.Errorf("%s.%s is neither mapped nor refused: add a rule to %s, a case to its test and a row to the table in docs/go-redis.md", t, f.Name, where)
			}
		}
	}
	for name := range rules {
		if !have[name] {
			tb.Errorf("%s has a rule for %s, which %s no longer has", where, name, t)
		}
	}
}

// RefusedWhen is the rule of a field rediskit has no counterpart for: its
// value is refused with reason when set reports it set, and a zero value
// converts to nothing.
func RefusedWhen[O, S any](reason string, set func(*O) bool) Rule[O, S] {
	return func(opts *O, _ *S) string {
		if set(opts) {
			return reason
		}
		return ""
	}
}

// Accepted is the rule of a field every value of which converts to
// nothing: rediskit already does what it asks, or it has no effect.
func Accepted[O, S any]() Rule[O, S] {
	return func(*O, *S) string { return "" }
}

// The reasons every conversion gives for go-redis's settings rediskit
// does not take.
const (
	ReasonRetries = "rediskit alone decides what is re-run: a read once, a write only when it provably did not run " +
		"(go-redis re-sends a write that timed out, which can then run twice); leave it 0 or set -1"
	ReasonRetryBackoff       = "rediskit re-runs work at once on the re-resolved node, without a backoff; leave it unset"
	ReasonDialRetries        = "rediskit dials once, and a failed dial starts a re-resolution instead of more attempts at the same address; leave it unset"
	ReasonUnbounded          = "rediskit bounds every dial, read and write; leave it 0 for the default or give a positive bound"
	ReasonFailingTimeout     = "rediskit leaves a node out for as long as its checks fail, and has no such setting; leave it unset"
	ReasonPushNotifications  = "rediskit's node clients come and go with the topology and handle their own push messages; leave it unset"
	ReasonMaintNotifications = "rediskit turns maintenance notifications off on its connections and follows topology changes itself; leave it unset"
	ReasonCache              = "rediskit has no client-side cache in this release; leave it unset"
)

// CheckRefused fails tb unless refused names exactly the fields of want
// (in any order), each with a reason, and errText names typ (e.g.
// "redis.ClusterOptions") and does not show secret: the check every
// converter's table test makes of a refusal.
func CheckRefused(tb interface {
	Helper()
	Fatalf(format string, args ...any)
}, refused []Refused, errText string, want []string, typ, secret string) {
	tb.Helper()
	var got []string
	for _, r := range refused {
		got = append(got, r.Field)
		if r.Reason == "" {
			tb.Fatalf("%s refused without a reason", r.Field)
		}
	}
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		tb.Fatalf("refused %v, want %v (%s)", got, want, errText)
	}
	if strings.Contains(errText, secret) || !strings.Contains(errText, typ) {
		tb.Fatalf("error %q: want it to name %s and not show the password", errText, typ)
	}
}

// CheckDocTable fails tb unless the section of the Markdown file at path
// that starts with heading (up to the next "## " heading) has a table row
// for every exported field of O: the field in back quotes at the start of
// a row ("| `F`") or in a row's list of fields (", `F`"). A go-redis
// upgrade that adds a field fails the check until the table says what
// becomes of it.
func CheckDocTable[O any](tb interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}, path, heading string) {
	tb.Helper()
	b, err := os.ReadFile(path) //nolint:gosec // a test names a document of the repository
	if err != nil {
		tb.Fatalf("%v", err)
	}
	doc := string(b)
	start := strings.Index(doc, heading+"\n")
	if start < 0 {
		tb.Fatalf("%s has no %q section", path, heading)
	}
	section := doc[start+len(heading):]
	if end := strings.Index(section, "\n## "); end >= 0 {
		section = section[:end]
	}
	t := reflect.TypeFor[O]()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		if !strings.Contains(section, "| `"+f.Name+"`") && !strings.Contains(section, ", `"+f.Name+"`") {
			tb.Errorf("the table of %q in %s has no row for %s.%s", heading, path, t, f.Name)
		}
	}
}
