package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
)

// metricsTour fetches the tour's metrics endpoint (the handler the example
// shop serves at GET /metrics: OpenTelemetry's Prometheus exporter) and
// prints what the failover step's client recorded.
func (d *demo) metricsTour(ctx context.Context) error {
	srv := httptest.NewServer(d.metricsHandler)
	defer srv.Close()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL, nil)
	if err != nil {
		return err
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /metrics: %s", res.Status)
	}
	fmt.Fprintln(d.out, "GET /metrics (Prometheus text format; the otel_scope labels are left out here):")
	shown := 0
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "rediskit_sentinel_") || strings.Contains(line, "_bucket{") {
			continue
		}
		fmt.Fprintf(d.out, "  %s\n", scopeLabels.ReplaceAllString(line, ""))
		shown++
	}
	if err := sc.Err(); err != nil {
		return err
	}
	if shown == 0 {
		return fmt.Errorf("GET /metrics: no rediskit_sentinel_ lines")
	}
	return nil
}

// scopeLabels matches the exporter's otel_scope_* labels, which repeat on
// every line.
var scopeLabels = regexp.MustCompile(`otel_scope_[a-z_]+="[^"]*",?`)
