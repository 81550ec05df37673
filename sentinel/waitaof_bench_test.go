package sentinel

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/lab"
)

// BenchmarkWaitAOFSequences measures, on one connection to a master with
// two replicas and appendonly yes, what a write followed by WAITAOF costs
// with and without a WAIT before the WAITAOF (DurableAOF sends write, WAIT,
// WAITAOF; see confirmCmds for why), for appendfsync always and everysec:
// p50, p90 and max of writesPerRow writes each, after one write that lets
// the replicas report their first fsync. On a server without WAITAOF it
// skips. Run it with -benchtime 1x (a bare WAITAOF row takes about a
// second a write):
//
//	REDISKIT_LAB_SERVER=valkey go test -run '^$' -bench WaitAOFSequences -benchtime 1x -v ./sentinel/
func BenchmarkWaitAOFSequences(b *testing.B) {
	const writesPerRow = 20
	for _, fsync := range []string{"always", "everysec"} {
		b.Run(fsync, func(b *testing.B) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			l := lab.New(b, lab.Config{Replicas: 2, ExtraConfig: []string{"appendonly yes", "appendfsync " + fsync}})
			if !hasWAITAOF(l.ServerVersion()) {
				b.Skipf("%s has no WAITAOF", l.ServerVersion())
			}
			rc := redis.NewClient(&redis.Options{Addr: l.Node(0).Addr(), PoolSize: 1, MaxRetries: -1, ReadTimeout: 5 * time.Second})
			defer rc.Close()
			sequences := []struct {
				name string
				wait bool
			}{{"write, WAITAOF 1 2", false}, {"write, WAIT 2, WAITAOF 1 2", true}}
			run := func(key string, wait bool) (time.Duration, error) {
				began := time.Now()
				cmds, err := rc.Pipelined(ctx, func(p redis.Pipeliner) error {
					p.Incr(ctx, key)
					if wait {
						p.Do(ctx, "WAIT", 2, 2000)
					}
					p.Do(ctx, "WAITAOF", 1, 2, 2000)
					return nil
				})
				if err != nil {
					return 0, err
				}
				if v, ok := cmds[len(cmds)-1].(*redis.Cmd).Val().([]any); !ok || len(v) != 2 || v[0] != int64(1) || v[1] != int64(2) {
					return 0, fmt.Errorf("WAITAOF replied %v: want [1 2]", cmds[len(cmds)-1])
				}
				return time.Since(began), nil
			}
			for range b.N {
				for _, seq := range sequences {
					if _, err := run("warm", true); err != nil { // the replicas' first fsync report
						b.Fatal(err)
					}
					var took []time.Duration
					for range writesPerRow {
						d, err := run("n", seq.wait)
						if err != nil {
							b.Fatal(err)
						}
						took = append(took, d)
					}
					slices.Sort(took)
					p50, p90, worst := took[len(took)/2], took[len(took)*9/10], took[len(took)-1]
					b.Logf("%s, %s, appendfsync %s: p50 %v, p90 %v, max %v (%d writes)", l.ServerVersion(), seq.name, fsync, p50, p90, worst, writesPerRow)
					unit := "waitaof"
					if seq.wait {
						unit = "wait-waitaof"
					}
					b.ReportMetric(float64(p50)/float64(time.Millisecond), unit+"-p50-ms")
				}
			}
		})
	}
}
