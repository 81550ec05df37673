package sentinel

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// go-redis starts a goroutine per pool that redials once a second
	// after as many failed dials as the pool has connections (a sentinel
	// or node that is down); it ends at its next wake-up after the pool
	// is closed, up to a second after Close (as in package cluster). A
	// test that ends within that second (TestDiscoverySkipsDownSentinel
	// run alone) would otherwise fail here.
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
