package multidb

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/redisopt"
)

// A database client multidb builds from Database.Options runs under the
// client policy whatever the options said, and the caller's options are
// left as they were.
func TestDatabaseOptionsFollowThePolicy(t *testing.T) {
	in := &redis.Options{Addr: "127.0.0.1:1", MaxRetries: 5, DialerRetries: 3, PoolSize: 4}
	c := redis.NewClient(clientOptions(in))
	defer c.Close()
	if vs := redisopt.Check(c.Options()); len(vs) > 0 {
		t.Errorf("the built client departs from the policy: %s", vs)
	}
	if o := c.Options(); o.PoolSize != 4 || o.Addr != in.Addr {
		t.Errorf("the caller's other settings were lost: %+v", o)
	}
	if in.MaxRetries != 5 || in.DialerRetries != 3 || in.ContextTimeoutEnabled {
		t.Errorf("the caller's options were changed: %+v", in)
	}
}
