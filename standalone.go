package rediskit

import (
	"fmt"

	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/sentinel"
)

// newStandalone makes the client of a redis://, rediss:// or unix:// URL
// that is not a cluster node: package sentinel's client with the server as
// its standalone primary (sentinel.Config.Primary), so it routes, holds,
// re-runs and confirms as for a Sentinel master, finding the primary's
// replicas with ROLE (a unix:// primary is reached by its socket, its
// replicas by the host and port ROLE lists).
func newStandalone(u *redisurl.Config, cfg *Config) (*client, error) {
	u = withCredentials(u, cfg)
	if cfg.TLSConfig != nil {
		u.TLS, u.CAFile, u.CertFile, u.KeyFile, u.ServerName, u.InsecureSkipVerify = false, "", "", "", "", false
	}
	sc, err := sentinel.NewClientFromConfig(u, sentinelConfig(cfg, KindStandalone))
	if err != nil {
		return nil, fmt.Errorf("rediskit: %s: %w", u.Redacted(), err)
	}
	return &client{typed: sc, stats: func() Stats { return sentinelStats(KindStandalone, sc.Stats()) }}, nil
}
