package rediskit

import (
	"errors"

	"github.com/rediskit/rediskit/redisurl"
)

// errNoStandalone is returned for a standalone URL until package sentinel
// serves one server without Sentinel (issue 36, item 2).
var errNoStandalone = errors.New("rediskit: a standalone server is not served yet: use redis+sentinel:// or redis+cluster://")

// newStandalone makes the client of a redis://, rediss:// or unix:// URL
// that is not a cluster node.
func newStandalone(u *redisurl.Config, cfg *Config) (*client, error) {
	_, _ = u, cfg
	return nil, errNoStandalone
}
