package worker

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/hashring"
)

// DefaultPollInterval is how often Run hands the owned items to the
// process function when nothing changed (redis-hashring's example loops
// every 2 s).
const DefaultPollInterval = 2 * time.Second

// StopTimeout bounds the node's Stop when Run ends.
const StopTimeout = 5 * time.Second

// Worker owns a ring node and the list of all items; it processes the
// items its node owns.
type Worker struct {
	node  *hashring.Node
	items []string
	poll  time.Duration
}

// New returns a worker for the ring at key over the given items. cfg
// configures the node (the zero Config: the defaults). It does not talk to
// Redis until Run.
func New(client redis.UniversalClient, key string, items []string, cfg hashring.Config) (*Worker, error) {
	n, err := hashring.NewNode(client, key, cfg)
	if err != nil {
		return nil, err
	}
	return &Worker{node: n, items: items, poll: DefaultPollInterval}, nil
}

// SetPollInterval changes how often Run calls the process function when
// nothing changed. Call it before Run.
func (w *Worker) SetPollInterval(d time.Duration) { w.poll = d }

// Node is the worker's ring node.
func (w *Worker) Node() *hashring.Node { return w.node }

// Owned returns the items the node owns now, in the items' order.
func (w *Worker) Owned() []string {
	var owned []string
	for _, it := range w.items {
		if w.node.Contains(it) {
			owned = append(owned, it)
		}
	}
	return owned
}

// Run joins the ring and calls process with the owned items at once,
// whenever the node's ranges change, and every poll interval, until ctx
// ends; then it leaves the ring (bounded by StopTimeout) and returns nil.
// It returns Start's error when the node cannot join. process runs on
// Run's goroutine; while it runs, changes are coalesced.
func (w *Worker) Run(ctx context.Context, process func(ctx context.Context, owned []string)) error {
	if err := w.node.Start(ctx); err != nil {
		return err
	}
	defer func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), StopTimeout)
		defer cancel()
		_ = w.node.Stop(sctx) // a failed removal expires on its own; Stop logs nothing itself
	}()
	tick := time.NewTicker(w.poll)
	defer tick.Stop()
	for {
		process(ctx, w.Owned())
		select {
		case <-ctx.Done():
			return nil
		case <-w.node.Changes():
		case <-tick.C:
		}
	}
}

// Items returns n item names, "0" … "n-1", as the Python example numbers
// its accounts.
func Items(n int) []string {
	items := make([]string, n)
	for i := range items {
		items[i] = fmt.Sprint(i)
	}
	return items
}
