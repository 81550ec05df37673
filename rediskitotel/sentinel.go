package rediskitotel

import (
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/rediskit/rediskit/sentinel"
)

// SentinelObserver returns a sentinel.Config.Observer that records the
// client's events as metrics and then calls next (which may be nil):
//
//	opts.Observer = m.SentinelObserver(opts.Observer)
func (m *Metrics) SentinelObserver(next func(sentinel.Event)) func(sentinel.Event) {
	return func(ev sentinel.Event) {
		m.recordSentinel(ev)
		if next != nil {
			next(ev)
		}
	}
}

func (m *Metrics) recordSentinel(ev sentinel.Event) {
	name := AttrMasterName.String(ev.MasterName)
	switch ev.Kind {
	case sentinel.EventMasterChanged:
		m.masterChanges.Add(background, 1, metric.WithAttributes(redisSystem, name,
			AttrOldMaster.String(ev.OldMaster), AttrNewMaster.String(ev.Master)))
	case sentinel.EventDiscovered, sentinel.EventDiscoveryFailed:
		outcome := "found"
		if ev.Kind == sentinel.EventDiscoveryFailed {
			outcome = "failed"
		}
		m.discoveryDuration.Record(background, ev.Duration.Seconds(),
			metric.WithAttributes(redisSystem, name, AttrOutcome.String(outcome)))
	case sentinel.EventReadRetried:
		m.readsRetried.Add(background, 1, metric.WithAttributes(redisSystem, name))
	case sentinel.EventWriteRefused:
		var mce *sentinel.MasterChangedError
		mayHaveRun := true
		if errors.As(ev.Err, &mce) {
			mayHaveRun = mce.MayHaveExecuted
		}
		m.writesRefused.Add(background, 1, metric.WithAttributes(redisSystem, name, AttrMayHaveRun.Bool(mayHaveRun)))
	case sentinel.EventWriteRerun:
		m.writesRerun.Add(background, 1, metric.WithAttributes(redisSystem, name))
	case sentinel.EventSentinelSkipped:
		m.sentinelsSkipped.Add(background, 1, metric.WithAttributes(redisSystem, name,
			AttrReason.String(ev.Reason), attribute.String("rediskit.sentinel", ev.Sentinel)))
	case sentinel.EventFailoverStarted:
		m.failovers.Add(background, 1, metric.WithAttributes(redisSystem, name))
	case sentinel.EventMasterIsolated:
		m.isolations.Add(background, 1, metric.WithAttributes(redisSystem, name))
	case sentinel.EventIsolationEnded:
		m.isolationHeld.Record(background, ev.Duration.Seconds(), metric.WithAttributes(redisSystem, name))
	}
}
