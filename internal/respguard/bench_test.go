package respguard

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/benchcmp"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/testkit"
)

// BenchmarkRead reads a realistic stream of rediskit's own traffic
// (realisticStream: HELLO, PING, ROLE, sentinel replies and events, INFO,
// CLUSTER NODES; about 16 KiB) from memory, through the guard and
// straight, in go-redis's 32 KiB reads and in 512-byte pieces from the
// server (so that lines are cut and held back). One op is the whole
// stream. The guarded run reports the ratio of its time to the straight
// read's ("x-straight"): the straight read is a bare memory copy, so the
// ratio is the whole cost of the checks.
func BenchmarkRead(b *testing.B) {
	stream := realisticStream()
	for _, mode := range []struct {
		name  string
		piece int
	}{{"32KiB-reads", 0}, {"512B-pieces", 512}} {
		var straight float64
		for _, guarded := range []bool{false, true} {
			name := mode.name + "/straight"
			if guarded {
				name = mode.name + "/guarded"
			}
			b.Run(name, func(b *testing.B) {
				rc := &replayConn{data: stream, piece: mode.piece}
				var c net.Conn = rc
				if guarded {
					c = wrap(rc, Limits{}, "bench:6379")
				}
				buf := make([]byte, 32<<10)
				b.SetBytes(int64(len(stream)))
				b.ReportAllocs()
				total, want := 0, 0
				for b.Loop() {
					want += len(stream)
					for total < want {
						n, err := c.Read(buf)
						if err != nil {
							b.Fatal(err)
						}
						total += n
					}
				}
				ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
				if !guarded {
					straight = ns
				} else if straight > 0 {
					b.ReportMetric(ns/straight, "x-straight")
				}
			})
		}
	}
}

// BenchmarkGoRedis runs probes as rediskit's inner clients send them (PING,
// ROLE, INFO) from go-redis clients to the in-process server, through the
// guard and without it, interleaved (benchcmp.Interleaved: "rediskit" is
// the guarded client, "go-redis" the plain one; throughput-ratio is plain
// time / guarded time, 1 meaning no cost).
func BenchmarkGoRedis(b *testing.B) {
	srv := testkit.NewFakeServer(b, normal)
	plain := redis.NewClient(redisopt.Inner(&redis.Options{Addr: srv.Addr(), PoolSize: benchcmp.Workers}))
	defer plain.Close()
	guarded := redis.NewClient(redisopt.Inner(&redis.Options{Addr: srv.Addr(), PoolSize: benchcmp.Workers, Dialer: WrapDialer(nil, Limits{})}))
	defer guarded.Close()
	probe := func(ctx context.Context, c redis.UniversalClient) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if err := c.Ping(ctx).Err(); err != nil {
			return err
		}
		if err := c.Do(ctx, "ROLE").Err(); err != nil {
			return err
		}
		return c.Info(ctx).Err()
	}
	b.ReportAllocs()
	benchcmp.Interleaved(b, guarded, plain, probe)
}

// dataStream is replies to a caller's commands, about 1.2 MiB: small GETs,
// a 64 KiB and a 1 MiB value, an LRANGE of 1,000 items, an HGETALL of 100
// fields (RESP3 map), integers and OKs.
func dataStream() []byte {
	var s strings.Builder
	for i := range 200 {
		s.WriteString(bulk("value-" + strconv.Itoa(i)))
		s.WriteString(":" + strconv.Itoa(i) + "\r\n+OK\r\n")
	}
	s.WriteString(bulk(strings.Repeat("v", 64<<10)))
	s.WriteString(bulk(strings.Repeat("w", 1<<20)))
	s.WriteString("*1000\r\n")
	for i := range 1000 {
		s.WriteString(bulk("item:" + strconv.Itoa(i)))
	}
	s.WriteString("%100\r\n")
	for i := range 100 {
		s.WriteString(bulk("field" + strconv.Itoa(i)))
		s.WriteString(bulk("v" + strconv.Itoa(i)))
	}
	return []byte(s.String())
}

// BenchmarkReadData is BenchmarkRead on the data path: dataStream through
// the guard with the data path's limits, and straight, in go-redis's 32
// KiB reads. Strings' bodies are skipped by their length, so the big
// values cost their header line; the ratio to the straight read (a bare
// memory copy) is the whole cost of the checks.
func BenchmarkReadData(b *testing.B) {
	stream := dataStream()
	var straight float64
	for _, guarded := range []bool{false, true} {
		name := "straight"
		if guarded {
			name = "guarded"
		}
		b.Run(name, func(b *testing.B) {
			rc := &replayConn{data: stream}
			var c net.Conn = rc
			if guarded {
				c = wrap(rc, Limits{}.ForData(), "bench:6379")
			}
			buf := make([]byte, 32<<10)
			b.SetBytes(int64(len(stream)))
			b.ReportAllocs()
			total, want := 0, 0
			for b.Loop() {
				want += len(stream)
				for total < want {
					n, err := c.Read(buf)
					if err != nil {
						b.Fatal(err)
					}
					total += n
				}
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if !guarded {
				straight = ns
			} else if straight > 0 {
				b.ReportMetric(ns/straight, "x-straight")
			}
		})
	}
}
