package hashring

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// Members that are not in the format are ignored, logged once each, and
// never break the node.
func TestMalformedMembersIgnored(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	c := client(t, l.Node(0).Options(), time.Second)
	bad := []string{"garbage", "1:2", "12:host:1", "99999999999:h:1:abcdabcd", "-5:h:1:abcdabcd", "5:a:b:c:d", "\xff:h:1:ab", ""}
	now := timeScore(time.Now().Add(time.Hour)) // alive through the test
	for _, m := range bad {
		if err := c.ZAdd(ctx, "ring", redis.Z{Score: now, Member: m}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	rec, log := newRecorder()
	n := newNode(t, c, "ring", fast("sane", log))
	start(t, ctx, n)
	// More reads: notices and heartbeats.
	for range 3 {
		if err := c.Publish(ctx, "ring", "*").Err(); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(3 * n.opts.HeartbeatInterval)

	for _, k := range keys(1000) {
		if !n.Contains(k) {
			t.Fatalf("the only node does not contain %s", k)
		}
	}
	if n.NodeCount() != 1 {
		t.Errorf("node count %d, want 1", n.NodeCount())
	}
	recs := rec.find(slog.LevelWarn, msgBad)
	seen := map[string]int{}
	for _, r := range recs {
		v, _ := attr(r, "member")
		seen[v.String()]++
	}
	for _, m := range bad {
		if seen[m] != 1 {
			t.Errorf("member %q logged %d times, want once", m, seen[m])
		}
	}
	if len(recs) != len(bad) {
		t.Errorf("%d malformed-member records, want %d", len(recs), len(bad))
	}
}

// Changes fires when another node joins or leaves.
func TestChangesOnJoinAndLeave(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	a := newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", fast("node-a", nil))
	b := newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", fast("node-b", nil))
	start(t, ctx, a)
	select {
	case <-a.Changes(): // Start gave a its ranges
	default:
		t.Fatal("no change signalled by Start")
	}
	if points(a.Ranges()) != RingSize {
		t.Fatalf("lone node's ranges %v", a.Ranges())
	}
	start(t, ctx, b)
	select {
	case <-a.Changes():
	case <-time.After(2 * time.Second):
		t.Fatal("no change signalled when b joined")
	}
	testkit.WaitFor(t, time.Second, "a's ranges did not shrink", func() bool { return points(a.Ranges()) < RingSize })
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Changes():
	case <-time.After(2 * time.Second):
		t.Fatal("no change signalled when b left")
	}
	testkit.WaitFor(t, time.Second, "a did not get the whole ring back", func() bool { return points(a.Ranges()) == RingSize })
	if err := a.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.Changes():
	default:
		t.Error("no change signalled by Stop")
	}
}

func TestRingViewFollowsTheRing(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	a := newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", fast("node-a", nil))
	b := newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", fast("node-b", nil))
	start(t, ctx, a, b)

	ring, err := NewRing(client(t, l.Node(0).Options(), time.Second), "ring", Config{HeartbeatInterval: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ring.Owner("x"); ok || ring.NodeCount() != 0 || ring.Snapshot() != nil {
		t.Fatal("a view answers before its first read")
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ring.Run(runCtx) }()
	testkit.WaitFor(t, 2*time.Second, "view did not read the ring", func() bool { return ring.NodeCount() == 2 })
	if err := ring.Run(runCtx); !errors.Is(err, ErrBusy) {
		t.Errorf("second Run: %v, want ErrBusy", err)
	}
	testkit.WaitFor(t, 2*time.Second, "nodes did not converge", func() bool { return converged([]*Node{a, b}) })
	for _, k := range keys(1000) {
		want, _ := a.Owner(k)
		if got, _ := ring.Owner(k); got != want {
			t.Fatalf("view: owner of %s is %s, node says %s", k, got, want)
		}
	}
	select { // drain
	case <-ring.Changes():
	default:
	}
	if err := b.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	// The view re-reads on the notice, long before its 10 s interval.
	select {
	case <-ring.Changes():
	case <-time.After(2 * time.Second):
		t.Fatal("view did not change when b left")
	}
	if ring.NodeCount() != 1 {
		t.Errorf("view: %d nodes after b left", ring.NodeCount())
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Run returned %v", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestRingViewRetriesWhileRedisDown(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	rec, log := newRecorder()
	ring, err := NewRing(client(t, l.Node(0).Options(), 300*time.Millisecond), "ring",
		Config{Logger: log, RetryWait: 20 * time.Millisecond, MaxRetryWait: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- ring.Run(runCtx) }()
	testkit.WaitFor(t, 3*time.Second, "no failed attempt logged", func() bool {
		return len(rec.find(slog.LevelWarn, "hashring: ring view update failed")) >= 2
	})
	if err := l.Node(0).Restart(ctx); err != nil {
		t.Fatal(err)
	}
	n := newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", fast("late", nil))
	start(t, ctx, n)
	testkit.WaitFor(t, 3*time.Second, "view did not recover", func() bool { return ring.NodeCount() == 1 })
	cancel()
	<-done
}

func TestPrintListsReplicasAndNodes(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	c := client(t, l.Node(0).Options(), time.Second)
	o := fast("printer.local", nil)
	o.Replicas, o.PID = 3, 4242
	n := newNode(t, c, "print-ring", o)
	ring, err := NewRing(c, "print-ring", Config{})
	if err != nil {
		t.Fatal(err)
	}
	var empty bytes.Buffer
	if err := ring.Print(ctx, &empty); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(empty.String(), "(no replicas)") || !strings.Contains(empty.String(), "(no nodes)") {
		t.Errorf("empty ring listing:\n%s", empty.String())
	}

	start(t, ctx, n)
	old := timeScore(time.Now().Add(-10 * time.Minute))
	if err := c.ZAdd(ctx, "print-ring", redis.Z{Score: old, Member: "123:ghost:7:deadbeef"}, redis.Z{Score: old, Member: "junk"}).Err(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := n.Print(ctx, &out); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	t.Logf("\n%s", text)
	for _, want := range []string{
		`Hash ring "print-ring" replicas:`,
		"Start      Range   Delay   Node",
		"       123       -    600s ghost:7:deadbeef (EXPIRED)",
		`Hash ring "print-ring" nodes:`,
		"Range    Replicas Delay   Hostname             PID",
		"100.00%         3      0s printer.local        4242",
		"  0.00%         1    600s ghost                7     (EXPIRED)",
		`"junk"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("listing lacks %q", want)
		}
	}
	if got := strings.Count(text, "printer.local:4242:"); got != 3 {
		t.Errorf("%d replica rows of printer.local, want 3", got)
	}
}

// Neither errors nor log records carry the Redis password.
func TestNoSecretsInErrorsOrLogs(t *testing.T) {
	const secret = "ring-secret-7f3a"
	l := lab.New(t, lab.Config{Password: secret})
	ctx := testkit.Context(t, 30*time.Second)

	wrong := *l.Node(0).Options()
	wrong.Password = secret + "-wrong"
	n := newNode(t, client(t, &wrong, time.Second), "ring", fast("locked-out", nil))
	err := n.Start(ctx)
	if err == nil {
		t.Fatal("Start with a wrong password succeeded")
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error shows the password: %v", err)
	}

	rec, log := newRecorder()
	good := newNode(t, client(t, l.Node(0).Options(), 300*time.Millisecond), "ring", fast("keyholder", log))
	start(t, ctx, good)
	if err := l.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	testkit.WaitFor(t, 5*time.Second, "no failed attempt logged", func() bool {
		return len(rec.find(slog.LevelWarn, msgRetry)) >= 2
	})
	if err := l.Node(0).Restart(ctx); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	testkit.WaitFor(t, 10*time.Second, "no heartbeat after the restart", func() bool {
		return good.ValidUntil().After(restarted.Add(good.opts.OwnershipDeadline))
	})
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, r := range rec.recs {
		text := r.Message
		r.Attrs(func(a slog.Attr) bool { text += " " + a.String(); return true })
		if strings.Contains(text, secret) {
			t.Errorf("log record shows the password: %s", text)
		}
	}
	var out bytes.Buffer
	_ = good.Print(ctx, &out)
	if strings.Contains(out.String(), secret) {
		t.Error("listing shows the password")
	}
}
