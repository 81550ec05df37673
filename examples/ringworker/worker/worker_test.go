package worker

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/hashring"
	"github.com/rediskit/rediskit/lab"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// counts records the last owned items a worker reported.
type counts struct {
	mu   sync.Mutex
	last map[string]bool
	runs int
}

func (c *counts) process(_ context.Context, owned []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = map[string]bool{}
	for _, it := range owned {
		c.last[it] = true
	}
	c.runs++
}

func (c *counts) get() map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.last
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestTwoWorkersSplitAndRebalance(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	client := l.Node(0).NewClient()
	defer client.Close()
	items := Items(100)
	newWorker := func(host string) *Worker {
		w, err := New(client, "example-ring", items, hashring.Config{Hostname: host})
		if err != nil {
			t.Fatal(err)
		}
		w.SetPollInterval(time.Hour) // only changes trigger processing
		return w
	}
	a, b := newWorker("worker-a"), newWorker("worker-b")
	var ca, cb counts

	actx, stopA := context.WithCancel(ctx)
	aDone := make(chan error, 1)
	go func() { aDone <- a.Run(actx, ca.process) }()
	waitFor(t, "a never processed 100 items", func() bool { return len(ca.get()) == 100 })

	bctx, stopB := context.WithCancel(ctx)
	bDone := make(chan error, 1)
	go func() { bDone <- b.Run(bctx, cb.process) }()
	waitFor(t, "a and b never split the items", func() bool {
		ga, gb := ca.get(), cb.get()
		if len(ga)+len(gb) != 100 || len(ga) == 0 || len(gb) == 0 {
			return false
		}
		for it := range gb {
			if ga[it] {
				return false
			}
		}
		return true
	})
	t.Logf("split: a %d, b %d", len(ca.get()), len(cb.get()))

	stopB()
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a never got b's items back", func() bool { return len(ca.get()) == 100 })
	stopA()
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	if n := l.Node(0).Do(ctx, "ZCARD", "example-ring").Val(); n != int64(0) {
		t.Errorf("replicas left: %v", n)
	}
}

func TestRunReportsStartError(t *testing.T) {
	l := lab.New(t, lab.Standalone())
	client := l.Node(0).NewClient()
	defer client.Close()
	if err := l.Node(0).Kill(); err != nil {
		t.Fatal(err)
	}
	w, err := New(client, "example-ring", Items(3), hashring.Config{Hostname: "w"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(context.Background(), func(context.Context, []string) { t.Error("processed without a ring") }); err == nil {
		t.Fatal("Run without Redis returned nil")
	}
}
