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
//
// The stages, in order: start both servers and the client; start the
// load and let it settle on the primary; kill the primary (the unplanned
// switch); restart it and switch back (the planned one); stop the load and
// count the keys on each server.
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
	s := &multidbStep{d: d, primary: primary, standby: standby, stop: make(chan struct{})}
	if err := s.openClient(); err != nil {
		return err
	}
	defer s.client.Close()
	fmt.Fprintf(d.out, "databases: primary %s (weight 10), standby %s (weight 5); health checks every 500ms, a breaker opens after 3 failed calls in a row\n",
		primary.Node(0).Addr(), standby.Node(0).Addr())

	s.startLoad(ctx)
	defer s.stopLoad()
	if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "writes go to %q\n", s.client.Active())
	if err := s.killPrimary(ctx); err != nil {
		return err
	}
	if err := s.switchBack(ctx); err != nil {
		return err
	}
	s.stopLoad()
	return s.printKeys(ctx)
}

// multidbStep is one run of the multi-database tour: its two servers, the
// client, and what the client's observer and the writers record (behind
// mu).
type multidbStep struct {
	d                *demo
	primary, standby *lab.Lab
	client           *multidb.Client

	mu     sync.Mutex
	events []multidb.Event
	calls  []multidbCall

	stop chan struct{} // closed by stopLoad
	load sync.WaitGroup
}

// multidbCall is one write of the load.
type multidbCall struct {
	end time.Time
	err error
}

// openClient opens the multi-database client with the demo's timings and
// an observer that records its events (activeChange reads them).
func (s *multidbStep) openClient() error {
	client, err := multidb.NewClient(multidb.Config{
		Databases: []multidb.Database{
			{Name: "primary", Weight: 10, Options: s.primary.Node(0).Options()},
			{Name: "standby", Weight: 5, Options: s.standby.Node(0).Options()},
		},
		// Demo timings: checks every 500 ms, one probe each; failback off,
		// so the move back is the operator's.
		HealthCheckInterval: 500 * time.Millisecond,
		Probes:              1,
		ProbeTimeout:        500 * time.Millisecond,
		GracePeriod:         2 * time.Second,
		FailbackInterval:    -1,
		Observer: func(ev multidb.Event) {
			s.mu.Lock()
			s.events = append(s.events, ev)
			s.mu.Unlock()
		},
	})
	if err != nil {
		return err
	}
	s.client = client
	return nil
}

// startLoad starts 4 writers, each SETting a unique key after another
// until stopLoad.
func (s *multidbStep) startLoad(ctx context.Context) {
	for w := range 4 {
		s.load.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-s.stop:
					return
				default:
				}
				s.write(ctx, fmt.Sprintf("demo:order:%d-%d", w, i))
				time.Sleep(2 * time.Millisecond)
			}
		})
	}
}

// write SETs key and records the outcome.
func (s *multidbStep) write(ctx context.Context, key string) {
	cctx, cancel := context.WithTimeout(ctx, time.Second)
	err := s.client.Set(cctx, key, "paid", 0).Err()
	cancel()
	s.mu.Lock()
	s.calls = append(s.calls, multidbCall{end: time.Now(), err: err})
	s.mu.Unlock()
}

// stopLoad stops the writers and waits for them; it may be called more
// than once.
func (s *multidbStep) stopLoad() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	s.load.Wait()
}

// killPrimary is the unplanned switch: it kills the primary (SIGKILL),
// waits for the client to move to the standby by itself and for 500 ms of
// writes there, and prints when the client moved and what the writes saw.
func (s *multidbStep) killPrimary(ctx context.Context) error {
	killed := time.Now()
	if err := s.primary.Node(0).Kill(); err != nil {
		return err
	}
	if err := waitUntil(ctx, 10*time.Second, func() bool { return s.client.Active() == "standby" }); err != nil {
		return errors.New("the client did not move to the standby")
	}
	if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	ok, failed, kinds, gap := s.window(killed)
	if ev, found := s.activeChange("standby"); found {
		why := ev.Reason.String()
		if ev.Err != nil {
			why += ", after " + ev.Err.Error()
		}
		fmt.Fprintf(s.d.out, "primary killed (SIGKILL): the client moved to \"standby\" %v later (%s)\n",
			ev.Time.Sub(killed).Round(100*time.Microsecond), why)
	}
	if failed == 0 {
		fmt.Fprintf(s.d.out, "  no write failed; %d succeeded on the standby in the next 500ms\n", ok)
		return nil
	}
	note := ""
	if strings.Contains(kinds, "database changed") {
		note = "; a write that may have run on the primary is not re-run on the standby"
	}
	fmt.Fprintf(s.d.out, "  writes failed for %v after the kill: %d failed (%s%s), then %d succeeded on the standby\n",
		gap.Round(100*time.Microsecond), failed, kinds, note, ok)
	return nil
}

// switchBack is the planned switch: the primary is restarted and the
// operator moves traffic to it with SetActive; it prints how long that took
// and what the writes saw in the 500 ms after.
func (s *multidbStep) switchBack(ctx context.Context) error {
	if err := s.primary.Node(0).Restart(ctx); err != nil {
		return err
	}
	began := time.Now()
	if err := s.client.SetActive(ctx, "primary"); err != nil {
		return err
	}
	took := time.Since(began)
	if err := sleepCtx(ctx, 500*time.Millisecond); err != nil {
		return err
	}
	ok, failed, kinds, _ := s.window(began)
	fmt.Fprintf(s.d.out, "primary restarted; SetActive(\"primary\") checked its health and switched in %v: %d writes failed%s, %d succeeded since\n",
		took.Round(100*time.Microsecond), failed, parenthesized(kinds), ok)
	return nil
}

// printKeys prints how many keys each server holds once the load stopped.
func (s *multidbStep) printKeys(ctx context.Context) error {
	sizes := make([]int64, 2)
	for i, l := range []*lab.Lab{s.primary, s.standby} {
		var err error
		if sizes[i], err = l.Node(0).Do(ctx, "DBSIZE").Int64(); err != nil {
			return err
		}
	}
	fmt.Fprintf(s.d.out, "keys: %d on the primary (written after the switch back: the lab keeps no data, so it restarted empty), %d on the standby\n",
		sizes[0], sizes[1])
	return nil
}

// window summarizes the calls that ended after since: how many succeeded
// and failed, the errors by kind, and the time from since to the first
// success after the last failure.
func (s *multidbStep) window(since time.Time) (ok, failed int, kinds string, gap time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	byKind := map[string]int{}
	var lastFail time.Time
	for _, c := range s.calls {
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
	return ok, failed, kindsText(byKind), recoveryGap(s.calls, since, lastFail)
}

// recoveryGap is the time from since to the first success, at or after
// since, that followed the last failure (0 when nothing failed, or when
// nothing succeeded after it).
func recoveryGap(calls []multidbCall, since, lastFail time.Time) time.Duration {
	for _, c := range calls {
		if c.err == nil && c.end.After(lastFail) && !c.end.Before(since) {
			if lastFail.IsZero() {
				return 0
			}
			return c.end.Sub(since)
		}
	}
	return 0
}

// kindsText lists the error kinds and their counts, sorted ("connection 2,
// timeout 1").
func kindsText(byKind map[string]int) string {
	var parts []string
	for k, n := range byKind {
		parts = append(parts, fmt.Sprintf("%s %d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// activeChange is the client's last move to the database named to.
func (s *multidbStep) activeChange(to string) (multidb.Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.events) - 1; i >= 0; i-- {
		if ev := s.events[i]; ev.Kind == multidb.EventActiveChanged && ev.New == to {
			return ev, true
		}
	}
	return multidb.Event{}, false
}

// sleepCtx sleeps for d, or returns ctx's error when it ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
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
