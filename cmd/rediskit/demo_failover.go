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
func (d *demo) failoverTour(ctx context.Context) error {
	l := d.lab
	old, err := l.Master(ctx)
	if err != nil {
		return err
	}

	var mu sync.Mutex
	var events []sentinel.Event
	started := make(chan struct{}, 1)
	// The latency-aware election, started before the failover so reads go
	// to a replica from the first one (before its first probe round the
	// selector reads from the master, which is about to go silent).
	sel, err := replica.NewSelector(replica.DefaultConfig())
	if err != nil {
		return err
	}
	client, err := sentinel.NewClient(sentinel.Options{
		ReplicaSelector:  sel,
		MasterName:       l.MasterName(),
		SentinelAddrs:    l.SentinelAddrs(),
		Password:         l.Config().Password,
		SentinelPassword: l.Config().SentinelPassword,
		TLSConfig:        l.TLSConfig(),
		ReadFrom:         sentinel.ReplicaPreferred,
		// Long enough that the INCR on the silent master fails when its
		// connection drops, not on a timeout of its own.
		ReadTimeout: 10 * time.Second,
		Observer: d.metrics.SentinelObserver(func(ev sentinel.Event) {
			mu.Lock()
			events = append(events, ev)
			mu.Unlock()
			if ev.Kind == sentinel.EventFailoverStarted {
				select {
				case started <- struct{}{}:
				default:
				}
			}
		}),
	})
	if err != nil {
		return err
	}
	defer client.Close()
	// Durable: WAIT confirms the replicas have it before the reads start.
	if err := client.Set(sentinel.WithDurable(ctx, true), "demo:stock", 42, 0).Err(); err != nil {
		return err
	}
	if err := sel.Start(); err != nil {
		return err
	}
	if err := sel.WaitRound(ctx, 1); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "the rediskit Sentinel client (reads: replicaPreferred) writes to %s (%s)\n", old.Name(), old.Addr())

	// Readers: GET from the replicas all along.
	type read struct {
		at    time.Time
		took  time.Duration
		err   error
		value bool // the reply had the value (not nil: a replica behind)
	}
	var reads []read
	stopReads := make(chan struct{})
	var readers sync.WaitGroup
	for range 4 {
		readers.Go(func() {
			for {
				select {
				case <-stopReads:
					return
				default:
				}
				rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				start := time.Now()
				err := client.Get(rctx, "demo:stock").Err()
				cancel()
				value := err == nil
				if errors.Is(err, redis.Nil) {
					err = nil
				}
				mu.Lock()
				reads = append(reads, read{at: time.Now(), took: time.Since(start), err: err, value: value})
				mu.Unlock()
			}
		})
	}
	defer func() {
		select {
		case <-stopReads:
		default:
			close(stopReads)
		}
		readers.Wait()
	}()

	// The held write: sent as soon as the client reports the failover
	// started.
	type outcome struct {
		err  error
		took time.Duration
	}
	held := make(chan outcome, 1)
	// On the way out, in this order: end the writers' context, drop the
	// old master's connections (so a write stuck on them returns), wait
	// for the writers, restore the old master's network.
	var writers sync.WaitGroup
	wctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		old.ResetConnections()
		writers.Wait()
		old.Restore()
	}()
	writers.Go(func() {
		select {
		case <-wctx.Done():
			held <- outcome{err: wctx.Err()}
			return
		case <-started:
		}
		start := time.Now()
		err := client.Set(wctx, "demo:restock", "sent during the failover", 0).Err()
		held <- outcome{err: err, took: time.Since(start)}
	})

	// The in-flight write: the old master goes silent, then the INCR.
	old.BlackHole()
	began := time.Now()
	inflight := make(chan outcome, 1)
	writers.Go(func() {
		start := time.Now()
		err := client.Incr(wctx, "demo:orders").Err()
		inflight <- outcome{err: err, took: time.Since(start)}
	})
	time.Sleep(200 * time.Millisecond)
	fmt.Fprintf(d.out, "%s's network goes silent (its proxy swallows everything); an INCR demo:orders is in flight on it\n", old.Name())

	res, err := l.Failover(ctx)
	if err != nil {
		return err
	}
	newMaster := res.NewMaster
	if err := waitUntil(ctx, 10*time.Second, func() bool { return client.Master() == newMaster.Addr() }); err != nil {
		return fmt.Errorf("the client did not follow the failover to %s", newMaster.Addr())
	}
	// The connection that carries the INCR drops.
	old.ResetConnections()
	var inf, hw outcome
	select {
	case inf = <-inflight:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case hw = <-held:
	case <-time.After(10 * time.Second):
		return errors.New("the write sent during the failover never returned")
	}
	close(stopReads)
	readers.Wait()
	ended := time.Now()

	// The timeline.
	mu.Lock()
	evs := slices.Clone(events)
	rs := slices.Clone(reads)
	mu.Unlock()
	at := func(t time.Time) string {
		return fmt.Sprintf("%+7.0fms", float64(t.Sub(res.Requested).Microseconds())/1000)
	}
	fmt.Fprintf(d.out, "%s  SENTINEL FAILOVER %s sent to %s\n", at(res.Requested), l.MasterName(), res.Sentinel)
	for _, ev := range evs {
		switch ev.Kind {
		case sentinel.EventFailoverStarted:
			fmt.Fprintf(d.out, "%s  the client hears the leader pick %s: writes are held from now on\n", at(ev.Time), nodeName(l, ev.Candidate))
		case sentinel.EventMasterChanged:
			if ev.Time.After(res.Requested) {
				fmt.Fprintf(d.out, "%s  the client routes writes to %s (%s answers ROLE master)\n", at(ev.Time), nodeName(l, ev.Master), ev.Master)
			}
		}
	}
	fmt.Fprintf(d.out, "%s  every sentinel names %s\n", at(res.Agreed), newMaster.Name())

	// The writes.
	fmt.Fprintf(d.out, "the SET sent while writes were held: ")
	if hw.err != nil {
		fmt.Fprintf(d.out, "failed: %v\n", hw.err)
	} else {
		v, _ := newMaster.Do(ctx, "GET", "demo:restock").Text()
		fmt.Fprintf(d.out, "waited %v, then ran once on %s (GET there: %q)\n", hw.took.Round(time.Millisecond), newMaster.Name(), v)
	}
	fmt.Fprintf(d.out, "the INCR in flight on %s returned after %v with the error a caller sees:\n  %v\n",
		old.Name(), inf.took.Round(time.Millisecond), inf.err)
	var mce *sentinel.MasterChangedError
	if !errors.As(inf.err, &mce) {
		return fmt.Errorf("the in-flight INCR returned %v, want a *sentinel.MasterChangedError", inf.err)
	}
	if n, _ := newMaster.Do(ctx, "EXISTS", "demo:orders").Int(); n == 0 {
		fmt.Fprintf(d.out, "  it was not re-run: demo:orders does not exist on %s; whether to run it again is the caller's decision\n", newMaster.Name())
	} else {
		return fmt.Errorf("the in-flight INCR was re-run on %s", newMaster.Name())
	}

	// The reads.
	var lat []time.Duration
	failed, missing := 0, 0
	for _, r := range rs {
		if r.at.Before(began) {
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
	if len(lat) == 0 {
		return fmt.Errorf("no read was answered during the failover (%d failed)", failed)
	}
	slices.Sort(lat)
	fmt.Fprintf(d.out, "reads kept going: %d GETs answered and %d failed in the %v from the silence to the end; latency p50 %v, p99 %v, max %v\n",
		len(lat), failed, ended.Sub(began).Round(time.Millisecond), lat[len(lat)/2].Round(100*time.Microsecond),
		lat[len(lat)*99/100].Round(100*time.Microsecond), lat[len(lat)-1].Round(100*time.Microsecond))
	if st := client.Stats(); st.ReadsRetried > 0 {
		fmt.Fprintf(d.out, "  the client re-ran %d reads once after their connection dropped (a replica changing masters, a re-resolution first); they make the tail\n", st.ReadsRetried)
	}
	if missing > 0 {
		fmt.Fprintf(d.out, "  %d of the answers had no value: a replica behind the master\n", missing)
	}
	return nil
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
