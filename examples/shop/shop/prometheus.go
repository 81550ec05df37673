package shop

import (
	"context"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/rediskit/rediskit/rediskitotel"
)

// NewPrometheusMetrics builds the pipeline the shop program uses: an
// OpenTelemetry MeterProvider whose reader is the OpenTelemetry Prometheus
// exporter, on a registry of its own (not Prometheus's global one), the
// rediskit Metrics on it, and the handler that serves the registry.
// shutdown stops the provider.
func NewPrometheusMetrics() (m *rediskitotel.Metrics, handler http.Handler, shutdown func(context.Context) error, err error) {
	registry := prometheus.NewRegistry()
	exporter, err := otelprom.New(otelprom.WithRegisterer(registry))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("shop: prometheus exporter: %w", err)
	}
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exporter))
	m, err = rediskitotel.New(provider)
	if err != nil {
		_ = provider.Shutdown(context.Background())
		return nil, nil, nil, err
	}
	return m, promhttp.HandlerFor(registry, promhttp.HandlerOpts{}), provider.Shutdown, nil
}
