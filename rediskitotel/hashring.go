package rediskitotel

import (
	"context"

	"go.opentelemetry.io/otel/metric"

	"github.com/rediskit/rediskit/hashring"
)

// RingObserver returns a hashring.Config.Observer that counts ownership
// expiries, restores and failed attempts, then calls next (may be nil).
func (m *Metrics) RingObserver(next func(hashring.Event)) func(hashring.Event) {
	return func(ev hashring.Event) {
		attrs := metric.WithAttributes(redisSystem, AttrRingKey.String(ev.Key), AttrRingNode.String(ev.Node))
		switch ev.Kind {
		case hashring.EventDeadlinePassed:
			m.ringExpiries.Add(background, 1, attrs)
		case hashring.EventOwnershipRestored:
			m.ringRestores.Add(background, 1, attrs)
		case hashring.EventAttemptFailed:
			m.ringFailures.Add(background, 1, attrs)
		}
		if next != nil {
			next(ev)
		}
	}
}

// RegisterRingNode reports, for a started node, read at collection time:
//
//	rediskit.hashring.nodes  the nodes on the ring in the node's view (0 after its deadline)
//	rediskit.hashring.share  the fraction of the ring the node owns (0 to 1)
func (m *Metrics) RegisterRingNode(n *hashring.Node) (metric.Registration, error) {
	nodes, err1 := m.meter.Int64ObservableGauge("rediskit.hashring.nodes", metric.WithUnit("{node}"),
		metric.WithDescription("Nodes on the ring, as this node sees it (0 once its ownership deadline passed)."))
	share, err2 := m.meter.Float64ObservableGauge("rediskit.hashring.share", metric.WithUnit("1"),
		metric.WithDescription("Fraction of the ring this node owns (0 to 1)."))
	if err := firstErr(err1, err2); err != nil {
		return nil, err
	}
	attrs := metric.WithAttributes(redisSystem, AttrRingKey.String(n.Key()), AttrRingNode.String(n.ID()))
	return m.observe(func(_ context.Context, o metric.Observer) error {
		var sum uint64
		for _, r := range n.Ranges() {
			sum += r.Len()
		}
		o.ObserveInt64(nodes, int64(n.NodeCount()), attrs)
		o.ObserveFloat64(share, float64(sum)/float64(hashring.RingSize), attrs)
		return nil
	}, nodes, share)
}
