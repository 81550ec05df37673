package hashring

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/lab"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fast are the test timings: the defaults' proportions (heartbeat :
// deadline : expiry = 10 : 50 : 60) scaled down 25 times, with the retry
// waits shortened so recoveries take a fraction of a second. The deadline
// stays long enough (8 heartbeats) that a healthy node on a loaded 2-core
// machine running -race does not lapse.
func fast(host string, log *slog.Logger) Config {
	return Config{
		Hostname:          host,
		Logger:            log,
		HeartbeatInterval: 250 * time.Millisecond,
		OwnershipDeadline: 2 * time.Second,
		Expiry:            2500 * time.Millisecond,
		CleanupInterval:   5 * time.Second,
		SubscribeTimeout:  2 * time.Second,
		RetryWait:         50 * time.Millisecond,
		MaxRetryWait:      300 * time.Millisecond,
	}
}

// client returns a lab client with the given read/write timeout, closed
// when the test ends.
func client(t testing.TB, opts *redis.Options, timeout time.Duration) *redis.Client {
	o := *opts
	o.ReadTimeout, o.WriteTimeout, o.DialTimeout = timeout, timeout, timeout
	c := redis.NewClient(&o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// direct is a node's options bypassing its proxy, so a black hole on the
// proxy does not reach this client.
func direct(n *lab.Node) *redis.Options {
	o := n.Options()
	o.Addr = n.DirectAddr()
	return o
}

// newNode creates a node, failing the test on error; the node is stopped
// when the test ends.
func newNode(t testing.TB, c redis.UniversalClient, key string, cfg Config) *Node {
	t.Helper()
	n, err := NewNode(c, key, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = n.Stop(context.Background()) })
	return n
}

func start(t testing.TB, ctx context.Context, nodes ...*Node) {
	t.Helper()
	for _, n := range nodes {
		if err := n.Start(ctx); err != nil {
			t.Fatalf("start %s: %v", n.ID(), err)
		}
	}
}

func keys(n int) []string {
	ks := make([]string, n)
	for i := range ks {
		ks[i] = "account-" + strconv.Itoa(i)
	}
	return ks
}

// claims counts, for every key, the nodes whose Contains is true.
func claims(nodes []*Node, ks []string) []int {
	c := make([]int, len(ks))
	for _, n := range nodes {
		for i, k := range ks {
			if n.Contains(k) {
				c[i]++
			}
		}
	}
	return c
}

// exactlyOnce reports whether every key is owned by exactly one node, and
// describes the first key that is not.
func exactlyOnce(nodes []*Node, ks []string) (bool, string) {
	for i, c := range claims(nodes, ks) {
		if c != 1 {
			return false, fmt.Sprintf("%s claimed by %d nodes", ks[i], c)
		}
	}
	return true, ""
}

// converged reports whether every node sees all the nodes and the same
// replicas.
func converged(nodes []*Node) bool {
	var first *Snapshot
	for _, n := range nodes {
		v := n.view.Load()
		if !v.valid() || v.snap.NodeCount() != len(nodes) {
			return false
		}
		if first == nil {
			first = v.snap
			continue
		}
		if len(v.snap.replicas) != len(first.replicas) {
			return false
		}
		for i := range first.replicas {
			if v.snap.replicas[i].Member != first.replicas[i].Member {
				return false
			}
		}
	}
	return true
}

// recorder is an slog.Handler that keeps every record.
type recorder struct {
	mu   sync.Mutex
	recs []slog.Record
}

func newRecorder() (*recorder, *slog.Logger) {
	r := &recorder{}
	return r, slog.New(r)
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = append(r.recs, rec.Clone())
	return nil
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// find returns the records at level whose message starts with prefix.
func (r *recorder) find(level slog.Level, prefix string) []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Record
	for _, rec := range r.recs {
		if rec.Level == level && strings.HasPrefix(rec.Message, prefix) {
			out = append(out, rec)
		}
	}
	return out
}

func attr(rec slog.Record, key string) (slog.Value, bool) {
	var v slog.Value
	found := false
	rec.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v, found = a.Value, true
			return false
		}
		return true
	})
	return v, found
}

const (
	msgExpired  = "hashring: ownership deadline passed"
	msgRestored = "hashring: ownership restored"
	msgRetry    = "hashring: ring update failed"
	msgBad      = "hashring: ignoring malformed ring member"
)

// The steps of redis-hashring's RingNode, for the ported Python suite:
// heartbeat(), update() and remove() called by hand, without the node's
// goroutine.

func (n *Node) pyHeartbeat(ctx context.Context) error {
	_, added, _, err := n.st.heartbeat(ctx, n.names, n.ahead())
	if err == nil && added > 0 {
		err = n.st.notify(ctx)
	}
	return err
}

func (n *Node) pyUpdate(ctx context.Context) error {
	snap, err := n.st.read(ctx)
	if err != nil {
		return err
	}
	n.publish(&run{deadline: time.Now().Add(time.Hour)}, snap)
	return nil
}

func (n *Node) pyRemove(ctx context.Context) error {
	n.viewMu.Lock()
	n.view.Store(nil)
	if n.timer != nil {
		n.timer.Stop()
	}
	n.viewMu.Unlock()
	return n.st.remove(ctx, n.names)
}

// points is the number of points in the ranges.
func points(rs []Range) uint64 {
	var n uint64
	for _, r := range rs {
		n += r.Len()
	}
	return n
}
