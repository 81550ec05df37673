package failure

import (
	"strconv"
	"unicode/utf8"
)

// MaxBrief is the most bytes of Brief's result: enough for any error or
// status line Redis itself writes (they are under 200 bytes), so that only
// a broken or hostile server's text is cut.
const MaxBrief = 512

// Brief returns s, server text to be quoted in an error message or a log,
// cut to at most MaxBrief bytes, marker included, when it is longer: a
// 100 kB error from a server must not be copied whole into every error
// built from it. The cut text ends with "… [truncated N bytes]", N being
// how many bytes of s were left out, and never splits a UTF-8 sequence.
// Nothing else about s is changed.
func Brief(s string) string {
	if len(s) <= MaxBrief {
		return s
	}
	// The marker's number has at most as many digits as len(s).
	keep := MaxBrief - len(markerHead) - len(markerTail) - len(strconv.Itoa(len(s)))
	// Back to the start of the sequence the cut would split; in text that
	// is not UTF-8, no further back than a sequence can be long.
	for back := 0; back < utf8.UTFMax-1 && keep > 0 && !utf8.RuneStart(s[keep]); back++ {
		keep--
	}
	return s[:keep] + markerHead + strconv.Itoa(len(s)-keep) + markerTail
}

// The marker Brief ends cut text with, around the number of bytes cut.
const (
	markerHead = "… [truncated "
	markerTail = " bytes]"
)

// BriefErr is Brief of err's message, or "" for a nil err.
func BriefErr(err error) string {
	if err == nil {
		return ""
	}
	return Brief(err.Error())
}

// Outcome says, for an error message, what a failed piece of work means
// for the caller: notRun (how the client puts "it provably did not run")
// when it did not execute, else whether re-running it is safe (a read) or
// must wait for a check (a write).
func Outcome(write, mayHaveExecuted bool, notRun string) string {
	switch {
	case !mayHaveExecuted:
		return notRun + ": re-running it is safe"
	case write:
		return "it may have executed: check before re-running it"
	default:
		return "it may have run: re-running a read is safe"
	}
}
