package sentinel

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// commandCounter is a go-redis hook that counts the commands it sees by
// name, pipelines included.
type commandCounter struct {
	mu    sync.Mutex
	seen  map[string]int
	dials int
}

func newCommandCounter() *commandCounter { return &commandCounter{seen: map[string]int{}} }

func (h *commandCounter) note(cmds ...redis.Cmder) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, c := range cmds {
		h.seen[strings.ToLower(c.FullName())]++
	}
}

func (h *commandCounter) counts() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]int, len(h.seen))
	for k, v := range h.seen {
		out[k] = v
	}
	return out
}

func (h *commandCounter) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		h.mu.Lock()
		h.dials++
		h.mu.Unlock()
		return next(ctx, network, addr)
	}
}

func (h *commandCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.note(cmd)
		return next(ctx, cmd)
	}
}

func (h *commandCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.note(cmds...)
		return next(ctx, cmds)
	}
}

// connectionSetup are the commands go-redis itself sends on every new
// connection of a client (a plain redis.Client's hooks see them too).
var connectionSetup = map[string]bool{"hello": true, "client setinfo": true, "auth": true, "select": true, "client setname": true}

// A hook added with AddHook sees the caller's commands and nothing of the
// client's own work (ROLE checks, sentinel polls, CLIENT ID before a
// blocking call), however long the client runs; Config.InternalHook
// sees that work and none of the caller's commands.
func TestHooksSeeTheirOwnTraffic(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	l := lab.New(t, lab.Sentinel(1))
	internal := newCommandCounter()
	c, _ := newTestClient(t, l, func(o *Config) {
		o.RefreshInterval = 100 * time.Millisecond
		o.SentinelPollInterval = 50 * time.Millisecond
		o.InternalHook = internal
	})
	user := newCommandCounter()
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
		return internal.counts()["role"] >= 10
	})

	for name, n := range user.counts() {
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
	in := internal.counts()
	for _, name := range []string{"set", "get", "blpop"} {
		if in[name] != 0 {
			t.Errorf("the internal hook saw the caller's %s (%d times)", name, in[name])
		}
	}
	if in["client"] == 0 { // CLIENT ID (go-redis names it "client")
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
	t.Logf("user hook: %v; internal hook: %v", user.counts(), in)
}
