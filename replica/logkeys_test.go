package replica_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
)

// keysTwice returns the keys that an object of the JSON record holds more
// than once, at any depth (dotted below the top level).
func keysTwice(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(line))
	var dups []string
	var value func(prefix string)
	value = func(prefix string) {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("a record that is not JSON: %s: %v", line, err)
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				k, _ := dec.Token()
				key := prefix + k.(string)
				if seen[key] {
					dups = append(dups, key)
				}
				seen[key] = true
				value(key + ".")
			}
			_, _ = dec.Token()
		case json.Delim('['):
			for dec.More() {
				value(prefix)
			}
			_, _ = dec.Token()
		}
	}
	value("")
	return dups
}

// No record of a Sentinel client with a replica selector carries a key
// twice: not the client's own context (rediskit.master_name, bound by the
// client and by the prober, and given again by the selector's records),
// and not the caller's, when the caller's logger already has master_name
// and component. Every record keeps the caller's attributes and says
// which deployment (and, from the prober, which component) it is about.
func TestNoRecordHasAKeyTwice(t *testing.T) {
	for _, tc := range []struct {
		name string
		// caller turns the test's logger into the caller's.
		caller func(*slog.Logger, string) *slog.Logger
		// ownLogger gives the selector the caller's logger too, instead
		// of leaving it the client's.
		ownLogger bool
	}{
		{"a plain logger", func(l *slog.Logger, _ string) *slog.Logger { return l }, false},
		{"the caller's logger has master_name and component", func(l *slog.Logger, m string) *slog.Logger {
			return l.With("master_name", m, "component", "sentinel")
		}, false},
		{"the selector has the caller's logger too", func(l *slog.Logger, m string) *slog.Logger {
			return l.With("master_name", m, "component", "sentinel")
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t, 60*time.Second)
			l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 1})
			var logs testkit.Buffer
			logger := tc.caller(slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})), l.MasterName())
			cfg := replica.Config{LatencyWindow: -1, ProbeInterval: 100 * ms}
			if tc.ownLogger {
				cfg.Logger = logger
			}
			sel, _ := newSelector(t, cfg)
			c := newClient(t, l, sel, func(o *sentinel.Config) { o.Logger = logger })
			if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
				t.Fatal(err)
			}
			waitReplicas(t, ctx, c, 1)
			_ = c.Get(ctx, "k") // starts the prober
			testkit.WaitFor(t, 20*time.Second, "the prober's start and an election", func() bool {
				s := logs.String()
				return strings.Contains(s, `"msg":"replica prober started"`) && strings.Contains(s, `"msg":"replica election changed"`)
			})
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}

			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			for _, line := range lines {
				if dups := keysTwice(t, line); len(dups) > 0 {
					t.Errorf("keys %v twice in %s", dups, line)
				}
				var rec map[string]any
				if err := json.Unmarshal([]byte(line), &rec); err != nil {
					t.Fatal(err)
				}
				if rec["rediskit.master_name"] != l.MasterName() {
					t.Errorf("a record without rediskit.master_name %q: %s", l.MasterName(), line)
				}
				if strings.HasPrefix(rec["msg"].(string), "replica prober") && rec["rediskit.component"] != "replica prober" {
					t.Errorf("a prober record without rediskit.component: %s", line)
				}
				if tc.name != "a plain logger" && (rec["master_name"] != l.MasterName() || rec["component"] != "sentinel") {
					t.Errorf("a record without the caller's attributes: %s", line)
				}
			}
			if n := bytes.Count([]byte(logs.String()), []byte(`"msg":"replica election changed"`)); n == 0 {
				t.Errorf("no election record in %d records", len(lines))
			}
			t.Logf("%d records, e.g. %s", len(lines), lines[0])
		})
	}
}
