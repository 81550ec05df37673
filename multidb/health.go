package multidb

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/routing"
)

// Probe checks a database once: nil means it passed. ctx carries the
// probe's timeout (Config.ProbeTimeout). A health check runs Config.Probes
// probes and the HealthPolicy decides. A probe that panics has failed
// (its error matches ErrProbePanicked).
type Probe func(ctx context.Context, db redis.UniversalClient) error

// PingProbe passes when PING answers PONG (the default probe).
func PingProbe() Probe {
	return func(ctx context.Context, db redis.UniversalClient) error {
		return db.Ping(ctx).Err()
	}
}

// WriteProbe passes when PING answers and a small SET succeeds, using
// package guard's health check (guard.Checker with WriteProbe): it tells a
// writable primary from a server that answers PING but refuses writes (a
// read-only replica, a primary out of memory). The key is
// "<keyPrefix>:health:write", with a 60 s TTL; use a prefix the
// application owns.
func WriteProbe(keyPrefix string) (Probe, error) {
	// Validate the prefix once, the way guard does (guard.New makes no
	// call; the client is never used, but must be one guard accepts:
	// rediskit's client policy).
	unused := redis.NewClient(redisopt.Inner(&redis.Options{}))
	_, err := guard.New(unused, guard.Config{KeyPrefix: keyPrefix})
	_ = unused.Close()
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, db redis.UniversalClient) error {
		limit := DefaultProbeTimeout
		if dl, ok := ctx.Deadline(); ok {
			limit = time.Until(dl)
			if limit <= 0 {
				return context.DeadlineExceeded
			}
		}
		g, err := guard.New(db, guard.Config{KeyPrefix: keyPrefix, CallLimit: limit})
		if err != nil {
			return err
		}
		chk, err := guard.NewChecker(g, guard.HealthConfig{WriteProbe: true})
		if err != nil {
			return err
		}
		rep, err := chk.Check(ctx)
		switch {
		case err != nil:
			return err
		case rep.State != guard.StateWritable:
			if rep.Err != nil {
				return rep.Err
			}
			return fmt.Errorf("write probe: %s", rep.State)
		}
		return nil
	}, nil
}

// ErrReplicationLag is what ReplicationProbe fails with when a replica's
// link to its master is down or older than allowed.
var ErrReplicationLag error = routing.NewTransient("multidb: replica lags its master", time.Second, false)

// ReplicationProbe passes on a master, and on a replica whose link to its
// master is up and heard from within maxLag (INFO replication:
// master_link_status and master_last_io_seconds_ago, which Redis reports
// in whole seconds). It fails on a replica that lost its master or lags:
// for a standby kept as a replica of the primary, it keeps traffic from
// moving to stale data. (Such a standby refuses writes until promoted;
// pair it with a probe that checks writes if it must take them.)
func ReplicationProbe(maxLag time.Duration) Probe {
	return func(ctx context.Context, db redis.UniversalClient) error {
		s, err := db.Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		info := redisinfo.ParseInfo(s)
		if info["role"] != "slave" {
			return nil
		}
		if st := info["master_link_status"]; st != "up" {
			return fmt.Errorf("%w: link to master %s:%s is %s", ErrReplicationLag, info["master_host"], info["master_port"], st)
		}
		secs, err := strconv.Atoi(info["master_last_io_seconds_ago"])
		if err != nil {
			return fmt.Errorf("%w: master_last_io_seconds_ago is %q", ErrReplicationLag, info["master_last_io_seconds_ago"])
		}
		if lag := time.Duration(secs) * time.Second; lag > maxLag {
			return fmt.Errorf("%w: last heard from its master %v ago (allowed %v)", ErrReplicationLag, lag, maxLag)
		}
		return nil
	}
}

// checkResult is one health check of one database.
type checkResult struct {
	healthy bool
	passed  int
	probes  int
	latency time.Duration // the last probe's
	err     error         // the last failed probe's
	// decisive: a probe failed otherwise than by a lost connection (see
	// failure.ConnectionLost: such a failure of a probe or a call made just
	// after a burst may be the burst itself, reaching the connection it
	// used; see burstVerdict); answered: when the last passing probe's
	// answer came (zero: none passed).
	decisive bool
	answered time.Time
}

// check runs one health check: up to probes probes, delay apart, each
// bounded by timeout, stopping as soon as policy has decided. It returns
// ctx's error when ctx ended before the check decided.
func check(ctx context.Context, client redis.UniversalClient, probe Probe, policy HealthPolicy,
	probes int, delay, timeout time.Duration) (checkResult, error) {
	r := checkResult{}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for i := 0; i < probes; i++ {
		if i > 0 && delay > 0 {
			var err error
			if timer, err = waitProbeDelay(ctx, timer, delay); err != nil {
				return r, err
			}
		}
		start, err := probeOnce(ctx, client, probe, timeout, &r)
		if ctx.Err() != nil {
			return r, ctx.Err()
		}
		r.record(start, err)
		if policyDecided(policy, &r, probes) {
			return r, nil
		}
	}
	r.healthy = policy == HealthyAll && r.passed == r.probes && r.probes > 0
	return r, nil
}

// waitProbeDelay waits delay between two probes, on timer (made on the
// first wait, nil, and reused after, so that a check makes one timer at
// most; check stops it), and returns the timer, and ctx's error if ctx
// ends first.
func waitProbeDelay(ctx context.Context, timer *time.Timer, delay time.Duration) (*time.Timer, error) {
	if timer == nil {
		timer = time.NewTimer(delay)
	} else {
		timer.Reset(delay)
	}
	select {
	case <-timer.C:
		return timer, nil
	case <-ctx.Done():
		return timer, ctx.Err()
	}
}

// probeOnce runs one probe bounded by timeout, records its latency in r,
// and returns when it started and its error, which says so when the
// timeout cut it.
func probeOnce(ctx context.Context, client redis.UniversalClient, probe Probe, timeout time.Duration, r *checkResult) (time.Time, error) {
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	err := runProbe(pctx, client, probe)
	r.latency = time.Since(start)
	if err != nil && errors.Is(pctx.Err(), context.DeadlineExceeded) {
		// Say so whatever form the error took: a read that timed out
		// on its socket, or a dial or handshake cut by the context.
		err = fmt.Errorf("no answer within the probe timeout (%v): %w", timeout, err)
	}
	return start, err
}

// record counts a probe that started at start and ended with err (r's
// latency already set): a pass, with when its answer came, or a failure,
// decisive unless it was a lost connection.
func (r *checkResult) record(start time.Time, err error) {
	r.probes++
	if err == nil {
		r.passed++
		r.answered = start.Add(r.latency)
		return
	}
	r.err = err
	r.decisive = r.decisive || !failure.ConnectionLost(err)
}

// policyDecided says whether policy has decided after r's probes, out of
// probes in all, and sets r.healthy when it decided healthy. HealthyAll
// decides here only on a failure (its pass needs every probe, which check
// judges after the last).
func policyDecided(policy HealthPolicy, r *checkResult, probes int) bool {
	failed := r.probes - r.passed
	switch policy {
	case HealthyAll:
		return failed > 0
	case HealthyAny:
		if r.passed > 0 {
			r.healthy = true
			return true
		}
	case HealthyMajority:
		if 2*r.passed > probes {
			r.healthy = true
			return true
		}
		return 2*failed >= probes
	}
	return false
}

// runProbe runs one probe. A probe that panics has failed, with an error
// matching ErrProbePanicked: the probe is the caller's code, run on the
// client's goroutines (the health loop, a burst check) where a panic would
// end the process, and a database whose check cannot tell that it is
// healthy is not (the same on the caller's goroutine, in SetActive and
// UpdateWeight, so that every check decides alike).
func runProbe(ctx context.Context, client redis.UniversalClient, probe Probe) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("%w: %v", ErrProbePanicked, v)
		}
	}()
	// Marked internal: the caller's hooks (AddHook) do not see the
	// client's own checks, Config.InternalHook does.
	return probe(routing.Internal(ctx), client)
}
