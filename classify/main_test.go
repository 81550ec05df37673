package classify

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/classify/internal/cmdinfo"
	"github.com/rediskit/rediskit/lab"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// serverSpecs reads a live node's COMMAND reply and version.
func serverSpecs(ctx context.Context, t *testing.T, n *lab.Node) []cmdinfo.Spec {
	t.Helper()
	reply, err := n.Do(ctx, "COMMAND").Result()
	if err != nil {
		t.Fatalf("COMMAND: %v", err)
	}
	specs, err := cmdinfo.Parse(reply)
	if err != nil {
		t.Fatalf("parse COMMAND: %v", err)
	}
	return specs
}

// majorMinor returns "7.0" for "7.0.15".
func majorMinor(version string) string {
	parts := strings.SplitN(version, ".", 3)
	if len(parts) < 2 {
		return version
	}
	return parts[0] + "." + parts[1]
}

// argsFor returns the arguments that name a command or subcommand:
// ("get") or ("object", "encoding").
func argsFor(name string) []any {
	if parent, sub, ok := strings.Cut(name, "|"); ok {
		return []any{parent, sub}
	}
	return []any{name}
}

// allSpecs flattens commands and subcommands.
func allSpecs(specs []cmdinfo.Spec) []cmdinfo.Spec {
	var out []cmdinfo.Spec
	for _, s := range specs {
		out = append(out, s)
		out = append(out, s.Subcommands...)
	}
	return out
}
