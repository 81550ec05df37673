package rediskit

import (
	"context"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/redisurl"
)

// probe is what the one probe of a seed found.
type probe struct {
	// cluster is true when the server answered CLUSTER INFO: a cluster
	// node.
	cluster bool
	// refusal is the server's error reply when it did not (cluster
	// support disabled, or an ACL without CLUSTER): a standalone server.
	refusal string
}

// detect asks the one server u names whether it is a cluster node, with
// one connection and one command (CLUSTER INFO, answered by every cluster
// node whatever its state, refused by a standalone server), bounded by
// cfg.DetectTimeout. It fails with a *DetectError when the server gives no
// answer. rueidis decides the same way (a single seed whose CLUSTER
// command is refused is served as one server).
func detect(ctx context.Context, u *redisurl.Config, cfg *Config) (probe, error) {
	seed := *u
	seed.Kind = redisurl.Standalone
	if u.Kind == redisurl.Cluster {
		seed.Addr = u.Addrs[0]
	}
	o, err := seed.Options()
	if err != nil {
		return probe{}, err
	}
	if cfg.TLSConfig != nil {
		o.TLSConfig = cfg.TLSConfig.Clone()
	}
	if o.Username == "" && o.Password == "" {
		o.Username, o.Password = cfg.Username, cfg.Password
	}
	o.DB = 0 // a cluster node refuses SELECT of another database
	// One connection is used; a pool of two keeps go-redis from starting
	// its redial goroutine (ConnPool.tryDial, which outlives Close by up
	// to a second) when the only dial fails: it starts one once as many
	// dials have failed as the pool holds.
	o.PoolSize, o.MaxIdleConns, o.MinIdleConns = 2, 0, 0
	o.DialTimeout = cfg.DetectTimeout
	o.ReadTimeout, o.WriteTimeout = cfg.DetectTimeout, cfg.DetectTimeout
	rc := redis.NewClient(respguard.Guard(o))
	defer func() { _ = rc.Close() }()
	ctx, cancel := context.WithTimeout(ctx, cfg.DetectTimeout)
	defer cancel()
	err = rc.Do(ctx, "CLUSTER", "INFO").Err()
	switch {
	case err == nil:
		return probe{cluster: true}, nil
	case failure.Reply(err) && !redis.IsAuthError(err):
		return probe{refusal: failure.BriefErr(err)}, nil
	}
	return probe{}, &DetectError{URL: u.Redacted(), Addr: o.Addr, Err: err}
}
