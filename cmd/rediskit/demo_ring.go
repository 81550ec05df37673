package main

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/rediskit/rediskit/examples/ringworker/worker"
	"github.com/rediskit/rediskit/hashring"
	"github.com/rediskit/rediskit/lab"
)

// ringTour runs two ring workers (examples/ringworker) in this process on
// a standalone lab of its own: they split 100 keys, and when one stops the
// other takes its keys over. It prints the split and the handover time.
func (d *demo) ringTour(ctx context.Context) error {
	l, err := lab.Start(ctx, lab.Standalone())
	if err != nil {
		return err
	}
	defer l.Close()
	client := l.Node(0).NewClient()
	defer client.Close()

	// Short timings so the tour takes seconds; the library's defaults
	// (redis-hashring's) are a 10 s heartbeat, 50 s deadline, 60 s expiry.
	timings := func(host string) hashring.Config {
		return hashring.Config{
			Hostname:          host,
			HeartbeatInterval: 200 * time.Millisecond,
			OwnershipDeadline: time.Second,
			Expiry:            1200 * time.Millisecond,
			RetryWait:         50 * time.Millisecond,
			MaxRetryWait:      500 * time.Millisecond,
		}
	}
	fmt.Fprintf(d.out, "ring %q on %s; demo timings: heartbeat 200ms, ownership deadline 1s, expiry 1.2s (defaults 10s, 50s, 60s)\n",
		"demo-ring", l.Node(0).Addr())

	items := worker.Items(100)
	workers := make([]*worker.Worker, 2)
	for i, host := range []string{"demo-a", "demo-b"} {
		w, err := worker.New(client, "demo-ring", items, timings(host))
		if err != nil {
			return err
		}
		workers[i] = w
	}
	a, b := workers[0], workers[1]

	// Each worker runs until its context ends; the callback is where a
	// real worker would process its items.
	run := func(w *worker.Worker) (stop func() error) {
		wctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- w.Run(wctx, func(context.Context, []string) {}) }()
		return sync.OnceValue(func() error { cancel(); return <-done })
	}
	wait := func(what string, cond func() bool) error {
		limit := time.Now().Add(10 * time.Second)
		for !cond() {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if time.Now().After(limit) {
				return errors.New(what)
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	}

	stopA := run(a)
	defer func() { _ = stopA() }()
	if err := wait("demo-a never owned the keys", func() bool { return len(a.Owned()) == 100 }); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%s alone owns %d of 100 keys\n", a.Node().ID(), len(a.Owned()))

	began := time.Now()
	stopB := run(b)
	split := func() bool {
		na, nb := len(a.Owned()), len(b.Owned())
		return na > 0 && nb > 0 && na+nb == 100 && disjoint(a.Owned(), b.Owned())
	}
	if err := wait("the workers never split the keys", split); err != nil {
		_ = stopB()
		return err
	}
	fmt.Fprintf(d.out, "%s joins: %s owns %d keys, %s owns %d, each key once (settled %v after the join began)\n",
		b.Node().ID(), a.Node().ID(), len(a.Owned()), b.Node().ID(), len(b.Owned()), time.Since(began).Round(time.Millisecond))

	began = time.Now()
	if err := stopB(); err != nil {
		return err
	}
	stopped := time.Since(began)
	if err := wait("demo-a never took the keys back", func() bool { return len(a.Owned()) == 100 }); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "%s stops (Stop took %v): %s owns all 100 keys again %v after the stop began (on the ring's notice)\n",
		b.Node().ID(), stopped.Round(time.Microsecond), a.Node().ID(), time.Since(began).Round(time.Microsecond))
	return stopA()
}

func disjoint(x, y []string) bool {
	seen := make(map[string]bool, len(x))
	for _, k := range x {
		seen[k] = true
	}
	for _, k := range y {
		if seen[k] {
			return false
		}
	}
	return true
}
