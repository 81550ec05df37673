package classify

import "strings"

// shebangNoWrites reports whether an EVAL body starts with a shebang that
// Redis accepts and whose flags include no-writes, so that Redis itself runs
// the script as read-only (and lets it run on a read-only replica).
//
// It follows Redis 7's evalExtractShebangFlags: the body must start with
// "#!" at its very first byte (no leading whitespace); the shebang is the
// first line and must end with "\n"; it is split into words, the first of
// which must be exactly "#!lua"; every other word must be "flags=" followed
// by a comma-separated list of known flags (an empty list is allowed, an
// empty element is not). Redis rejects anything else, and a rejected script
// runs nowhere, so it is not read-only.
//
// Redis splits the line with sdssplitargs, which also understands quoted
// words ("flags=no-writes") and escapes. Those are not reproduced: a
// shebang line containing a quote, a backslash, a NUL, \v or \f is treated
// as not read-only. That is the safe direction: such a script goes to the
// master, where it runs exactly as on a replica.
func shebangNoWrites(body string) bool {
	if !strings.HasPrefix(body, "#!") {
		return false
	}
	nl := strings.IndexByte(body, '\n')
	if nl < 0 {
		return false // Redis: "Invalid script shebang"
	}
	line := body[:nl]
	if strings.ContainsAny(line, "\"'\\\x00\v\f") {
		return false
	}
	engine, noWrites := false, false
	for {
		word, rest, ok := nextWord(line)
		if !ok {
			break
		}
		line = rest
		if !engine {
			if word != "#!lua" {
				return false // Redis: "Unexpected engine in script shebang"
			}
			engine = true
			continue
		}
		flags, ok := strings.CutPrefix(word, "flags=")
		if !ok {
			return false // Redis: "Unknown lua shebang option"
		}
		for flags != "" {
			flag, more, found := strings.Cut(flags, ",")
			switch flag {
			case "no-writes":
				noWrites = true
			case "allow-oom", "allow-stale", "no-cluster", "allow-cross-slot-keys":
			default:
				return false // Redis: "Unexpected flag in script shebang", also for ""
			}
			if found && more == "" {
				return false // a trailing comma is an empty flag
			}
			flags = more
		}
	}
	return engine && noWrites
}

// nextWord splits off the next word of a shebang line, separated by
// spaces, tabs or carriage returns (the separators sdssplitargs uses
// between unquoted words, apart from the newline that ended the line and
// the characters shebangNoWrites rejects first).
func nextWord(line string) (word, rest string, ok bool) {
	start := 0
	for start < len(line) && isShebangSpace(line[start]) {
		start++
	}
	if start == len(line) {
		return "", "", false
	}
	end := start
	for end < len(line) && !isShebangSpace(line[end]) {
		end++
	}
	return line[start:end], line[end:], true
}

func isShebangSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' }
