package cluster

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// go-redis starts a goroutine per pool that redials once a second
	// after as many failed dials as the pool has connections (a killed
	// master, polled during its failover); it ends at its next wake-up
	// after the pool is closed, up to a second after Close.
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
