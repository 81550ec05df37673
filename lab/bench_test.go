package lab

import (
	"context"
	"testing"
	"time"
)

// BenchmarkStartClose measures starting and closing the topology most
// failover tests use: 1 master, 2 replicas, 3 sentinels, with proxies. It
// reports start-ms and close-ms per lab.
func BenchmarkStartClose(b *testing.B) {
	var start, stop time.Duration
	for b.Loop() {
		t0 := time.Now()
		l, err := Start(context.Background(), Config{Replicas: 2, Sentinels: 3, Proxy: true})
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
