package main

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/multidb"
)

// multidbTour runs the multi-database client (package multidb) over two
// standalone Redis servers of its own, "primary" (weight 10) and "standby"
// (weight 5), under a steady write load: the primary is killed and the
// client moves to the standby by itself; the primary is restarted and an
// operator moves traffic back with SetActive. It prints how long writes
// failed and how many, for both switches.
func (d *demo) multidbTour(ctx context.Context) error {
	primary, err := lab.Start(ctx, lab.Standalone())
	if err != nil {
		return err
	}
	defer primary.Close()
	standby, err := lab.Start(ctx, lab.Standalone())
	if err != nil {
		return err
	}
	defer standby.Close()

	var mu sync.Mutex
	var events []multidb.Event
	client, err := multidb.NewClient(multidb.Config{
		Databases: []multidb.Database{
			{Name: "primary", Weight: 10, Options: primary.Node(0).Options()},
			{Name: "standby", Weight: 5, Options: standby.Node(0).Options()},
		},
		// Demo timings: checks every 500 ms, one probe each; failback off,
		// so the move back is the operator's.
		HealthCheckInterval: 500 * time.Millisecond,
		Probes:              1,
		ProbeTimeout:        500 * time.Millisecond,
		GracePeriod:         2 * time.Second,
		FailbackInterval:    -1,
		Observer: func(ev multidb.Event) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
		},
	})
	if err != nil {
		return err
	}
	defer client.Close()
	fmt.Fprintf(d.out, "databases: primary %s (weight 10), standby %s (weight 5); health checks every 500ms, a breaker opens after 3 failed calls in a row\n",
		primary.Node(0).Addr(), standby.Node(0).Addr())

	// The load: 4 writers, SET of a unique key each, one after another.
	type call struct {
		end time.Time
		err error
	}
	var calls []call
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, time.Second)
				err := client.Set(cctx, fmt.Sprintf("demo:order:%d-%d", w, i), "paid", 0).Err()
				cancel()
				mu.Lock()
				calls = append(calls, call{end: time.Now(), err: err})
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		wg.Wait()
	}()
	// window summarizes the calls that ended after since: how many
	// succeeded and failed, the errors by kind, and the time from since to
	// the first success after the last failure.
	window := func(since time.Time) (ok, failed int, kinds string, gap time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		byKind := map[string]int{}
		var lastFail time.Time
		for _, c := range calls {
			if c.end.Before(since) {
				continue
			}
			if c.err != nil {
				failed++
				byKind[multidbErrKind(c.err)]++
				lastFail = c.end
				continue
			}
			ok++
		}
		for _, c := range calls {
			if c.err == nil && c.end.After(lastFail) && !c.end.Before(since) {
				if lastFail.IsZero() {
					gap = 0
				} else {
					gap = c.end.Sub(since)
				}
				break
			}
		}
		var parts []string
		for k, n := range byKind {
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(parts)
		return ok, failed, strings.Join(parts, ", "), gap
	}
	activeChange := func(to string) (multidb.Event, bool) {
		mu.Lock()
		defer mu.Unlock()
		for i := len(events) - 1; i >= 0; i-- {
			if ev := events[i]; ev.Kind == multidb.EventActiveChanged && ev.New == to {
				return ev, true
			}
		}
		return multidb.Event{}, false
	}
	sleep := func(d time.Duration) error {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(d):
			return nil
		}
	}

	if err := sleep(500 * time.Millisecond); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "writes go to %q\n", client.Active())

	// Unplanned: the primary dies.
	killed := time.Now()
	if err := primary.Node(0).Kill(); err != nil {
		return err
	}
	if err := waitUntil(ctx, 10*time.Second, func() bool { return client.Active() == "standby" }); err != nil {
		return errors.New("the client did not move to the standby")
	}
	if err := sleep(500 * time.Millisecond); err != nil {
		return err
	}
	ok, failed, kinds, gap := window(killed)
	if ev, found := activeChange("standby"); found {
		why := ev.Reason.String()
		if ev.Err != nil {
			why += ", after " + ev.Err.Error()
		}
		fmt.Fprintf(d.out, "primary killed (SIGKILL): the client moved to \"standby\" %v later (%s)\n",
			ev.Time.Sub(killed).Round(100*time.Microsecond), why)
	}
	if failed == 0 {
		fmt.Fprintf(d.out, "  no write failed; %d succeeded on the standby in the next 500ms\n", ok)
	} else {
		note := ""
		if strings.Contains(kinds, "database changed") {
			note = "; a write that may have run on the primary is not re-run on the standby"
		}
		fmt.Fprintf(d.out, "  writes failed for %v after the kill: %d failed (%s%s), then %d succeeded on the standby\n",
			gap.Round(100*time.Microsecond), failed, kinds, note, ok)
	}

	// Planned: the primary is back; the operator moves traffic to it.
	if err := primary.Node(0).Restart(ctx); err != nil {
		return err
	}
	began := time.Now()
	if err := client.SetActive(ctx, "primary"); err != nil {
		return err
	}
	took := time.Since(began)
	if err := sleep(500 * time.Millisecond); err != nil {
		return err
	}
	ok, failed, kinds, _ = window(began)
	fmt.Fprintf(d.out, "primary restarted; SetActive(\"primary\") checked its health and switched in %v: %d writes failed%s, %d succeeded since\n",
		took.Round(100*time.Microsecond), failed, parenthesized(kinds), ok)
	close(stop)
	wg.Wait()

	sizes := make([]int64, 2)
	for i, l := range []*lab.Lab{primary, standby} {
		if sizes[i], err = l.Node(0).Do(ctx, "DBSIZE").Int64(); err != nil {
			return err
		}
	}
	fmt.Fprintf(d.out, "keys: %d on the primary (written after the switch back: the lab keeps no data, so it restarted empty), %d on the standby\n",
		sizes[0], sizes[1])
	return nil
}

func parenthesized(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

func multidbErrKind(err error) string {
	var dce *multidb.DatabaseChangedError
	switch {
	case errors.As(err, &dce):
		return "database changed (may have executed)"
	case errors.Is(err, multidb.ErrTemporarilyUnavailable):
		return "temporarily unavailable"
	}
	return errKind(err)
}
