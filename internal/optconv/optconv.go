// Package optconv converts go-redis's option structs into rediskit's
// configs field by field (sentinel.FromFailoverOptions,
// rediskit.FromUniversalOptions): every exported field has a rule, and a
// field no rule knows (a later go-redis added it) is refused when set, so
// that nothing is silently dropped.
package optconv

import (
	"fmt"
	"reflect"
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
