package rediskitotel

import (
	"fmt"

	"go.opentelemetry.io/otel/metric"

	"github.com/rediskit/rediskit"
	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/sentinel"
)

// Observer returns a rediskit.Config.Observer that records the events of
// whatever client rediskit.NewClient makes (standalone, Sentinel, Cluster,
// multidb) on the same instruments as SentinelObserver, ClusterObserver
// and MultiDBObserver, and then calls next (which may be nil):
//
//	cfg.Observer = m.Observer(cfg.Observer)
//	c, err := rediskit.NewClient(cfg)
//	reg, err := m.Register(c)
//
// A standalone client's events are a Sentinel client's (it is one, with
// its primary given); they carry no master name.
func (m *Metrics) Observer(next func(rediskit.Event)) func(rediskit.Event) {
	return func(ev rediskit.Event) {
		switch typed := ev.Typed.(type) {
		case sentinel.Event:
			m.recordSentinel(typed)
		case cluster.Event:
			m.recordCluster(typed)
		case multidb.Event:
			m.recordMultiDB(typed)
		}
		if next != nil {
			next(ev)
		}
	}
}

// Register reports a rediskit.Client's per-node gauges and counters: those
// of RegisterSentinel for a standalone or Sentinel client, RegisterCluster
// for a cluster client, RegisterMultiDB for a multidb client. It fails for
// a client of another type (none that NewClient returns).
func (m *Metrics) Register(c rediskit.Client) (metric.Registration, error) {
	switch typed := c.Unwrap().(type) {
	case *sentinel.Client:
		return m.RegisterSentinel(typed)
	case *cluster.Client:
		return m.RegisterCluster(typed)
	case *multidb.Client:
		return m.RegisterMultiDB(typed)
	default:
		return nil, fmt.Errorf("rediskitotel: Register: a %T behind %s is not a client this package reports", typed, c)
	}
}
