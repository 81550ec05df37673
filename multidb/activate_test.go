package multidb

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// Start-up is not a switch: NewClient's first choice is one
// EventActivated, no EventActiveChanged, Stats.Switches 0 and no "active
// database changed" record. The first real switch (the active database
// dies) is the first one counted.
func TestStartIsNotASwitch(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	nodes := standalone(t, 2, lab.Standalone())
	var logs testkit.Buffer
	// Traffic trips the breaker: health checks far apart, so that none
	// fails first.
	cfg := fast(Config{HealthCheckInterval: time.Hour, FailbackInterval: -1,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	c, log := newClient(t, cfg, nodes, 10, 5)

	log.flush(t, c)
	act := log.of(EventActivated)
	if len(act) != 1 || act[0].New != "db0" || act[0].Old != "" || act[0].String() == "" {
		t.Fatalf("activations %v, want one, of db0", act)
	}
	if all := log.all(); len(all) == 0 || all[0].Kind != EventActivated {
		t.Errorf("events %v: want the activation first", all)
	}
	if sw := log.switches(); len(sw) != 0 {
		t.Errorf("switches at start: %v", sw)
	}
	if st := c.Stats(); st.Switches != 0 || st.Active != "db0" {
		t.Errorf("Stats at start: Switches %d, Active %q; want 0, db0", st.Switches, st.Active)
	}
	if text := logs.String(); strings.Contains(text, "active database changed") || !strings.Contains(text, `msg="multidb: first active database" database=db0`) {
		t.Errorf("logs at start:\n%s", text)
	}
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}

	if err := nodes[0].Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 20*time.Second, "the switch to db1", func() bool {
		_ = c.Set(ctx, "k", "v", 0).Err()
		return c.Active() == "db1"
	})
	sw := log.awaitSwitches(t, 1)
	if len(sw) != 1 || sw[0].Old != "db0" || sw[0].New != "db1" || sw[0].Reason != ReasonAutomatic {
		t.Errorf("switches %v, want one automatic db0 → db1", sw)
	}
	if st := c.Stats(); st.Switches != 1 {
		t.Errorf("Stats.Switches %d after one failover, want 1", st.Switches)
	}
	if n := len(log.of(EventActivated)); n != 1 {
		t.Errorf("%d activations, want the one at start", n)
	}
}
