package guard_test

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func TestLimitScriptSHA(t *testing.T) {
	sum := sha1.Sum([]byte(guard.LimitScript))
	if got := hex.EncodeToString(sum[:]); got != guard.LimitScriptSHA {
		t.Fatalf("LimitScriptSHA = %s, the script's digest is %s", guard.LimitScriptSHA, got)
	}
}

func newLimiter(t *testing.T, g *guard.Guard, limit int64, window time.Duration) *guard.Limiter {
	t.Helper()
	lim, err := guard.NewLimiter(g, guard.LimiterConfig{Name: "login", Limit: limit, Window: window})
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// 8 concurrent attempts on one account with a limit of 5: exactly 5 pass,
// 3 get ErrTooManyRequests with the window's remaining time.
func TestLimiterEightConcurrentAttemptsAdmitFive(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	lim := newLimiter(t, g, 5, time.Minute)

	start := make(chan struct{})
	errs := make(chan error, 8)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			<-start
			_, err := lim.Allow(ctx, "alice")
			errs <- err
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	var allowed, rejected int
	for err := range errs {
		var le *guard.LimitError
		switch {
		case err == nil:
			allowed++
		case errors.As(err, &le) && errors.Is(err, guard.ErrTooManyRequests):
			rejected++
			if le.RetryAfter <= 0 || le.RetryAfter > time.Minute || le.Limit != 5 || le.Count <= 5 {
				t.Errorf("limit error %+v", le)
			}
		default:
			t.Errorf("unexpected error: %v", err)
		}
	}
	if allowed != 5 || rejected != 3 {
		t.Fatalf("%d allowed, %d rejected; want 5 and 3", allowed, rejected)
	}
	if s := lim.Stats(); s != (guard.LimiterStats{Allowed: 5, Rejected: 3}) {
		t.Errorf("stats %+v", s)
	}
	// The window is counted from the first attempt: one TTL, set once.
	pttl, err := l.Node(0).Do(ctx, "PTTL", lim.Key("alice")).Int64()
	if err != nil || pttl <= 0 || pttl > 60_000 {
		t.Fatalf("PTTL of the counter = %d, %v; want a TTL within the minute", pttl, err)
	}
}

// Redis down: the attempt is refused with ErrUnavailable and not counted.
func TestLimiterRedisDownRefusesAndCountsNothing(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Proxy: true})
	n := l.Node(0)
	g := open(t, relaxed(n))
	lim := newLimiter(t, g, 5, time.Minute)
	if _, err := lim.Allow(ctx, "bob"); err != nil {
		t.Fatal(err)
	}

	n.Proxy().Suspend() // clients are refused; the server and its data stay
	a, err := lim.Allow(ctx, "bob")
	var ue *guard.UnavailableError
	if !errors.As(err, &ue) || ue.Reason != guard.ReasonRedis || !errors.Is(err, guard.ErrUnavailable) {
		t.Fatalf("Allow with Redis down: %v, want UnavailableError", err)
	}
	if errors.Is(err, guard.ErrTooManyRequests) || a != (guard.Allowance{}) {
		t.Fatalf("Allow with Redis down returned %+v, %v", a, err)
	}
	if err := n.Proxy().Resume(); err != nil {
		t.Fatal(err)
	}
	if count, err := n.Do(ctx, "GET", lim.Key("bob")).Int(); err != nil || count != 1 {
		t.Fatalf("counter = %d, %v; want 1: the refused attempt must not count", count, err)
	}
	if a, err := lim.Allow(ctx, "bob"); err != nil || a.Count != 2 || a.Remaining != 3 {
		t.Fatalf("Allow after recovery: %+v, %v; want count 2, remaining 3", a, err)
	}
	if s := lim.Stats(); s != (guard.LimiterStats{Allowed: 2, Unavailable: 1}) {
		t.Errorf("stats %+v", s)
	}
}

// The script is loaded once, and again after the server forgets it.
func TestLimiterReloadsScriptOnNoScript(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	n := l.Node(0)
	g := open(t, relaxed(n))
	lim := newLimiter(t, g, 100, time.Minute)

	loads := func() int64 {
		info, err := n.Do(ctx, "INFO", "commandstats").Text()
		if err != nil {
			t.Fatal(err)
		}
		return parseCalls(lab.ParseInfo(info)["cmdstat_script|load"])
	}
	for range 3 {
		if _, err := lim.Allow(ctx, "carol"); err != nil {
			t.Fatal(err)
		}
	}
	if got := loads(); got != 1 {
		t.Fatalf("SCRIPT LOAD ran %d times for 3 attempts, want 1", got)
	}
	if err := n.Do(ctx, "SCRIPT", "FLUSH").Err(); err != nil {
		t.Fatal(err)
	}
	a, err := lim.Allow(ctx, "carol")
	if err != nil || a.Count != 4 {
		t.Fatalf("Allow after SCRIPT FLUSH: %+v, %v; want count 4 (the NOSCRIPT attempt ran once)", a, err)
	}
	if got := loads(); got != 2 {
		t.Fatalf("SCRIPT LOAD ran %d times, want 2 (once more after the flush)", got)
	}
}

// parseCalls reads calls=N from an INFO commandstats value.
func parseCalls(v string) int64 {
	for _, f := range strings.Split(v, ",") {
		if n, ok := strings.CutPrefix(f, "calls="); ok {
			c, _ := strconv.ParseInt(n, 10, 64)
			return c
		}
	}
	return 0
}

// A counter someone left without a TTL gets one.
func TestLimiterHealsCounterWithoutTTL(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	n := l.Node(0)
	g := open(t, relaxed(n))
	lim := newLimiter(t, g, 5, 10*time.Second)
	if err := n.Do(ctx, "SET", lim.Key("dave"), 2).Err(); err != nil {
		t.Fatal(err)
	}
	a, err := lim.Allow(ctx, "dave")
	if err != nil || a.Count != 3 || a.Reset != 10*time.Second {
		t.Fatalf("Allow = %+v, %v", a, err)
	}
	if pttl, _ := n.Do(ctx, "PTTL", lim.Key("dave")).Int64(); pttl <= 0 {
		t.Fatalf("PTTL = %d: the counter still has no TTL", pttl)
	}
}

// A window ends: attempts are allowed again.
func TestLimiterWindowEnds(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Standalone())
	g := open(t, relaxed(l.Node(0)))
	lim := newLimiter(t, g, 1, 200*time.Millisecond)
	if _, err := lim.Allow(ctx, "erin"); err != nil {
		t.Fatal(err)
	}
	_, err := lim.Allow(ctx, "erin")
	var le *guard.LimitError
	if !errors.As(err, &le) {
		t.Fatalf("second attempt: %v, want a LimitError", err)
	}
	time.Sleep(le.RetryAfter + 20*time.Millisecond)
	if a, err := lim.Allow(ctx, "erin"); err != nil || a.Count != 1 {
		t.Fatalf("attempt after the window: %+v, %v", a, err)
	}
}

func TestLimiterConfigErrors(t *testing.T) {
	g, err := guard.Open(guard.ClientConfig{Addr: "127.0.0.1:1", KeyPrefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	for _, tc := range []struct {
		cfg  guard.LimiterConfig
		want string // the whole message
	}{
		{guard.LimiterConfig{Limit: 1, Window: time.Second}, "guard: LimiterConfig.Name is required (it is the counters' namespace)"},
		{guard.LimiterConfig{Name: "x", Window: time.Second}, "guard: LimiterConfig.Limit must be positive"},
		{guard.LimiterConfig{Name: "x", Limit: 1}, "guard: LimiterConfig.Window must be at least 1ms"},
	} {
		var ce *guard.ConfigError
		if _, err := guard.NewLimiter(g, tc.cfg); !errors.As(err, &ce) || ce.Struct != "LimiterConfig" || err.Error() != tc.want {
			t.Errorf("NewLimiter(%+v) = %v, want the ConfigError %q", tc.cfg, err, tc.want)
		}
	}
	var ce *guard.ConfigError
	if _, err := guard.NewLimiter(nil, guard.LimiterConfig{}); !errors.As(err, &ce) || err.Error() != "guard: guard is nil" {
		t.Errorf("NewLimiter(nil) = %v, want a ConfigError on the nil guard", err)
	}
	lim, err := guard.NewLimiter(g, guard.LimiterConfig{Name: "x", Limit: 1, Window: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lim.Allow(context.Background(), ""); err == nil || errors.Is(err, guard.ErrUnavailable) {
		t.Fatalf("Allow with an empty id: %v", err)
	}
}
