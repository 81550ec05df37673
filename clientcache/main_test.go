package clientcache_test

import (
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// go-redis starts a goroutine per pool that redials once a second
	// after failed dials (Example_maxStale kills its server); it ends at
	// its next wake-up after the pool is closed, up to a second after
	// Close (as in package sentinel).
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/redis/go-redis/v9/internal/pool.(*ConnPool).tryDial"))
}
