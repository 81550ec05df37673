package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
)

// metricsTour starts the example shop (examples/shop/shop) with the tour's
// metrics wired, as the shop program wires them, fetches GET /metrics from
// the shop's own HTTP handler (OpenTelemetry's Prometheus exporter) and
// prints what the failover step's Sentinel client recorded. The guard step
// goes on with the same shop.
func (d *demo) metricsTour(ctx context.Context) error {
	s, err := d.openShop(ctx)
	if err != nil {
		return err
	}
	url := s.srv.URL + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, http.NoBody)
	if err != nil {
		return err
	}
	res, err := s.srv.Client().Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, res.Status)
	}
	fmt.Fprintf(d.out, "the example shop runs on a standalone Redis (%s) with the tour's metrics wired: its own guard's, "+
		"and the failover step's Sentinel client's\n", s.node.Addr())
	fmt.Fprintf(d.out, "GET %s from the shop (Prometheus text format; the otel_scope labels are left out here):\n", url)
	shown, guardLines := 0, 0
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "rediskit_guard_") {
			guardLines++
		}
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
		return fmt.Errorf("GET %s: no rediskit_sentinel_ lines", url)
	}
	if guardLines > 0 {
		fmt.Fprintf(d.out, "  … and %d rediskit_guard_ lines: the shop's catalog cache, login limiter, payment gate and Redis health (next step)\n", guardLines)
	}
	return nil
}

// scopeLabels matches the exporter's otel_scope_* labels, which repeat on
// every line.
var scopeLabels = regexp.MustCompile(`otel_scope_[a-z_]+="[^"]*",?`)
