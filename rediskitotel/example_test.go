package rediskitotel_test

import (
	"context"
	"fmt"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/rediskit/rediskit/rediskitotel"
	"github.com/rediskit/rediskit/sentinel"
)

// Wire a Sentinel client's events to metrics. Here one event is fed by
// hand to show what is recorded; a real client calls the observer itself:
//
//	opts.Observer = m.SentinelObserver(opts.Observer)
func ExampleMetrics_SentinelObserver() {
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer provider.Shutdown(context.Background())

	m, err := rediskitotel.New(provider)
	if err != nil {
		fmt.Println(err)
		return
	}
	observe := m.SentinelObserver(nil)
	observe(sentinel.Event{Kind: sentinel.EventMasterChanged, MasterName: "mymaster",
		OldMaster: "10.0.0.5:6379", Master: "10.0.0.6:6379"})

	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)
	for _, sm := range rm.ScopeMetrics {
		for _, metric := range sm.Metrics {
			for _, p := range metric.Data.(metricdata.Sum[int64]).DataPoints {
				old, _ := p.Attributes.Value(rediskitotel.AttrOldMaster)
				now, _ := p.Attributes.Value(rediskitotel.AttrNewMaster)
				fmt.Println(metric.Name, p.Value, old.AsString(), "->", now.AsString())
			}
		}
	}
	// Output: rediskit.sentinel.master.changes 1 10.0.0.5:6379 -> 10.0.0.6:6379
}
