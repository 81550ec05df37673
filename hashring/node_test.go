package hashring

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// The scenarios of redis-hashring's tests.py, step by step: each node
// sends one heartbeat and reads the ring when told, as Python's test
// calls heartbeat() and update() by hand.
func TestPythonSuiteNode(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	c := client(t, l.Node(0).Options(), 2*time.Second)
	ctx := testkit.Context(t, 30*time.Second)
	const key = "hashring-test"

	getNode := func(host string, replicas, total int) *Node {
		t.Helper()
		n := newNode(t, c, key, Config{Hostname: host, Replicas: replicas})
		if len(n.Members()) != replicas {
			t.Fatalf("%s has %d replicas, want %d", host, len(n.Members()), replicas)
		}
		if got := c.ZCard(ctx, key).Val(); got != int64(total-replicas) {
			t.Fatalf("before %s's heartbeat: zcard %d, want %d", host, got, total-replicas)
		}
		if err := n.pyHeartbeat(ctx); err != nil {
			t.Fatal(err)
		}
		if got := c.ZCard(ctx, key).Val(); got != int64(total) {
			t.Fatalf("after %s's heartbeat: zcard %d, want %d", host, got, total)
		}
		if rs := n.Ranges(); len(rs) != 0 {
			t.Fatalf("%s has ranges %v before reading the ring", host, rs)
		}
		return n
	}
	update := func(nodes ...*Node) {
		t.Helper()
		for _, n := range nodes {
			if err := n.pyUpdate(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	ranges := func(nodes ...*Node) int {
		total := 0
		for _, n := range nodes {
			total += len(n.Ranges())
		}
		return total
	}
	counts := func(want int, nodes ...*Node) {
		t.Helper()
		for _, n := range nodes {
			if got := n.NodeCount(); got != want {
				t.Errorf("%s: node count %d, want %d", n.ID(), got, want)
			}
		}
	}

	node1 := getNode("host1", 1, 1)
	update(node1)
	if got := ranges(node1); got != 1 {
		t.Errorf("node1 alone: %d ranges, want 1", got)
	}
	counts(1, node1)

	node2 := getNode("host2", 1, 2)
	update(node1, node2)
	if got := ranges(node1, node2); got != 3 {
		t.Errorf("two nodes of one replica: %d ranges, want 3 (one wraps)", got)
	}
	counts(2, node1, node2)

	node3 := getNode("host3", 2, 4)
	update(node1, node2, node3)
	if got := ranges(node1, node2, node3); got != 5 {
		t.Errorf("1+1+2 replicas: %d ranges, want 5", got)
	}
	counts(3, node1, node2, node3)

	if err := node1.pyRemove(ctx); err != nil {
		t.Fatal(err)
	}
	update(node2, node3)
	if got := ranges(node1); got != 0 {
		t.Errorf("removed node1 has %d ranges", got)
	}
	counts(0, node1)
	if got := ranges(node2, node3); got != 4 {
		t.Errorf("after removal: %d ranges, want 4", got)
	}
	counts(2, node2, node3)
}

func TestPythonSuiteContains(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	c := client(t, l.Node(0).Options(), 2*time.Second)
	ctx := testkit.Context(t, 30*time.Second)
	for _, h := range []Hash{CRC32, XXHash} {
		t.Run(h.String(), func(t *testing.T) {
			key := "hashring-test-" + h.String()
			n := newNode(t, c, key, Config{Hostname: "host1", Replicas: 1, Hash: h})
			if err := n.pyHeartbeat(ctx); err != nil {
				t.Fatal(err)
			}
			if err := n.pyUpdate(ctx); err != nil {
				t.Fatal(err)
			}
			if !n.Contains("item") {
				t.Error("a lone node does not contain \"item\"")
			}
			if err := n.pyRemove(ctx); err != nil {
				t.Fatal(err)
			}
			if n.Contains("item") {
				t.Error("a removed node contains \"item\"")
			}
		})
	}
}

// Three Go nodes split 10,000 keys: after convergence every key has
// exactly one owner, and every node's view names the same owner.
func TestThreeNodesOwnEachKeyOnce(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 60*time.Second)
	var nodes []*Node
	for _, h := range []string{"node-a", "node-b", "node-c"} {
		nodes = append(nodes, newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", fast(h, nil)))
	}
	start(t, ctx, nodes...)
	testkit.WaitFor(t, 5*time.Second, "nodes did not converge", func() bool { return converged(nodes) })

	ks := keys(10000)
	per := map[string]int{}
	for _, k := range ks {
		var owners []string
		for _, n := range nodes {
			if n.Contains(k) {
				owners = append(owners, n.ID())
			}
		}
		if len(owners) != 1 {
			t.Fatalf("key %s owned by %v", k, owners)
		}
		per[owners[0]]++
		for _, n := range nodes {
			if o, ok := n.Owner(k); !ok || o != owners[0] {
				t.Fatalf("%s's view: owner of %s is %q, but %s contains it", n.ID(), k, o, owners[0])
			}
		}
	}
	t.Logf("keys per node: %v", per)
	if len(per) != 3 {
		t.Errorf("not every node owns keys: %v", per)
	}
	// A read-only view agrees.
	ring, err := NewRing(client(t, l.Node(0).Options(), time.Second), "ring", Config{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := ring.Load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ks[:1000] {
		want, _ := nodes[0].Owner(k)
		if got, _ := snap.Owner(k); got != want {
			t.Fatalf("view: owner of %s is %s, node says %s", k, got, want)
		}
	}
	if snap.NodeCount() != 3 || len(snap.Replicas()) != 48 {
		t.Errorf("view: %d nodes, %d replicas", snap.NodeCount(), len(snap.Replicas()))
	}
}

// A node that stops gives its keys up at once, and the others take them
// over on the notice, well before their next periodic read.
func TestStopHandsKeysOver(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 60*time.Second)
	slow := func(h string) Config {
		o := fast(h, nil)
		// Periodic reads every 5 s: a handover faster than that came
		// from the notice.
		o.HeartbeatInterval, o.OwnershipDeadline, o.Expiry = 5*time.Second, 25*time.Second, 30*time.Second
		return o
	}
	var nodes []*Node
	for _, h := range []string{"node-a", "node-b", "node-c"} {
		nodes = append(nodes, newNode(t, client(t, l.Node(0).Options(), time.Second), "ring", slow(h)))
	}
	start(t, ctx, nodes...)
	testkit.WaitFor(t, 2*time.Second, "nodes did not converge on notices", func() bool { return converged(nodes) })
	ks := keys(10000)
	if ok, why := exactlyOnce(nodes, ks); !ok {
		t.Fatal(why)
	}

	began := time.Now()
	if err := nodes[2].Stop(ctx); err != nil {
		t.Fatal(err)
	}
	stopTook := time.Since(began)
	for _, k := range ks {
		if nodes[2].Contains(k) {
			t.Fatalf("stopped node still contains %s", k)
		}
	}
	if nodes[2].NodeCount() != 0 || len(nodes[2].Ranges()) != 0 {
		t.Error("stopped node reports nodes or ranges")
	}
	handover := testkit.WaitFor(t, 2*time.Second, "the others did not take the keys over on the notice", func() bool {
		ok, _ := exactlyOnce(nodes[:2], ks)
		return ok
	}) + stopTook
	t.Logf("Stop took %v; keys owned again %v after Stop began", stopTook, handover)
	if stopTook > time.Second {
		t.Errorf("Stop took %v, want under 1 s", stopTook)
	}
	if n := l.Node(0).Do(ctx, "ZCARD", "ring").Val(); n != int64(32) {
		t.Errorf("zcard after stop = %v, want 32", n)
	}
}

func TestStartStopRestart(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	c := client(t, l.Node(0).Options(), time.Second)
	n := newNode(t, c, "ring", fast("solo", nil))
	if n.Contains("x") || n.NodeCount() != 0 || !n.ValidUntil().IsZero() {
		t.Fatal("an unstarted node owns keys")
	}
	for round := range 2 {
		if err := n.Start(ctx); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		// Right after Start a lone node owns everything.
		for _, k := range keys(1000) {
			if !n.Contains(k) {
				t.Fatalf("round %d: lone node does not contain %s", round, k)
			}
		}
		if points(n.Ranges()) != RingSize || n.NodeCount() != 1 {
			t.Errorf("round %d: lone node: %d nodes, ranges %v", round, n.NodeCount(), n.Ranges())
		}
		if err := n.Start(ctx); !errors.Is(err, ErrAlreadyStarted) {
			t.Errorf("second Start: %v, want ErrAlreadyStarted", err)
		}
		began := time.Now()
		if err := n.Stop(ctx); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(began); d > time.Second {
			t.Errorf("Stop took %v", d)
		}
		if n.Contains("x") {
			t.Error("stopped node contains a key")
		}
		if got := c.ZCard(ctx, "ring").Val(); got != 0 {
			t.Errorf("replicas left after Stop: %d", got)
		}
		if err := n.Stop(ctx); err != nil {
			t.Errorf("Stop of a stopped node: %v", err)
		}
	}
}

// muteSubscribe makes a client whose SUBSCRIBE commands never reach Redis,
// so the confirmation never comes while every other command works.
func muteSubscribe(t testing.TB, opts *redis.Options) *redis.Client {
	o := *opts
	o.ReadTimeout, o.WriteTimeout = 5*time.Second, 5*time.Second
	o.Dialer = func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return muteConn{c}, nil
	}
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

type muteConn struct{ net.Conn }

func (c muteConn) Write(b []byte) (int, error) {
	if bytes.Contains(bytes.ToLower(b), []byte("subscribe")) {
		return len(b), nil
	}
	return c.Conn.Write(b)
}

func TestStartSubscribeTimeoutAndBusy(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	c := muteSubscribe(t, l.Node(0).Options())
	o := fast("mute", nil)
	o.SubscribeTimeout = 1500 * time.Millisecond
	n := newNode(t, c, "ring", o)

	result := make(chan error, 1)
	began := time.Now()
	go func() { result <- n.Start(ctx) }()
	testkit.WaitFor(t, time.Second, "Start did not begin", func() bool {
		n.mu.Lock()
		defer n.mu.Unlock()
		return n.phase == starting
	})
	// Neither waits for the Start in progress.
	t0 := time.Now()
	if err := n.Stop(ctx); !errors.Is(err, ErrBusy) {
		t.Errorf("Stop during Start: %v, want ErrBusy", err)
	}
	if err := n.Start(ctx); !errors.Is(err, ErrBusy) {
		t.Errorf("Start during Start: %v, want ErrBusy", err)
	}
	if d := time.Since(t0); d > 500*time.Millisecond { // far below the 1.5 s the Start waits
		t.Errorf("ErrBusy took %v", d)
	}

	err := <-result
	took := time.Since(began)
	if !errors.Is(err, ErrSubscribeTimeout) {
		t.Fatalf("Start: %v, want ErrSubscribeTimeout", err)
	}
	var e *Error
	if !errors.As(err, &e) || e.Step != "subscribe" || e.Wrote || e.Server != l.Node(0).Addr() {
		t.Errorf("error %#v", e)
	}
	if took < o.SubscribeTimeout || took > o.SubscribeTimeout+2*time.Second {
		t.Errorf("Start gave up after %v, want about %v", took, o.SubscribeTimeout)
	}
	t.Logf("error: %v", err)

	// Cancelling the context ends the wait, long before the timeout.
	o.SubscribeTimeout = 10 * time.Second
	patient := newNode(t, c, "ring", o)
	cctx, cancel := context.WithCancel(ctx)
	time.AfterFunc(100*time.Millisecond, cancel)
	began = time.Now()
	if err := patient.Start(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Start: %v", err)
	}
	if d := time.Since(began); d > 3*time.Second {
		t.Errorf("cancelled Start returned after %v, want soon after the cancel at 100ms", d)
	}
	if got := l.Node(0).Do(ctx, "ZCARD", "ring").Val(); got != int64(0) {
		t.Errorf("zcard %v after failed starts", got)
	}
}

// A Start that wrote its heartbeat and then failed removes its replicas.
func TestFailedStartRemovesReplicas(t *testing.T) {
	l := lab.New(t, lab.Config{ExtraConfig: []string{`rename-command ZRANGEBYSCORE ""`}})
	ctx := testkit.Context(t, 30*time.Second)
	c := client(t, l.Node(0).Options(), time.Second)
	n := newNode(t, c, "ring", fast("no-read", nil))
	notices := c.Subscribe(ctx, "ring")
	t.Cleanup(func() { _ = notices.Close() })
	if _, err := notices.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	err := n.Start(ctx)
	var e *Error
	if !errors.As(err, &e) || e.Step != "read" || !e.Wrote || e.Cleanup != nil {
		t.Fatalf("Start: %v (%#v)", err, e)
	}
	if got := c.ZCard(ctx, "ring").Val(); got != 0 {
		t.Errorf("%d replicas left after the failed Start", got)
	}
	// The others were told twice: when it joined and when it left.
	for i := range 2 {
		if _, err := notices.ReceiveTimeout(ctx, time.Second); err != nil {
			t.Errorf("notice %d: %v", i, err)
		}
	}
	if n.Contains("x") {
		t.Error("node contains a key after a failed Start")
	}
	// And the node can try again.
	if err := n.Start(ctx); err == nil || errors.Is(err, ErrAlreadyStarted) || errors.Is(err, ErrBusy) {
		t.Errorf("second Start: %v", err)
	}
}

func TestStartWhileRedisDownThenRecover(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	c := client(t, l.Node(0).Options(), 500*time.Millisecond)
	n := newNode(t, c, "ring", fast("down", nil))
	if err := l.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	err := n.Start(ctx)
	var e *Error
	if !errors.As(err, &e) || e.Op != "start" || e.Step != "subscribe" {
		t.Fatalf("Start with Redis down: %v", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Start took %v to fail", d)
	}
	t.Logf("error: %v", err)
	if err := l.Node(0).Restart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := n.Start(ctx); err != nil {
		t.Fatalf("Start after Redis came back: %v", err)
	}
	if !n.Contains("x") {
		t.Error("lone node does not contain x")
	}
}

func TestNewNodeRejects(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialerRetries: 1})
	defer c.Close()
	if _, err := NewNode(c, "ring", Config{Hostname: "fe80::1"}); !errors.Is(err, ErrInvalidHostname) {
		t.Errorf("hostname with ':': %v", err)
	}
	if _, err := NewNode(c, "ring", Config{Hostname: "h", OwnershipDeadline: 2 * time.Minute}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("deadline after expiry: %v", err)
	}
	if _, err := NewNode(c, "", Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("empty key: %v", err)
	}
	if _, err := NewNode(nil, "ring", Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil client: %v", err)
	}
}

// Members our nodes write parse with redis-hashring's rules, and Python's
// update() computes the same ranges from the ZSET as our nodes do.
func TestInteropPythonFormat(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx := testkit.Context(t, 30*time.Second)
	c := client(t, l.Node(0).Options(), time.Second)
	a := newNode(t, c, "ring", fast("worker-7.example.com", nil))
	o := fast("worker-8.example.com", nil)
	o.PID = 31337
	b := newNode(t, c, "ring", o)
	start(t, ctx, a, b)
	testkit.WaitFor(t, 5*time.Second, "no convergence", func() bool { return converged([]*Node{a, b}) })

	pid := strconv.Itoa(os.Getpid())
	format := regexp.MustCompile(`^(0|[1-9][0-9]{0,9}):worker-[78]\.example\.com:(` + pid + `|31337):[0-9a-f]{8}$`)
	zs, err := c.ZRangeWithScores(ctx, "ring", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(zs) != 32 {
		t.Fatalf("%d members", len(zs))
	}
	var members []string
	for _, z := range zs {
		m := z.Member.(string)
		members = append(members, m)
		if !format.MatchString(m) {
			t.Errorf("member %q does not have the format", m)
		}
		p, err := pyParse(m)
		if err != nil {
			t.Fatalf("Python cannot read %q", m)
		}
		if p.start.Sign() < 0 || p.start.Cmp(bigRingSize) >= 0 {
			t.Errorf("start of %q outside the ring", m)
		}
		if age := time.Since(scoreTime(z.Score)); age < -time.Second || age > time.Second {
			t.Errorf("score of %q is %v old", m, age)
		}
	}
	for _, n := range []*Node{a, b} {
		own := map[string]bool{}
		for _, m := range n.Members() {
			_, name, _ := cutStart(m)
			own[name] = true
		}
		want, count, err := pyRanges(members, own)
		if err != nil {
			t.Fatal(err)
		}
		if got := n.Ranges(); !slices.Equal(got, want) {
			t.Errorf("%s: ranges %v, Python's update() gives %v", n.ID(), got, want)
		}
		if count != n.NodeCount() {
			t.Errorf("%s: node count %d, Python %d", n.ID(), n.NodeCount(), count)
		}
	}
}
