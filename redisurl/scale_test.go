package redisurl

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sentinelAddrs returns n distinct sentinel addresses.
func sentinelAddrs(n int) []string {
	addrs := make([]string, n)
	for i := range addrs {
		addrs[i] = fmt.Sprintf("10.%d.%d.%d:26379", i>>16&255, i>>8&255, i&255)
	}
	return addrs
}

func sentinelURL(n int) string {
	return "redis+sentinel://" + strings.Join(sentinelAddrs(n), ",") + "/mymaster"
}

// parseTime is how long parsing u times times takes.
func parseTime(t *testing.T, u string, want, times int) time.Duration {
	t.Helper()
	runtime.GC() // so that the garbage of the last measurement is not this one's
	began := time.Now()
	for range times {
		c, err := Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Sentinels) != want {
			t.Fatalf("parsed %d sentinels, want %d", len(c.Sentinels), want)
		}
	}
	return time.Since(began)
}

// TestParseLinearInSentinels catches Parse becoming quadratic in the number
// of sentinels again (each address compared with every earlier one to find
// repeats: 16,000 sentinels took 0.3 s, 3 s with -race). One parse of
// 16,000 sentinels is timed against 16 parses of 1,000, the same work if
// Parse is linear, measured in the same run, interleaved, each the best
// of several: the two take equally long, so a loaded machine (other
// processes preempting this one, the GC) slows both alike, and the bound
// holds there too. Linear parsing keeps the ratio near 1 (0.8–1.6
// measured, with -race, at a load average of 9 on 2 CPUs); the quadratic
// version gave 11.5, and 14.4 with -race. The bound, 4, leaves room for
// the cache misses of the larger input.
func TestParseLinearInSentinels(t *testing.T) {
	const small, large, maxRatio, rounds = 1000, 16000, 4.0, 7
	smallURL, largeURL := sentinelURL(small), sentinelURL(large)
	parseTime(t, smallURL, small, 1) // warm up
	bestSmall, bestLarge := time.Duration(1<<63-1), time.Duration(1<<63-1)
	var ratio float64
	for round := range rounds {
		bestSmall = min(bestSmall, parseTime(t, smallURL, small, large/small))
		bestLarge = min(bestLarge, parseTime(t, largeURL, large, 1))
		ratio = float64(bestLarge) / float64(bestSmall)
		if round >= 2 && (ratio <= maxRatio || ratio > 2*maxRatio) {
			break // settled either way
		}
	}
	t.Logf("%d sentinels: %v; %d × %d sentinels: %v; ratio %.2f (bound %v)", large, bestLarge, large/small, small, bestSmall, ratio, maxRatio)
	if ratio > maxRatio {
		t.Fatalf("parsing %d sentinels takes %.1f times as long as parsing %d sentinels %d times (bound %v): Parse is not linear in the number of sentinels",
			large, ratio, small, large/small, maxRatio)
	}
}

// TestParseManySentinelsRepeat checks that the set used for long lists
// finds a repeated address exactly as the direct comparison does for short
// ones: the second occurrence is quoted, whatever its position.
func TestParseManySentinelsRepeat(t *testing.T) {
	for _, n := range []int{2, smallSentinelList, smallSentinelList + 1, 1000} {
		addrs := sentinelAddrs(n)
		for _, at := range []int{1, n / 2, n - 1} {
			if at == 0 {
				continue
			}
			list := append([]string(nil), addrs...)
			list[at] = strings.TrimSuffix(addrs[at-1], ":26379") // the default port makes it the same address
			_, err := Parse("redis+sentinel://" + strings.Join(list, ",") + "/m")
			var e *Error
			if !errors.As(err, &e) || e.Reason != "listed twice" || e.Value != list[at] {
				t.Errorf("%d sentinels, repeat at %d: got %v, want %q listed twice", n, at, err, list[at])
			}
		}
		if c, err := Parse("redis+sentinel://" + strings.Join(addrs, ",") + "/m"); err != nil || len(c.Sentinels) != n {
			t.Errorf("%d distinct sentinels: %v", n, err)
		}
	}
}

// BenchmarkParseSentinels parses sentinel URLs of 3 to 16,000 sentinels,
// with go-redis's ParseFailoverURL on the same addresses (as addr=
// parameters, its syntax) as the baseline. ns/sentinel must stay flat as
// the list grows. The baseline stops at 8,000: Go's net/url reads at most
// 10,000 query parameters (GODEBUG urlmaxqueryparams), so go-redis cannot
// take 16,000 sentinels.
func BenchmarkParseSentinels(b *testing.B) {
	for _, n := range []int{3, 1000, 8000, 16000} {
		addrs := sentinelAddrs(n)
		ours := "redis+sentinel://" + strings.Join(addrs, ",") + "/mymaster"
		plain := "redis://" + addrs[0] + "?master_name=mymaster&addr=" + strings.Join(addrs[1:], "&addr=")
		var oursNs float64
		b.Run(fmt.Sprintf("n=%d/rediskit", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Parse(ours); err != nil {
					b.Fatal(err)
				}
			}
			oursNs = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(oursNs/float64(n), "ns/sentinel")
		})
		b.Run(fmt.Sprintf("n=%d/go-redis", n), func(b *testing.B) {
			if o, err := redis.ParseFailoverURL(plain); err != nil || len(o.SentinelAddrs) != n {
				b.Skipf("go-redis's ParseFailoverURL does not read %d addresses (net/url's limit of 10,000 query parameters)", n)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := redis.ParseFailoverURL(plain); err != nil {
					b.Fatal(err)
				}
			}
			plainNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			b.ReportMetric(plainNs/float64(n), "ns/sentinel")
			if oursNs > 0 {
				b.ReportMetric(plainNs/oursNs, "go-redis/rediskit")
			}
		})
	}
}
