package logdedup_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/internal/logdedup"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// jsonLogger logs JSON without the time into buf.
func jsonLogger(buf *bytes.Buffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
}

type secret string

func (s secret) LogValue() slog.Value { return slog.StringValue("xxxxx") }

type groupValuer struct{}

func (groupValuer) LogValue() slog.Value { return slog.GroupValue(slog.Int("a", 1)) }

func TestDedup(t *testing.T) {
	for _, tc := range []struct {
		name string
		log  func(caller *slog.Logger)
		want string
	}{
		{"a key bound at two layers", func(l *slog.Logger) {
			logdedup.Logger(l).With("rediskit.master_name", "m").With("rediskit.master_name", "m").Info("x", "rediskit.master_name", "m")
		}, `{"level":"INFO","msg":"x","rediskit.master_name":"m"}`},
		// Out of the wrapper's reach, and why rediskit binds its own keys:
		// the caller's handler has formatted what the caller bound.
		{"the caller's own binding stays the caller's", func(l *slog.Logger) {
			logdedup.Logger(l.With("master_name", "m", "component", "sentinel")).
				With("rediskit.master_name", "m").With("rediskit.master_name", "m", "rediskit.component", "replica prober").Info("x")
		}, `{"level":"INFO","msg":"x","master_name":"m","component":"sentinel","rediskit.master_name":"m","rediskit.component":"replica prober"}`},
		{"the inner With wins", func(l *slog.Logger) {
			logdedup.Logger(l).With("component", "sentinel").With("component", "replica prober").Info("x")
		}, `{"level":"INFO","msg":"x","component":"replica prober"}`},
		{"the record's own value wins, at the first position", func(l *slog.Logger) {
			logdedup.Logger(l).With("a", 1, "b", 2).Info("x", "a", 3, "c", 4)
		}, `{"level":"INFO","msg":"x","a":3,"b":2,"c":4}`},
		{"a key repeated within one record", func(l *slog.Logger) {
			logdedup.Logger(l).Info("x", "a", 1, "a", 2)
		}, `{"level":"INFO","msg":"x","a":2}`},
		{"the same key in different groups is two keys", func(l *slog.Logger) {
			logdedup.Logger(l).With("a", 1).WithGroup("g").With("a", 2).Info("x", "a", 3)
		}, `{"level":"INFO","msg":"x","a":1,"g":{"a":3}}`},
		{"groups of one key merge", func(l *slog.Logger) {
			logdedup.Logger(l).With(slog.Group("g", "a", 1, "b", 1)).Info("x", slog.Group("g", "b", 2, "c", 2))
		}, `{"level":"INFO","msg":"x","g":{"a":1,"b":2,"c":2}}`},
		{"an opened group merges with a bound one", func(l *slog.Logger) {
			logdedup.Logger(l).With(slog.Group("g", "a", 1)).WithGroup("g").Info("x", "b", 2)
		}, `{"level":"INFO","msg":"x","g":{"a":1,"b":2}}`},
		{"an empty group replaces nothing", func(l *slog.Logger) {
			logdedup.Logger(l).With("g", 1).WithGroup("g").Info("x")
		}, `{"level":"INFO","msg":"x","g":1}`},
		{"a group replaces a value", func(l *slog.Logger) {
			logdedup.Logger(l).With("g", 1).Info("x", slog.Group("g", "a", 2))
		}, `{"level":"INFO","msg":"x","g":{"a":2}}`},
		{"a value replaces a group", func(l *slog.Logger) {
			logdedup.Logger(l).With(slog.Group("g", "a", 2)).Info("x", "g", 1)
		}, `{"level":"INFO","msg":"x","g":1}`},
		{"an inline group is spliced in", func(l *slog.Logger) {
			logdedup.Logger(l).Info("x", "a", 1, slog.Group("", "a", 2, "b", 3))
		}, `{"level":"INFO","msg":"x","a":2,"b":3}`},
		{"LogValuers are resolved, and a group one merges", func(l *slog.Logger) {
			logdedup.Logger(l).With("pw", secret("hunter2"), slog.Group("v", "b", 2)).Info("x", "v", groupValuer{})
		}, `{"level":"INFO","msg":"x","pw":"xxxxx","v":{"b":2,"a":1}}`},
		{"empty attrs are dropped", func(l *slog.Logger) {
			logdedup.Logger(l).With(slog.Attr{}).Info("x", slog.Attr{}, "a", 1)
		}, `{"level":"INFO","msg":"x","a":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			tc.log(jsonLogger(&buf, slog.LevelInfo))
			if got := strings.TrimSpace(buf.String()); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestWrapsOnce(t *testing.T) {
	var buf bytes.Buffer
	l := jsonLogger(&buf, slog.LevelInfo)
	w := logdedup.Logger(l)
	if logdedup.Logger(w) != w || logdedup.New(w.Handler()) != w.Handler() {
		t.Error("wrapping a wrapped logger added a wrapper")
	}
	if logdedup.Logger(w.With("a", 1)).Handler() != w.With("a", 1).Handler() && logdedup.Logger(w.With("a", 1)) == nil {
		t.Error("With of a wrapped logger is not wrapped")
	}
	if logdedup.Logger(nil) != nil {
		t.Error("Logger(nil) is not nil")
	}
	// The level is the caller's handler's.
	w.Debug("hidden")
	w.Info("shown")
	if got := buf.String(); strings.Contains(got, "hidden") || !strings.Contains(got, "shown") {
		t.Errorf("levels not the handler's: %s", got)
	}
	if w.Handler().Enabled(context.Background(), slog.LevelDebug) {
		t.Error("Enabled(Debug) under an Info handler")
	}
}

// duplicateKey returns the first key that an object of the JSON text
// holds twice, at any depth, or "".
func duplicateKey(t testing.TB, text []byte) string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(text))
	var walk func() string
	walk = func() string { // reads one value
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("bad JSON %s: %v", text, err)
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			dup := ""
			for dec.More() {
				k, _ := dec.Token()
				key := k.(string)
				if seen[key] && dup == "" {
					dup = key
				}
				seen[key] = true
				if d := walk(); d != "" && dup == "" {
					dup = key + "." + d
				}
			}
			_, _ = dec.Token()
			return dup
		case json.Delim('['):
			for dec.More() {
				walk()
			}
			_, _ = dec.Token()
		}
		return ""
	}
	return walk()
}

// model is what a record should hold: the last value set at each path,
// with the rules of the package documentation (a value set inside a
// group replaces a value at the group's key; empty groups vanish).
type model map[string]any

func (m model) set(path []string, v any) {
	for _, p := range path[:len(path)-1] {
		sub, ok := m[p].(model)
		if !ok {
			sub = model{}
			m[p] = sub
		}
		m = sub
	}
	m[path[len(path)-1]] = v
}

// ops reads a program from data: bound attributes, groups opened, then a
// record's attributes, each a key from a small set (so that they repeat)
// and a value that is a number or a group of one or two.
type program struct {
	with   []func(*slog.Logger) *slog.Logger
	record []any
	model  model
	groups []string
}

var keys = []string{"a", "b", "master_name", "component", "g"}

func parse(data []byte) *program {
	p := &program{model: model{}}
	n := 0
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := int(data[0])
		data = data[1:]
		n++
		return b
	}
	// attr builds one attribute and records what it sets under prefix.
	attr := func(prefix []string, set func([]string, any)) slog.Attr {
		b := next()
		key := keys[b%len(keys)]
		switch (b / len(keys)) % 4 {
		case 0, 1:
			v := n
			set(append(slices(prefix), key), float64(v))
			return slog.Int(key, v)
		case 2: // a group of two
			k1, k2 := keys[next()%len(keys)], keys[next()%len(keys)]
			v1, v2 := n, n+1000
			set(append(slices(prefix), key, k1), float64(v1))
			set(append(slices(prefix), key, k2), float64(v2))
			return slog.Group(key, k1, v1, k2, v2)
		default: // an inline group of one
			k1 := keys[next()%len(keys)]
			v1 := n
			set(append(slices(prefix), k1), float64(v1))
			return slog.Group("", k1, v1)
		}
	}
	// Bound attributes set their paths in program order, under the
	// groups open when they were bound; the record's come after all of
	// them, under every group opened.
	set := func(path []string, v any) { p.model.set(path, v) }
	var rec [][2]any // path relative to the record's group, value
	setRec := func(path []string, v any) { rec = append(rec, [2]any{path, v}) }
	for len(data) > 0 {
		op := next()
		switch op % 4 {
		case 0:
			a := attr(slices(p.groups), set)
			p.with = append(p.with, func(l *slog.Logger) *slog.Logger { return l.With(a) })
		case 1:
			g := keys[next()%len(keys)]
			p.groups = append(p.groups, g)
			p.with = append(p.with, func(l *slog.Logger) *slog.Logger { return l.WithGroup(g) })
		default:
			p.record = append(p.record, attr(nil, setRec))
		}
	}
	for _, r := range rec {
		p.model.set(append(slices(p.groups), r[0].([]string)...), r[1])
	}
	return p
}

func slices(s []string) []string { return append([]string(nil), s...) }

// prune drops empty groups, as the handlers write them.
func prune(m model) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if sub, ok := v.(model); ok {
			if p := prune(sub); len(p) > 0 {
				out[k] = p
			}
			continue
		}
		out[k] = v
	}
	return out
}

// FuzzNoKeyTwice: whatever the layering of With, WithGroup and a record's
// attributes, the record has no key twice, and holds the last value set at
// every path.
func FuzzNoKeyTwice(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0})
	f.Add([]byte{0, 2, 0, 2, 1, 4, 0, 2, 2, 2})
	f.Add([]byte{0, 4, 1, 4, 2, 9, 0, 1, 3, 14, 1})
	f.Add([]byte{0, 14, 0, 1, 2, 19, 3, 0, 2, 10, 4, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64 {
			return
		}
		p := parse(data)
		var buf bytes.Buffer
		l := logdedup.Logger(jsonLogger(&buf, slog.LevelInfo))
		for _, w := range p.with {
			l = w(l)
		}
		l.Info("x", p.record...)
		line := buf.Bytes()
		if d := duplicateKey(t, line); d != "" {
			t.Fatalf("key %s twice in %s", d, line)
		}
		var got map[string]any
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatal(err)
		}
		delete(got, "level")
		delete(got, "msg")
		want := prune(p.model)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("program %v:\n got  %v\nwant %v\nline %s", data, got, want, line)
		}
	})
}
