package multidb

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/internal/testkit"
)

// The health checks are the client's own commands, bounded as every
// control connection of rediskit's is: a database answering PING with an
// array header of 2^31-1 (or 9e18) elements fails the check with
// respguard's *LimitError naming it, rather than run the process out of
// memory (or panic in makeslice) in the health-check goroutine.
func TestHealthCheckRepliesAreBounded(t *testing.T) {
	for _, reply := range []string{"*2147483647\r\n", "*9000000000000000000\r\n", "$2147483647\r\n"} {
		f := testkit.NewFakeServer(t, func(_ *testkit.FakeSession, args []string) string {
			if strings.EqualFold(args[0], "HELLO") {
				return "-ERR unknown command 'HELLO'\r\n"
			}
			return reply
		})
		c, err := NewClient(Config{Databases: []Database{{Name: "hostile", Options: &redis.Options{Addr: f.Addr(), ReadTimeout: 5 * time.Second}}},
			HealthCheckInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		ctx := testkit.Context(t, 10*time.Second)
		res, err := c.check(ctx, c.dbs[0])
		_ = c.Close()
		var le *respguard.LimitError
		if err != nil || res.healthy || !errors.As(res.err, &le) || le.Addr != f.Addr() {
			t.Fatalf("a check against %q: healthy %v, %v (%v); want unhealthy with a respguard.LimitError naming %s", reply, res.healthy, res.err, err, f.Addr())
		}
		t.Logf("%q: %v", reply, res.err)
	}
}
