package sentinel

import (
	"errors"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

// durableGap is what one planned failover did to durable writes.
type durableGap struct {
	// converted is when the old master answered ROLE as a connected
	// replica of the new one, after the failover command: polled every
	// 10 ms, so the conversion happened at or before it, and after
	// notYet, when the last ROLE that found it not yet converted was
	// sent.
	converted, notYet time.Duration
	// resumed is when the first durable write after the failover command
	// was acknowledged.
	resumed time.Duration
	// refusedUnsent and failedAfterRunning count the durable writes that
	// failed in between: refused before they were sent (the client knew a
	// counted replica could not confirm), or run and not confirmed.
	refusedUnsent, failedAfterRunning int
}

// measureDurableGap runs durable INCRs without pause through a SENTINEL
// FAILOVER of a 1 master + 1 replica lab with the given sentinel timings
// and reports when durable writes were acknowledged again and when the
// old master was converted. With one replica, after the switch the only
// other node is the old master: Sentinel lists it as a replica of the new
// master and could promote it, with none of the new master's writes,
// until it has converted it (at the first INFO it sends four publish
// periods after the switch), so no durable write can be confirmed before.
func measureDurableGap(tb testing.TB, infoPeriod, publishPeriod time.Duration) durableGap {
	tb.Helper()
	ctx := testkit.Context(tb, 60*time.Second)
	cfg := lab.Sentinel(1)
	cfg.SentinelInfoPeriod, cfg.SentinelPublishPeriod = infoPeriod, publishPeriod
	cfg.Logger = nil
	l, err := lab.Start(ctx, cfg)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = l.Close() })
	old := l.Node(0)
	c, err := NewClient(Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(),
		Durable: true, DurableTimeout: 200 * time.Millisecond, RefreshInterval: 100 * time.Millisecond})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	for deadline := time.Now().Add(10 * time.Second); len(c.Stats().DurableReplicas) != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			tb.Fatal("the replica is not counted for durable writes")
		}
	}
	if err := c.Incr(ctx, "gap").Err(); err != nil {
		tb.Fatalf("durable INCR before the failover: %v", err)
	}

	var gap durableGap
	began := time.Now()
	done := make(chan error, 1)
	go func() {
		_, err := l.Failover(ctx)
		done <- err
	}()
	converted := make(chan [2]time.Duration, 1) // converted, notYet
	go func() {
		var notYet time.Duration
		for ctx.Err() == nil {
			asked := time.Since(began)
			r, err := old.Role(ctx)
			if err == nil && r.Role == "slave" && r.LinkState == "connected" {
				converted <- [2]time.Duration{time.Since(began), notYet}
				return
			}
			if err == nil {
				notYet = asked
			}
			time.Sleep(10 * time.Millisecond)
		}
		converted <- [2]time.Duration{-1, -1}
	}()
	for gap.resumed == 0 {
		if ctx.Err() != nil {
			tb.Fatalf("no durable write acknowledged within the test's bound after the failover (%d refused unsent, %d not confirmed)",
				gap.refusedUnsent, gap.failedAfterRunning)
		}
		err := c.Incr(ctx, "gap").Err()
		var nde *NotDurableError
		switch {
		case err == nil:
			if time.Since(began) > 50*time.Millisecond && c.Master() != old.Addr() {
				gap.resumed = time.Since(began)
			}
		case errors.As(err, &nde) && nde.NotSent:
			gap.refusedUnsent++
			time.Sleep(5 * time.Millisecond)
		case errors.As(err, &nde):
			gap.failedAfterRunning++
		default:
			time.Sleep(5 * time.Millisecond) // held or refused by the switch
		}
	}
	if err := <-done; err != nil {
		tb.Fatal(err)
	}
	bounds := <-converted
	gap.converted, gap.notYet = bounds[0], bounds[1]
	return gap
}

// Durable writes resume once the old master has been converted, and not
// long after (one refresh and the old master's synchronisation); the
// writes that fail in between are refused before they are sent, as far as
// the client knew that a counted replica could not confirm them.
func TestDurableWritesResumeWhenTheOldMasterIsConverted(t *testing.T) {
	gap := measureDurableGap(t, lab.DefaultSentinelInfoPeriod, lab.DefaultSentinelPublishPeriod)
	t.Logf("lab timings: old master converted between %v and %v and durable writes acknowledged again %v after SENTINEL FAILOVER; %d refused unsent, %d run and not confirmed in between",
		gap.notYet.Round(time.Millisecond), gap.converted.Round(time.Millisecond), gap.resumed.Round(time.Millisecond), gap.refusedUnsent, gap.failedAfterRunning)
	if gap.converted < 0 {
		t.Fatal("the old master was never converted")
	}
	// The conversion is known to lie between the last ROLE that found the
	// old master not converted and the first that found it converted
	// (polled): a write acknowledged before the earlier of the two was
	// acknowledged before the conversion. One acknowledged within the
	// poll's interval says nothing either way (the WAIT that confirmed it
	// needed the converted old master's ACK).
	if gap.resumed < gap.notYet {
		t.Fatalf("a durable write was acknowledged %v after the failover, when the old master was not converted yet (ROLE sent at %v said so; converted by %v): Sentinel could still have promoted it",
			gap.resumed, gap.notYet, gap.converted)
	}
	// After the conversion: the old master's full sync, then the refresh
	// that sees it connected (100 ms).
	if slack := 3 * time.Second; gap.resumed > gap.converted+slack {
		t.Fatalf("durable writes resumed %v after the old master was converted (at %v); want within %v", gap.resumed-gap.converted, gap.converted, slack)
	}
	if gap.refusedUnsent == 0 {
		t.Fatal("no durable write was refused unsent while the old master could not confirm")
	}
}

// BenchmarkDurableGapAfterFailover measures, for the lab's sentinel
// timings and Redis's production ones (info-period 10 s, publish-period
// 2 s), how long durable writes fail after a SENTINEL FAILOVER: until
// Sentinel converts the old master (four publish periods after the switch,
// at its next INFO), which no client can shorten safely (see the package
// documentation).
func BenchmarkDurableGapAfterFailover(b *testing.B) {
	for _, tm := range []struct {
		name          string
		info, publish time.Duration
	}{
		{"timings=lab", lab.DefaultSentinelInfoPeriod, lab.DefaultSentinelPublishPeriod},
		{"timings=production", 10 * time.Second, 2 * time.Second},
	} {
		b.Run(tm.name, func(b *testing.B) {
			var converted, resumed time.Duration
			n := 0
			for b.Loop() {
				gap := measureDurableGap(b, tm.info, tm.publish)
				converted += gap.converted
				resumed += gap.resumed
				n++
			}
			b.ReportMetric((converted / time.Duration(n)).Seconds(), "converted-s")
			b.ReportMetric((resumed / time.Duration(n)).Seconds(), "gap-s")
		})
	}
}
