package sentinel

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// connectionSetup are the commands go-redis itself sends on every new
// connection of a client (a plain redis.Client's hooks see them too).
var connectionSetup = map[string]bool{"hello": true, "auth": true, "select": true}

// A hook added with AddHook sees the caller's commands and nothing of the
// client's own work (ROLE checks, sentinel polls, CLIENT ID before a
// blocking call), however long the client runs; Config.InternalHook
// sees that work and none of the caller's commands.
func TestHooksSeeTheirOwnTraffic(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	internal := &testkit.CommandCounter{}
	c, _ := newTestClient(t, l, func(o *Config) {
		o.RefreshInterval = 100 * time.Millisecond
		o.SentinelPollInterval = 50 * time.Millisecond
		o.InternalHook = internal
	})
	user := &testkit.CommandCounter{}
	c.AddHook(user)

	if err := c.Set(ctx, "hooked", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, "hooked").Err(); err != nil {
		t.Fatal(err)
	}
	// A blocking call makes the client ask for the connection's id first.
	if err := c.BLPop(ctx, 50*time.Millisecond, "hooks-queue").Err(); err != redis.Nil {
		t.Fatalf("BLPOP on an empty list: %v, want redis.Nil", err)
	}
	// The client's own checks run at least every RefreshInterval: wait
	// until the internal hook has seen ten rounds of them, so that the
	// user hook had every chance to see them too.
	testkit.WaitFor(t, 20*time.Second, "ten topology checks", func() bool {
		return internal.Counts()["role"] >= 10
	})

	for name, n := range user.Counts() {
		switch {
		case name == "set" || name == "get" || name == "blpop":
			if n != 1 {
				t.Errorf("the user hook saw %s %d times, want 1", name, n)
			}
		case connectionSetup[name]:
		default:
			t.Errorf("the user hook saw the client's own %q (%d times)", name, n)
		}
	}
	in := internal.Counts()
	for _, name := range []string{"set", "get", "blpop"} {
		if in[name] != 0 {
			t.Errorf("the internal hook saw the caller's %s (%d times)", name, in[name])
		}
	}
	if in["client"] == 0 { // CLIENT ID
		t.Errorf("the internal hook did not see the CLIENT ID before BLPOP: %v", in)
	}
	sentinelCmds := 0
	for name, n := range in {
		if strings.HasPrefix(name, "sentinel") {
			sentinelCmds += n
		}
	}
	if sentinelCmds == 0 {
		t.Errorf("the internal hook saw no sentinel command: %v", in)
	}
	t.Logf("user hook: %v; internal hook: %v", user.Counts(), in)
}
