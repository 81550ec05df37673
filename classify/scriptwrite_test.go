package classify

import "testing"

// TestScriptWrite: which commands the exactly-once path may run inside a
// script, and why the others not.
func TestScriptWrite(t *testing.T) {
	c := New()
	for _, tc := range []struct {
		args []any
		want string
	}{
		{[]any{"set", "k", "v"}, ""},
		{[]any{"SET", "k", "v", "GET"}, ""},
		{[]any{"incr", "k"}, ""},
		{[]any{"mset", "{a}1", "v", "{a}2", "v"}, ""},
		{[]any{"zunionstore", "dst", 2, "a", "b"}, ""},
		{[]any{"xgroup", "create", "s", "g", "$"}, ""},
		{[]any{"xreadgroup", "group", "g", "c", "streams", "s", ">"}, ""},
		{[]any{"xreadgroup", "group", "g", "c", "block", 0, "streams", "s", ">"}, "a blocking command"},
		{[]any{"blpop", "l", 0}, "a blocking command"},
		{[]any{"get", "k"}, "not a write"},
		{[]any{"publish", "ch", "m"}, "not a write"},
		{[]any{"flushall"}, "a command without keys"},
		{[]any{"eval", "return 1", 0}, "not allowed in scripts"},
		{[]any{"multi"}, "not allowed in scripts"},
		{[]any{"nosuchcommand", "k"}, "a command the command table does not know"},
		{[]any{}, "a command the command table does not know"},
		{[]any{42, "k"}, "a command the command table does not know"},
	} {
		if got := c.ScriptWrite(tc.args); got != tc.want {
			t.Errorf("ScriptWrite(%v) = %q, want %q", tc.args, got, tc.want)
		}
	}
}
