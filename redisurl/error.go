package redisurl

import (
	"strconv"
	"strings"
)

// Error is the error of Parse, TLSConfig and Options. Use errors.As to read
// its fields:
//
//	var e *redisurl.Error
//	if errors.As(err, &e) && e.Field == "sentinel address" { … }
//
// It never holds a password: Value is only set from parts of the URL that
// cannot contain one (see the package documentation, "Secrets").
type Error struct {
	// Field is the part of the URL at fault: "scheme", "address" (a
	// server's, or a cluster seed's in the host list), "sentinel address",
	// "socket path", "master name", "db", "path", "userinfo", "URL",
	// "parameter" (an unknown one), or a parameter's name ("readFrom",
	// "dialTimeout", "caFile", "addr", …).
	Field string
	// Value is the offending text as written in the URL, or empty when it
	// is missing or could hold a secret.
	Value string
	// Reason says what is wrong. "unknown" and "missing" read as "unknown
	// scheme", "missing master name"; other reasons follow the field, as
	// in `sentinel address "10.0.0.1:abc": invalid port`.
	Reason string
	// Hint says what to write instead, when there is something to say.
	Hint string
	// Err is the underlying error (reading a CA file, parsing a
	// certificate), if any.
	Err error
}

// Reasons with a fixed meaning; others are free text.
const (
	ReasonUnknown = "unknown"
	ReasonMissing = "missing"
)

// maxValue bounds how much of a URL an error message quotes.
const maxValue = 100

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("redisurl: ")
	value := e.Value
	if len(value) > maxValue {
		value = value[:maxValue] + "…"
	}
	if e.Reason == ReasonUnknown || e.Reason == ReasonMissing {
		b.WriteString(e.Reason)
		b.WriteString(" ")
		b.WriteString(e.Field)
		if value != "" {
			b.WriteString(" ")
			b.WriteString(strconv.Quote(value))
		}
	} else {
		b.WriteString(e.Field)
		if value != "" {
			b.WriteString(" ")
			b.WriteString(strconv.Quote(value))
		}
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	if e.Hint != "" {
		b.WriteString(" (")
		b.WriteString(e.Hint)
		b.WriteString(")")
	}
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// closest returns the candidate nearest to s (edit distance at most 2,
// ignoring case), for "did you mean" hints, or "".
func closest(s string, candidates ...string) string {
	best, bestD := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(s), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance, bounded for long inputs.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		if a == b {
			return 0
		}
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
