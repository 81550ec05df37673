package benchcmp

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client is one client of a throughput comparison: its name and how it
// runs one command, op ("GET" or "SET") on key.
type Client struct {
	Name string
	Do   func(ctx context.Context, op, key string) error
}

// RunOp runs op on key through a go-redis face (a client of ours, a
// go-redis client, an auto-pipeliner): GET, SET of a short value, INCR,
// or RPUSH of a short value.
func RunOp(ctx context.Context, c redis.Cmdable, op, key string) error {
	switch op {
	case "SET":
		return c.Set(ctx, key, "v", 0).Err()
	case "INCR":
		return c.Incr(ctx, key).Err()
	case "RPUSH":
		return c.RPush(ctx, key, "v").Err()
	}
	return c.Get(ctx, key).Err()
}

// Cost is what one client's turn cost: commands per second, and per
// command the process's CPU time (user and system, getrusage; 0 where the
// system has none) and its heap allocations.
type Cost struct {
	OpsPerSec, CPUPerOp, AllocsPerOp float64 // CPUPerOp in nanoseconds
	// P50 and P99 are the commands' latency quantiles (0 unless asked:
	// MeasureLatency).
	P50, P99 time.Duration
}

// Measure runs do from goroutines for d, each on keys in turn from an
// offset of its own, and returns what it cost. A reply of redis.Nil is a
// command done; any other error stops the run and is returned.
//
// The CPU time and the allocations are the whole process's: in a
// benchmark of clients taking turns against servers in other processes
// they are the client's own, plus the loop's, the same for every client
// (the lab's in-process proxies, where it has them, add theirs).
func Measure(ctx context.Context, goroutines int, d time.Duration, op string, keys []string, do func(ctx context.Context, op, key string) error) (Cost, error) {
	return measure(ctx, goroutines, d, op, keys, do, false)
}

// MeasureLatency is Measure that also times every command (two clock
// reads each) for Cost's P50 and P99.
func MeasureLatency(ctx context.Context, goroutines int, d time.Duration, op string, keys []string, do func(ctx context.Context, op, key string) error) (Cost, error) {
	return measure(ctx, goroutines, d, op, keys, do, true)
}

func measure(ctx context.Context, goroutines int, d time.Duration, op string, keys []string, do func(ctx context.Context, op, key string) error, timed bool) (Cost, error) {
	lat := make([][]time.Duration, goroutines)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	cpu0 := cpuTime()
	var n atomic.Int64
	var firstErr atomic.Value
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			k := g * len(keys) / goroutines
			for time.Now().Before(stop) {
				var began time.Time
				if timed {
					began = time.Now()
				}
				if err := do(ctx, op, keys[k]); err != nil && !errors.Is(err, redis.Nil) {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if timed {
					lat[g] = append(lat[g], time.Since(began))
				}
				n.Add(1)
				k = (k + 1) % len(keys)
			}
		})
	}
	wg.Wait()
	cpu1 := cpuTime()
	runtime.ReadMemStats(&after)
	if err, _ := firstErr.Load().(error); err != nil {
		return Cost{}, err
	}
	done := float64(max(n.Load(), 1))
	cost := Cost{
		OpsPerSec:   done / d.Seconds(),
		CPUPerOp:    float64(cpu1-cpu0) / done,
		AllocsPerOp: float64(after.Mallocs-before.Mallocs) / done,
	}
	if all := slices.Concat(lat...); len(all) > 0 {
		slices.Sort(all)
		cost.P50, cost.P99 = all[len(all)/2], all[len(all)*99/100]
	}
	return cost, nil
}

// Median is the median of v (the upper one of an even count).
func Median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}

// Comparison is a throughput comparison of clients: each op at each count
// of goroutines, rounds times, every client in turn for Turn within a
// round, so that they all see the same machine; the figures are medians
// over the rounds.
type Comparison struct {
	Rounds     int
	Turn       time.Duration
	Ops        []string
	Goroutines []int
	Keys       []string
	Clients    []Client
	// Base names the client the ratios are to; Versus names more, each
	// given a column of ratios of its own (rueidis, go-redis's
	// AutoPipeline).
	Base   string
	Versus []string
	// Tag starts the names of the reported metrics ("master", "cluster").
	Tag string
	// Latency adds each client's median p50 and p99 latency to the table
	// (MeasureLatency).
	Latency bool
}

// Run runs the comparison, reports for each client, op and count its
// median commands per second's ratio to Base and to each of Versus, and
// its CPU time per command, and returns the figures as a Markdown table:
// one row a client, op and count.
func (c Comparison) Run(b *testing.B) string {
	b.Helper()
	for _, name := range append([]string{c.Base}, c.Versus...) {
		if !slices.ContainsFunc(c.Clients, func(cl Client) bool { return cl.Name == name }) {
			b.Fatalf("benchcmp: no client named %q to compare with", name)
		}
	}
	var t strings.Builder
	fmt.Fprintf(&t, "| op | goroutines | client | ops/s | × %s |", c.Base)
	for _, v := range c.Versus {
		fmt.Fprintf(&t, " × %s |", v)
	}
	fmt.Fprintf(&t, " CPU µs/op | allocs/op |")
	if c.Latency {
		t.WriteString(" p50 | p99 |")
	}
	fmt.Fprintf(&t, "\n|---|---|---|---|---|%s---|---|", strings.Repeat("---|", len(c.Versus)))
	if c.Latency {
		t.WriteString("---|---|")
	}
	t.WriteString("\n")
	for _, op := range c.Ops {
		for _, goroutines := range c.Goroutines {
			med := c.medians(b, op, goroutines)
			for _, cl := range c.Clients {
				c.row(b, &t, op, goroutines, cl.Name, med)
			}
		}
	}
	return t.String()
}

// medians runs op from goroutines through every client, Rounds times in
// turn, and returns each client's medians by name.
func (c Comparison) medians(b *testing.B, op string, goroutines int) map[string]Cost {
	b.Helper()
	costs := make([][]Cost, len(c.Clients))
	for range c.Rounds {
		for i, cl := range c.Clients {
			k, err := measure(context.Background(), goroutines, c.Turn, op, c.Keys, cl.Do, c.Latency)
			if err != nil {
				b.Fatalf("%s %s at %d goroutines: %v", cl.Name, op, goroutines, err)
			}
			costs[i] = append(costs[i], k)
		}
	}
	med := map[string]Cost{}
	for i, cl := range c.Clients {
		var ops, cpu, allocs, p50, p99 []float64
		for _, k := range costs[i] {
			ops, cpu, allocs = append(ops, k.OpsPerSec), append(cpu, k.CPUPerOp), append(allocs, k.AllocsPerOp)
			p50, p99 = append(p50, float64(k.P50)), append(p99, float64(k.P99))
		}
		med[cl.Name] = Cost{OpsPerSec: Median(ops), CPUPerOp: Median(cpu), AllocsPerOp: Median(allocs),
			P50: time.Duration(Median(p50)), P99: time.Duration(Median(p99))}
	}
	return med
}

// row writes one client's row of the table and reports its metrics.
func (c Comparison) row(b *testing.B, t *strings.Builder, op string, goroutines int, client string, med map[string]Cost) {
	m := med[client]
	name := fmt.Sprintf("%s-%s-%s-%d", c.Tag, strings.ReplaceAll(client, " ", "_"), op, goroutines)
	fmt.Fprintf(t, "| %s | %d | %s | %.0f |", op, goroutines, client, m.OpsPerSec)
	for _, v := range append([]string{c.Base}, c.Versus...) {
		ratio := m.OpsPerSec / med[v].OpsPerSec
		fmt.Fprintf(t, " %.2f |", ratio)
		if v != client {
			b.ReportMetric(ratio, name+"-vs-"+strings.ReplaceAll(v, " ", "_"))
		}
	}
	fmt.Fprintf(t, " %.2f | %.1f |", m.CPUPerOp/1e3, m.AllocsPerOp)
	if c.Latency {
		fmt.Fprintf(t, " %v | %v |", m.P50.Round(time.Microsecond), m.P99.Round(time.Microsecond))
		b.ReportMetric(float64(m.P99.Microseconds()), name+"-p99-µs")
	}
	t.WriteString("\n")
	b.ReportMetric(m.CPUPerOp, name+"-cpu-ns/op")
}
