package replica

import (
	"fmt"
	"testing"

	"github.com/rediskit/rediskit/redisurl"
)

// BenchmarkPick measures the hot path: one atomic load of the election and
// the choice, with one elected replica, and with two and three (power of
// two choices on in-flight reads, done called after each read).
func BenchmarkPick(b *testing.B) {
	for _, n := range []int{1, 2, 3} {
		replicas := []string{"10.0.0.1:6379", "10.0.0.2:6379", "10.0.0.3:6379"}[:n]
		s := electedSelector(b, replicas...)
		b.Run(fmt.Sprintf("elected=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					addr, done := s.Pick(redisurl.Nearest)
					if addr == "" {
						b.Error("no replica")
						return
					}
					if done != nil {
						done()
					}
				}
			})
		})
		_ = s.Close()
	}
}
