package main

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/replica"
	"github.com/rediskit/rediskit/sentinel"
)

// failoverTour fails the lab's master over while the rediskit Sentinel
// client works through it:
//
//   - readers keep reading from the replicas (ReadFrom ReplicaPreferred);
//   - an INCR is in flight on the old master, whose network goes silent
//     (its proxy black-holes it) just before SENTINEL FAILOVER: when its
//     connection finally drops, the client cannot know whether it ran, so
//     it refuses to re-run it and returns the *MasterChangedError a user
//     would see;
//   - a SET sent while the failover is under way (writes are held from the
//     moment the leading sentinel picks the replica it promotes) waits and
//     runs once, on the new master.
//
// It prints the timeline, the reads' latency and errors during the
// failover, and both writes' outcomes.
//
// The stages, in order: open the client and let its election pick a
// replica (so reads never go to the master about to go silent); start the
// readers; arm the held SET (it waits for the client's failover event);
// silence the old master with the INCR in flight on it; fail over and
// collect both writes; stop the readers; then report the timeline, the
// writes and the reads.
func (d *demo) failoverTour(ctx context.Context) error {
	old, err := d.lab.Master(ctx)
	if err != nil {
		return err
	}
	s := &failoverStep{d: d, l: d.lab, old: old, started: make(chan struct{}, 1), stopReads: make(chan struct{}),
		held: make(chan writeOutcome, 1), inflight: make(chan writeOutcome, 1)}
	if err := s.openClient(); err != nil {
		return err
	}
	defer s.client.Close()
	if err := s.prepare(ctx); err != nil {
		return err
	}
	s.startReaders(ctx)
	defer s.stopReaders()
	// On the way out, in this order: end the writers' context, drop the
	// old master's connections (so a write stuck on them returns), wait
	// for the writers, restore the old master's network.
	wctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		old.ResetConnections()
		s.writers.Wait()
		old.Restore()
	}()
	s.armHeldWrite(wctx)
	s.silenceOldMaster(wctx)
	if err := s.failOver(ctx); err != nil {
		return err
	}
	s.stopReaders()
	ended := time.Now()
	s.printTimeline()
	if err := s.reportWrites(ctx); err != nil {
		return err
	}
	return s.reportReads(ended)
}

// failoverStep is one run of the failover tour: the lab, its master before
// the failover, the client under test, and what the client's observer and
// the readers record (behind mu).
type failoverStep struct {
	d      *demo
	l      *lab.Lab
	old    *lab.Node
	sel    *replica.Selector
	client *sentinel.Client

	mu     sync.Mutex
	events []sentinel.Event
	reads  []failoverRead

	started   chan struct{} // the client reported the failover started
	stopReads chan struct{} // closed by stopReaders
	readers   sync.WaitGroup
	writers   sync.WaitGroup
	held      chan writeOutcome // the SET sent once writes are held
	inflight  chan writeOutcome // the INCR in flight on the silent master
	began     time.Time         // when the old master went silent

	res            lab.FailoverResult
	heldResult     writeOutcome
	inflightResult writeOutcome
}

// failoverRead is one GET of the readers.
type failoverRead struct {
	at    time.Time
	took  time.Duration
	err   error
	value bool // the reply had the value (not nil: a replica behind)
}

// writeOutcome is how one of the tour's writes ended.
type writeOutcome struct {
	err  error
	took time.Duration
}

// openClient opens the Sentinel client with the latency-aware election,
// and an observer that records the events for the timeline and signals
// the failover's start (the held SET waits for it).
func (s *failoverStep) openClient() error {
	sel, err := replica.NewSelector(replica.Config{})
	if err != nil {
		return err
	}
	s.sel = sel
	client, err := sentinel.NewClient(sentinel.Config{
		ReplicaSelector:  sel,
		MasterName:       s.l.MasterName(),
		SentinelAddrs:    s.l.SentinelAddrs(),
		Password:         s.l.Config().Password,
		SentinelPassword: s.l.Config().SentinelPassword,
		TLSConfig:        s.l.TLSConfig(),
		ReadFrom:         sentinel.ReplicaPreferred,
		// Long enough that the INCR on the silent master fails when its
		// connection drops, not on a timeout of its own.
		ReadTimeout: 10 * time.Second,
		Observer:    s.d.metrics.SentinelObserver(s.observe),
	})
	if err != nil {
		return err
	}
	s.client = client
	return nil
}

// observe records a client event and signals the failover's start once.
func (s *failoverStep) observe(ev sentinel.Event) {
	s.mu.Lock()
	s.events = append(s.events, ev)
	s.mu.Unlock()
	if ev.Kind == sentinel.EventFailoverStarted {
		select {
		case s.started <- struct{}{}:
		default:
		}
	}
}

// prepare writes the key the readers GET and starts the election, waiting
// for its first round: before it the selector reads from the master, which
// is about to go silent.
func (s *failoverStep) prepare(ctx context.Context) error {
	// Durable: WAIT confirms the replicas have it before the reads start.
	if err := s.client.Set(sentinel.WithDurable(ctx, true), "demo:stock", 42, 0).Err(); err != nil {
		return err
	}
	if err := s.sel.Start(); err != nil {
		return err
	}
	if err := s.sel.WaitRound(ctx, 1); err != nil {
		return err
	}
	fmt.Fprintf(s.d.out, "the rediskit Sentinel client (reads: replicaPreferred) writes to %s (%s)\n", s.old.Name(), s.old.Addr())
	return nil
}

// startReaders starts 4 readers that GET from the replicas until
// stopReaders.
func (s *failoverStep) startReaders(ctx context.Context) {
	for range 4 {
		s.readers.Go(func() {
			for {
				select {
				case <-s.stopReads:
					return
				default:
				}
				s.readOnce(ctx)
			}
		})
	}
}

// readOnce GETs the stock key and records the outcome.
func (s *failoverStep) readOnce(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	start := time.Now()
	err := s.client.Get(rctx, "demo:stock").Err()
	cancel()
	value := err == nil
	if errors.Is(err, redis.Nil) {
		err = nil
	}
	s.mu.Lock()
	s.reads = append(s.reads, failoverRead{at: time.Now(), took: time.Since(start), err: err, value: value})
	s.mu.Unlock()
}

// stopReaders stops the readers and waits for them; it may be called more
// than once.
func (s *failoverStep) stopReaders() {
	select {
	case <-s.stopReads:
	default:
		close(s.stopReads)
	}
	s.readers.Wait()
}

// armHeldWrite starts the SET sent as soon as the client reports the
// failover started: it is held, then runs on the new master.
func (s *failoverStep) armHeldWrite(wctx context.Context) {
	s.writers.Go(func() {
		select {
		case <-wctx.Done():
			s.held <- writeOutcome{err: wctx.Err()}
			return
		case <-s.started:
		}
		start := time.Now()
		err := s.client.Set(wctx, "demo:restock", "sent during the failover", 0).Err()
		s.held <- writeOutcome{err: err, took: time.Since(start)}
	})
}

// silenceOldMaster black-holes the old master's network, then sends the
// INCR that will be in flight on it when the failover happens.
func (s *failoverStep) silenceOldMaster(wctx context.Context) {
	s.old.BlackHole()
	s.began = time.Now()
	s.writers.Go(func() {
		start := time.Now()
		err := s.client.Incr(wctx, "demo:orders").Err()
		s.inflight <- writeOutcome{err: err, took: time.Since(start)}
	})
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintf(s.d.out, "%s's network goes silent (its proxy swallows everything); an INCR demo:orders is in flight on it\n", s.old.Name())
}

// failOver sends SENTINEL FAILOVER and waits for the client to follow it;
// then it drops the old master's connections, the INCR's among them, and
// collects both writes' outcomes.
func (s *failoverStep) failOver(ctx context.Context) error {
	res, err := s.l.Failover(ctx)
	if err != nil {
		return err
	}
	s.res = res
	newMaster := res.NewMaster
	if err := waitUntil(ctx, 10*time.Second, func() bool { return s.client.Master() == newMaster.Addr() }); err != nil {
		return fmt.Errorf("the client did not follow the failover to %s", newMaster.Addr())
	}
	// The connection that carries the INCR drops.
	s.old.ResetConnections()
	select {
	case s.inflightResult = <-s.inflight:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case s.heldResult = <-s.held:
	case <-time.After(10 * time.Second):
		return errors.New("the write sent during the failover never returned")
	}
	return nil
}

// printTimeline prints the failover as the sentinels and the client saw
// it, in milliseconds from the request.
func (s *failoverStep) printTimeline() {
	s.mu.Lock()
	evs := slices.Clone(s.events)
	s.mu.Unlock()
	res, out := s.res, s.d.out
	at := func(t time.Time) string {
		return fmt.Sprintf("%+7.0fms", float64(t.Sub(res.Requested).Microseconds())/1000)
	}
	fmt.Fprintf(out, "%s  SENTINEL FAILOVER %s sent to %s\n", at(res.Requested), s.l.MasterName(), res.Sentinel)
	for _, ev := range evs {
		switch ev.Kind {
		case sentinel.EventFailoverStarted:
			fmt.Fprintf(out, "%s  the client hears the leader pick %s: writes are held from now on\n", at(ev.Time), nodeName(s.l, ev.Candidate))
		case sentinel.EventMasterChanged:
			if ev.Time.After(res.Requested) {
				fmt.Fprintf(out, "%s  the client routes writes to %s (%s answers ROLE master)\n", at(ev.Time), nodeName(s.l, ev.Master), ev.Master)
			}
		}
	}
	fmt.Fprintf(out, "%s  every sentinel names %s\n", at(res.Agreed), res.NewMaster.Name())
}

// reportWrites prints both writes' outcomes and fails unless the INCR in
// flight returned a *MasterChangedError and was not re-run.
func (s *failoverStep) reportWrites(ctx context.Context) error {
	newMaster, hw, inf, out := s.res.NewMaster, s.heldResult, s.inflightResult, s.d.out
	fmt.Fprintf(out, "the SET sent while writes were held: ")
	if hw.err != nil {
		fmt.Fprintf(out, "failed: %v\n", hw.err)
	} else {
		v, _ := newMaster.Do(ctx, "GET", "demo:restock").Text()
		fmt.Fprintf(out, "waited %v, then ran once on %s (GET there: %q)\n", hw.took.Round(time.Millisecond), newMaster.Name(), v)
	}
	fmt.Fprintf(out, "the INCR in flight on %s returned after %v with the error a caller sees:\n  %v\n",
		s.old.Name(), inf.took.Round(time.Millisecond), inf.err)
	var mce *sentinel.MasterChangedError
	if !errors.As(inf.err, &mce) {
		return fmt.Errorf("the in-flight INCR returned %v, want a *sentinel.MasterChangedError", inf.err)
	}
	if n, _ := newMaster.Do(ctx, "EXISTS", "demo:orders").Int(); n != 0 {
		return fmt.Errorf("the in-flight INCR was re-run on %s", newMaster.Name())
	}
	fmt.Fprintf(out, "  it was not re-run: demo:orders does not exist on %s; whether to run it again is the caller's decision\n", newMaster.Name())
	return nil
}

// reportReads prints the reads from the silence to ended: how many were
// answered and failed, their latency, and why the tail is what it is.
func (s *failoverStep) reportReads(ended time.Time) error {
	s.mu.Lock()
	rs := slices.Clone(s.reads)
	s.mu.Unlock()
	lat, failed, missing := readFigures(rs, s.began)
	if len(lat) == 0 {
		return fmt.Errorf("no read was answered during the failover (%d failed)", failed)
	}
	out := s.d.out
	fmt.Fprintf(out, "reads kept going: %d GETs answered and %d failed in the %v from the silence to the end; latency p50 %v, p99 %v, max %v\n",
		len(lat), failed, ended.Sub(s.began).Round(time.Millisecond), lat[len(lat)/2].Round(100*time.Microsecond),
		lat[len(lat)*99/100].Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond))
	if st := s.client.Stats(); st.ReadsRetried > 0 {
		fmt.Fprintf(out, "  the client re-ran %d reads once after their connection dropped (a replica changing masters, a re-resolution first); they make the tail\n", st.ReadsRetried)
	}
	if missing > 0 {
		fmt.Fprintf(out, "  %d of the answers had no value: a replica behind the master\n", missing)
	}
	return nil
}

// readFigures counts the reads that ended at or after since: the answered
// ones' latencies (sorted), how many failed, and how many answers had no
// value.
func readFigures(rs []failoverRead, since time.Time) (lat []time.Duration, failed, missing int) {
	for _, r := range rs {
		if r.at.Before(since) {
			continue
		}
		if r.err != nil {
			failed++
			continue
		}
		if !r.value {
			missing++
		}
		lat = append(lat, r.took)
	}
	slices.Sort(lat)
	return lat, failed, missing
}

// nodeName names a lab node by address ("node1"), or returns the address.
func nodeName(l *lab.Lab, addr string) string {
	if n := l.NodeByAddr(addr); n != nil {
		return n.Name()
	}
	return addr
}

// waitUntil polls cond every millisecond until it holds, ctx ends or the
// limit passes.
func waitUntil(ctx context.Context, limit time.Duration, cond func() bool) error {
	deadline := time.Now().Add(limit)
	for !cond() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if time.Now().After(deadline) {
			return errors.New("timed out")
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}
