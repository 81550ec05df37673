//go:build unix

package lab

import (
	"context"
	"strings"
	"testing"
	"time"
)

// BenchmarkStartClose measures starting and closing the topology most
// failover tests use: 1 master, 2 replicas, 3 sentinels, with proxies. It
// reports start-ms and close-ms per lab.
func BenchmarkStartClose(b *testing.B) {
	benchStartClose(b, Config{Replicas: 2, Sentinels: 3, Proxy: true})
}

// BenchmarkStartClosePartitions is BenchmarkStartClose with
// Config.Partitions: an address of its own for every process and a proxy
// in front of each sentinel too.
func BenchmarkStartClosePartitions(b *testing.B) {
	benchStartClose(b, Config{Replicas: 2, Sentinels: 3, Partitions: true})
}

// BenchmarkStartCloseCluster measures a 3×1 Redis Cluster (every node
// behind proxies for its client port and its bus): start means until every
// node agrees (ClusterReady) and every replica has acknowledged its
// master's offset. Redis holds a new master's cluster_state at fail for
// its first 2 s (CLUSTER_WRITABLE_DELAY): that is the floor.
func BenchmarkStartCloseCluster(b *testing.B) {
	benchStartClose(b, Cluster(3, 1))
}

// BenchmarkStartCloseCluster3x2 is BenchmarkStartCloseCluster for 3×2.
func BenchmarkStartCloseCluster3x2(b *testing.B) {
	benchStartClose(b, Cluster(3, 2))
}

func benchStartClose(b *testing.B, cfg Config) {
	var start, stop time.Duration
	for b.Loop() {
		t0 := time.Now()
		l, err := Start(context.Background(), cfg)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		start += t1.Sub(t0)
		stop += time.Since(t1)
	}
	b.ReportMetric(float64(start.Milliseconds())/float64(b.N), "start-ms")
	b.ReportMetric(float64(stop.Microseconds())/1000/float64(b.N), "close-ms")
}

// BenchmarkFailoverTimeline measures a failover's timeline on the lab
// BenchmarkStartClose starts (1 master, 2 replicas, 3 sentinels, proxies),
// with the lab's sentinel timings (info-period 1 s, publish-period 0.5 s)
// and with Redis's production ones (10 s, 2 s). From SENTINEL FAILOVER:
// the first sentinel's +switch-master (first-switch-s), the leading
// sentinel's own (leader-switch-s), every sentinel naming the new master
// (agreed-s), and the old master turned into a replica, the
// +convert-to-slave event (convert-s); until then the old master still
// accepts writes. Each iteration starts its own lab (not timed) and takes
// 5 s (lab timings) to 20 s (production timings); make test runs no
// benchmarks. go test -run '^$' -bench FailoverTimeline -benchtime 3x ./lab/
func BenchmarkFailoverTimeline(b *testing.B) {
	for _, tc := range []struct {
		name          string
		info, publish time.Duration
	}{
		{"lab-timings", DefaultSentinelInfoPeriod, DefaultSentinelPublishPeriod},
		{"production-timings", 10 * time.Second, 2 * time.Second},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var first, leader, agreed, convert time.Duration
			for b.Loop() {
				b.StopTimer()
				l, err := Start(context.Background(), Config{Replicas: 2, Sentinels: 3, Proxy: true,
					SentinelInfoPeriod: tc.info, SentinelPublishPeriod: tc.publish})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				res, err := l.Failover(ctx)
				if err != nil {
					cancel()
					b.Fatal(err)
				}
				ev, err := l.WaitEvent(ctx, res.Requested, func(ev SentinelEvent) bool {
					return ev.Type == "+convert-to-slave" && strings.Contains(ev.Payload, res.OldMaster.Addr())
				})
				cancel()
				if err != nil {
					b.Fatal(err)
				}
				f := time.Duration(-1)
				for _, at := range res.SwitchMaster {
					if d := at.Sub(res.Requested); f < 0 || d < f {
						f = d
					}
				}
				ld := res.SwitchMaster[res.Sentinel].Sub(res.Requested)
				cv := ev.At.Sub(res.Requested)
				first, leader, agreed, convert = first+f, leader+ld, agreed+res.Duration(), convert+cv
				b.Logf("after the request: first +switch-master %v, the leader's %v, agreed %v, +convert-to-slave %v",
					f.Round(time.Millisecond), ld.Round(time.Millisecond), res.Duration().Round(time.Millisecond), cv.Round(time.Millisecond))
				b.StopTimer()
				if err := l.Close(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
			n := float64(b.N)
			b.ReportMetric(first.Seconds()/n, "first-switch-s")
			b.ReportMetric(leader.Seconds()/n, "leader-switch-s")
			b.ReportMetric(agreed.Seconds()/n, "agreed-s")
			b.ReportMetric(convert.Seconds()/n, "convert-s")
		})
	}
}
