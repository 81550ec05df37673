package sentinel

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/lab"
)

// TestStandaloneErrorWordingLive provokes a standalone client's errors on
// a real server (no replica under ReadFrom Replica, the primary down) and
// checks that neither they nor String speak of sentinels, which the
// caller never configured, and that each names the primary.
func TestStandaloneErrorWordingLive(t *testing.T) {
	ctx := context.Background()
	l := lab.New(t, lab.Config{})
	t.Logf("server: %s", l.ServerVersion())
	addr := l.Node(0).Addr()
	c := newPrimaryClient(t, l, func(o *Config) { o.ReadFrom = Replica })
	check := func(what, msg string) {
		t.Helper()
		t.Logf("%s: %s", what, msg)
		// String starts with the Go type's name (sentinel.Client), which is
		// not the wording at issue.
		if strings.Contains(strings.ToLower(strings.TrimPrefix(msg, "sentinel.Client")), "sentinel") {
			t.Errorf("%s speaks of sentinels on a standalone client: %s", what, msg)
		}
		if !strings.Contains(msg, addr) {
			t.Errorf("%s does not name the primary %s: %s", what, addr, msg)
		}
	}
	check("String", c.String())

	err := c.Get(ctx, "wording:k").Err()
	var nre *NoReplicaError
	if !errors.As(err, &nre) {
		t.Fatalf("a replica read with no replica: %T %v, want a *NoReplicaError", err, err)
	}
	check("NoReplicaError", err.Error())

	if err := l.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err = c.Set(wctx, "wording:w", "v", 0).Err()
	if err == nil {
		t.Fatal("a write to a killed primary succeeded")
	}
	var ne *NodeError
	var de *DiscoveryError
	var wh *WriteHeldError
	if !errors.As(err, &ne) && !errors.As(err, &de) && !errors.As(err, &wh) {
		t.Fatalf("a write to a killed primary: %T %v, want a typed error", err, err)
	}
	check("primary down", err.Error())
}
