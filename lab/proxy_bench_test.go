//go:build unix

package lab

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BenchmarkProxyPrecision separates where the time of a GET through the
// latency proxy goes: the server alone (direct), the relay without delay
// (proxy-0ms), with the 6 ms round trip of the replica benchmarks
// (proxy-6ms) and the same on a runtime timer, the clock used where there
// is no timerfd (proxy-6ms-runtime-timer); 8 goroutines each send GETs one
// after the other. It reports the GET latency percentiles (p50-us, p90-us,
// p99-us, p99/p50), how late the proxy wrote chunks after they were due
// (late-p50-us, late-p99-us), the Go scheduler's run-queue latency over the
// run (sched-p50-us, sched-p99-us) and the CPU time per GET of this process
// (cpu-us/op: the client and the proxy) and of redis-server
// (srv-cpu-us/op, in 10 ms ticks).
//
//	go test -run '^$' -bench ProxyPrecision -benchtime 8000x ./lab/
func BenchmarkProxyPrecision(b *testing.B) {
	ctx := context.Background()
	l, err := Start(ctx, Config{})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	n := l.Node(0)
	var mu sync.Mutex
	var late []time.Duration
	trace := func(due, now time.Time) {
		mu.Lock()
		late = append(late, now.Sub(due))
		mu.Unlock()
	}
	if err := n.Do(ctx, "SET", "k", "v").Err(); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		latency time.Duration
		direct  bool
		clock   func() clock // the delay queue's clock; nil for the default
	}{
		{"direct", 0, true, nil},
		{"proxy-0ms", 0, false, nil},
		{"proxy-6ms", 6 * time.Millisecond, false, nil},
		{"proxy-6ms-runtime-timer", 6 * time.Millisecond, false, func() clock { return newRuntimeClock() }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			o := n.Options()
			if !tc.direct {
				p, err := NewProxy("127.0.0.1:0", n.DirectAddr())
				if err != nil {
					b.Fatal(err)
				}
				defer func() { _ = p.Close() }()
				p.trace = trace
				p.SetLatency(tc.latency)
				p.delay.useClock(tc.clock) // nil: the default
				o.Addr = p.Addr()
			} else {
				o.Addr = n.DirectAddr()
			}
			o.PoolSize = 16
			c := redis.NewClient(o)
			defer c.Close()
			const workers = 8
			// Warm the pool: every worker's connection is open.
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() { _ = c.Get(ctx, "k").Err() })
			}
			wg.Wait()
			mu.Lock()
			late = late[:0]
			mu.Unlock()

			per := make([][]time.Duration, workers)
			next := make(chan struct{}, b.N)
			for range b.N {
				next <- struct{}{}
			}
			close(next)
			sched0 := schedLatencies()
			cpu0, srv0 := processCPU(), serverCPU(n.PID())
			b.ResetTimer()
			for w := range workers {
				wg.Go(func() {
					for range next {
						t0 := time.Now()
						if err := c.Get(ctx, "k").Err(); err != nil {
							b.Error(err)
							return
						}
						per[w] = append(per[w], time.Since(t0))
					}
				})
			}
			wg.Wait()
			b.StopTimer()
			cpu, srv := processCPU()-cpu0, serverCPU(n.PID())-srv0
			sched := schedLatencies().sub(sched0)
			all := slices.Concat(per...)
			slices.Sort(all)
			p50, p90, p99 := pct(all, 50), pct(all, 90), pct(all, 99)
			b.ReportMetric(us(p50), "p50-us")
			b.ReportMetric(us(p90), "p90-us")
			b.ReportMetric(us(p99), "p99-us")
			b.ReportMetric(float64(p99)/float64(p50), "p99/p50")
			mu.Lock()
			if !tc.direct {
				slices.Sort(late)
				b.ReportMetric(us(pct(late, 50)), "late-p50-us")
				b.ReportMetric(us(pct(late, 99)), "late-p99-us")
			}
			mu.Unlock()
			b.ReportMetric(us(sched.pct(50)), "sched-p50-us")
			b.ReportMetric(us(sched.pct(99)), "sched-p99-us")
			b.ReportMetric(us(cpu)/float64(b.N), "cpu-us/op")
			b.ReportMetric(us(srv)/float64(b.N), "srv-cpu-us/op")
			b.ReportMetric(0, "ns/op")
		})
	}
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func pct(sorted []time.Duration, q int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[(len(sorted)-1)*q/100]
}

// processCPU is the user and system time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// serverCPU is the user and system time process pid has used (0 when it
// cannot be read).
func serverCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// utime and stime are fields 14 and 15 of stat, in clock ticks (100 Hz).
	ut, _ := strconv.ParseInt(fields[11], 10, 64)
	st, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

type histogram struct {
	counts  []uint64
	buckets []float64
}

func schedLatencies() histogram {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	h := s[0].Value.Float64Histogram()
	return histogram{counts: slices.Clone(h.Counts), buckets: h.Buckets}
}

func (h histogram) sub(o histogram) histogram {
	d := histogram{counts: slices.Clone(h.counts), buckets: h.buckets}
	for i := range d.counts {
		d.counts[i] -= o.counts[i]
	}
	return d
}

// pct is the upper bound of the bucket holding the q-th percentile.
func (h histogram) pct(q int) time.Duration {
	var total uint64
	for _, c := range h.counts {
		total += c
	}
	if total == 0 {
		return 0
	}
	want := (total*uint64(q) + 99) / 100
	var seen uint64
	for i, c := range h.counts {
		seen += c
		if seen >= want {
			return time.Duration(h.buckets[i+1] * float64(time.Second))
		}
	}
	return 0
}

// BenchmarkProxyCutCheck is the partition check the proxy makes on every
// accepted connection and every chunk: with no partition (one atomic
// load), and with one on whose cut set the source is or is not (a map
// lookup on top). It must stay negligible next to a chunk's relay (tens of
// microseconds, BenchmarkProxyPrecision).
//
//	go test -run '^$' -bench ProxyCutCheck ./lab/
func BenchmarkProxyCutCheck(b *testing.B) {
	src := netip.MustParseAddr("127.0.0.3")
	from := map[netip.Addr]struct{}{}
	for i := 4; i < 10; i++ {
		from[netip.AddrFrom4([4]byte{127, 0, 0, byte(i)})] = struct{}{}
	}
	for _, tc := range []struct {
		name string
		cut  *cutSet
		want CutMode
	}{
		{"none", nil, 0},
		{"partitioned-passes", &cutSet{mode: Drop, from: from}, 0},
		{"partitioned-cut", &cutSet{mode: Drop, from: map[netip.Addr]struct{}{src: {}}}, Drop},
	} {
		b.Run(tc.name, func(b *testing.B) {
			p := &Proxy{}
			p.cut.Store(tc.cut)
			for b.Loop() {
				if p.cutMode(src) != tc.want {
					b.Fatal("wrong mode")
				}
			}
		})
	}
}
