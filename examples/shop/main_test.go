package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestRunServesAndStops(t *testing.T) {
	const secret = "shop-main-secret"
	l := lab.New(t, lab.Config{Password: secret})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	var out, logs testkit.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(runCtx, []string{"-redis", l.URL(), "-listen", "127.0.0.1:0"}, &out, slog.New(slog.NewTextHandler(&logs, nil)))
	}()

	addr := regexp.MustCompile(`listening on (http://\S+)`)
	var base string
	for base == "" {
		if m := addr.FindStringSubmatch(out.String()); m != nil {
			base = m[1]
		}
		select {
		case code := <-done:
			t.Fatalf("run exited %d:\n%s", code, out.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
	res, err := http.Get(base + "/catalog/sku-1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"price_minor":1250`) {
		t.Fatalf("GET /catalog/sku-1: %d %s", res.StatusCode, body)
	}
	// The lookup above shows on /metrics, in Prometheus's text format.
	res, err = http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(res.Body)
	_ = res.Body.Close()
	miss := regexp.MustCompile(`(?m)^rediskit_guard_cache_reads(_lookup)?_total\{[^}]*rediskit_name="price"[^}]*rediskit_result="miss"[^}]*\} 1$`)
	if res.StatusCode != 200 || !miss.Match(body) || !strings.Contains(string(body), "rediskit_guard_health_state") {
		t.Fatalf("GET /metrics: %d\n%s", res.StatusCode, body)
	}
	stop()
	if code := <-done; code != 0 {
		t.Fatalf("run exited %d after cancel:\n%s", code, out.String())
	}
	for _, text := range []string{out.String(), logs.String()} {
		if strings.Contains(text, secret) {
			t.Fatalf("the password was printed:\n%s", text)
		}
	}
	if !strings.Contains(out.String(), "shop stopped") {
		t.Fatalf("output:\n%s", out.String())
	}
}

func TestRunUsageErrors(t *testing.T) {
	var out bytes.Buffer
	log := slog.New(slog.DiscardHandler)
	for _, args := range [][]string{
		{"-no-such-flag"},
		{"extra"},
		{"-redis", "redis://u:pw-in-url@127.0.0.1:1/0?max_retries=5"},
		{"-redis", "http://[::1"},
		{"-redis", "redis://127.0.0.1:1", "-prefix", ""},
	} {
		out.Reset()
		if code := run(context.Background(), args, &out, log); code != 2 {
			t.Errorf("run %q = %d, want 2:\n%s", args, code, out.String())
		}
		if strings.Contains(out.String(), "pw-in-url") {
			t.Errorf("run %q printed the password:\n%s", args, out.String())
		}
	}
}
