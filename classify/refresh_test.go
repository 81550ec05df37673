package classify

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/classify/internal/cmdinfo"
	"github.com/rediskit/rediskit/lab"
)

// partialClassifier is a classifier whose table lacks some commands, as a
// table generated from an older Redis would lack a newer one's.
func partialClassifier(without ...string) *Classifier {
	drop := map[string]bool{}
	for _, n := range without {
		drop[n] = true
	}
	var specs []cmdinfo.Spec
	for _, s := range builtinSpecs {
		if drop[s.Name] {
			continue
		}
		var subs []cmdinfo.Spec
		for _, sub := range s.Subcommands {
			if !drop[sub.Name] {
				subs = append(subs, sub)
			}
		}
		s.Subcommands = subs
		specs = append(specs, s)
	}
	c := &Classifier{}
	c.t.Store(buildTable(specs, "partial test table"))
	return c
}

// TestRefreshLearnsWhatTheTableLacks starts from a table missing some
// commands and subcommands, refreshes it from a live server over RESP2 and
// RESP3, and checks that it then classifies them as the server's flags say.
func TestRefreshLearnsWhatTheTableLacks(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Standalone())
	missing := [][]any{
		{"LCS", "a", "b"},                      // read-only
		{"GETEX", "k"},                         // write
		{"XINFO", "STREAM", "s"},               // a whole container
		{"OBJECT", "FREQ", "k"},                // one subcommand
		{"EVAL", "#!lua flags=no-writes\n", 0}, // a rule by name
	}
	want := make([]Decision, len(missing))
	for i, args := range missing {
		want[i] = New().Explain(args...)
	}
	for _, protocol := range []int{2, 3} {
		c := partialClassifier("lcs", "getex", "xinfo", "object|freq", "eval")
		for _, args := range missing {
			if d := c.Explain(args...); d.ReadOnly || (d.Reason != ReasonUnknown && d.Reason != ReasonUnknownSubcommand) {
				t.Fatalf("partial table: Explain(%q) = %s, want unknown", args, d)
			}
		}
		opt := l.Node(0).Options()
		opt.Protocol = protocol
		rdb := redis.NewClient(opt)
		err := c.Refresh(ctx, rdb)
		rdb.Close()
		if err != nil {
			t.Fatalf("RESP%d: Refresh: %v", protocol, err)
		}
		for i, args := range missing {
			if got := c.Explain(args...); got != want[i] {
				t.Errorf("RESP%d: after Refresh, Explain(%q) = %s, want %s", protocol, args, got, want[i])
			}
		}
		if src := c.Source(); !strings.Contains(src, opt.Addr) {
			t.Errorf("RESP%d: Source() = %q, want it to name %s", protocol, src, opt.Addr)
		}
	}
}

// buildTestModule compiles testdata/rktestmodule into a loadable module.
func buildTestModule(t *testing.T) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "cc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		// go test -race needs a C compiler too, so CI has one.
		t.Skipf("no C compiler (%s) to build the test module: %v", cc, err)
	}
	out := filepath.Join(t.TempDir(), "rktest.so")
	if b, err := exec.Command(cc, "-shared", "-fPIC", "-o", out, filepath.Join("testdata", "rktestmodule", "rktest.c")).CombinedOutput(); err != nil {
		t.Fatalf("build test module: %v\n%s", err, b)
	}
	return out
}

// TestRefreshModuleCommands loads a real module into a master and its
// replica. The built-in table does not know its commands (master); after
// Refresh they are classified by the flags the module registered, and the
// replica agrees: it runs the read-only one and refuses the write.
func TestRefreshModuleCommands(t *testing.T) {
	module := buildTestModule(t)
	ctx := testContext(t)
	l := lab.New(t, lab.Config{Replicas: 1, ExtraConfig: []string{"loadmodule " + module}})
	master := l.Node(0).NewClient()
	defer master.Close()
	replica := l.Node(1).NewClient()
	defer replica.Close()

	c := New()
	for _, name := range []string{"rktest.get", "rktest.set", "rktest.ping", "rktest.mixed"} {
		if d := c.Explain(name, "k"); d.ReadOnly || d.Reason != ReasonUnknown {
			t.Errorf("built-in table: %s = %s, want unknown", name, d)
		}
	}
	if err := c.Refresh(ctx, master); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []any
		want Decision
	}{
		{[]any{"RKTEST.GET", "k"}, Decision{ReadOnly: true, Reason: ReasonReadOnly, Command: "rktest.get"}},
		{[]any{"rktest.set", "k"}, Decision{Reason: ReasonWrite, Command: "rktest.set"}},
		{[]any{"rktest.ping"}, Decision{Reason: ReasonModule, Command: "rktest.ping"}},
		{[]any{"rktest.MIXED", "k"}, Decision{ReadOnly: true, Reason: ReasonReadOnly, Command: "rktest.mixed"}},
		{[]any{"GET", "k"}, Decision{ReadOnly: true, Reason: ReasonReadOnly, Command: "get"}},
		{[]any{"MODULE", "LIST"}, Decision{Reason: ReasonServer, Command: "module|list"}},
	}
	for _, tt := range tests {
		if got := c.Explain(tt.args...); got != tt.want {
			t.Errorf("after Refresh: Explain(%q) = %s, want %s", tt.args, got, tt.want)
		}
	}
	if err := replica.Do(ctx, "RKTEST.GET", "k").Err(); err != nil {
		t.Errorf("replica refuses RKTEST.GET, which Refresh classified read-only: %v", err)
	}
	if err := replica.Do(ctx, "RKTEST.SET", "k").Err(); err == nil || !redis.IsReadOnlyError(err) {
		t.Errorf("replica: RKTEST.SET: %v, want READONLY", err)
	}
}

func TestRefreshErrorsKeepTheTable(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Standalone())
	c := partialClassifier("lcs")
	before := c.Source()
	check := func(what string, err error) {
		t.Helper()
		var re *RefreshError
		if !errors.As(err, &re) {
			t.Fatalf("%s: err = %v (%T), want *RefreshError", what, err, err)
		}
		if !strings.Contains(err.Error(), "previous command table stays in use") {
			t.Errorf("%s: %q does not say the table is kept", what, err)
		}
		if c.Source() != before || c.ReadOnlyArgs("LCS", "a", "b") {
			t.Errorf("%s: the table changed after a failed Refresh", what)
		}
	}

	closed := l.Node(0).NewClient()
	closed.Close()
	err := c.Refresh(ctx, closed)
	check("closed client", err)
	if !errors.Is(err, redis.ErrClosed) {
		t.Errorf("closed client: %v does not wrap redis.ErrClosed", err)
	}
	if re := (*RefreshError)(nil); errors.As(err, &re) && re.Server != l.Node(0).Addr() {
		t.Errorf("RefreshError.Server = %q, want %q", re.Server, l.Node(0).Addr())
	}

	rdb := l.Node(0).NewClient()
	defer rdb.Close()
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	err = c.Refresh(cancelled, rdb)
	check("cancelled context", err)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v does not wrap context.Canceled", err)
	}

	check("nil client", c.Refresh(ctx, nil))
	var nilC *Classifier
	if err := nilC.Refresh(ctx, rdb); err == nil {
		t.Error("nil *Classifier: Refresh succeeded")
	}
}

// TestRefreshWhileClassifying runs classifications in parallel with
// repeated Refreshes (run with -race): readers always see a whole table.
func TestRefreshWhileClassifying(t *testing.T) {
	ctx := testContext(t)
	l := lab.New(t, lab.Standalone())
	rdb := l.Node(0).NewClient()
	defer rdb.Close()
	c := New()
	get := redis.NewCmd(ctx, "GET", "k")
	set := redis.NewCmd(ctx, "SET", "k", "v")
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-done:
					return
				default:
				}
				if !c.ReadOnly(get) || c.ReadOnly(set) {
					t.Error("misclassified during Refresh")
					return
				}
			}
		})
	}
	for range 5 {
		if err := c.Refresh(ctx, rdb); err != nil {
			t.Error(err)
		}
	}
	close(done)
	wg.Wait()
}
