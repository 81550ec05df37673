package httpguard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/guard/httpguard"
)

func TestStatusCode(t *testing.T) {
	redisErr := &guard.RedisError{Op: "login limit", Server: "10.0.0.7:6379", Kind: guard.FailureTimeout, Limit: 150 * time.Millisecond}
	for _, tc := range []struct {
		err        error
		code       int
		retryAfter string
		body       string
	}{
		{&guard.LimitError{Name: "login", Limit: 5, Window: time.Minute, Count: 6, RetryAfter: 41200 * time.Millisecond},
			429, "42", "login: too many attempts, retry after 42 s"},
		{&guard.LimitError{Name: "login", RetryAfter: 10 * time.Millisecond}, 429, "1", "retry after 1 s"},
		{fmt.Errorf("pay: %w", &guard.BusyError{Name: "payment", TTL: 30 * time.Second}), 409, "", "payment: an attempt is already in progress"},
		{&guard.UnavailableError{Name: "login", Reason: guard.ReasonRedis, Err: redisErr}, 503, "", "login unavailable, try again later"},
		{&guard.UnavailableError{Name: "price", Reason: guard.ReasonBusy}, 503, "", "price busy, try again later"},
		{redisErr, 503, "", "Service Unavailable"},
		{context.Canceled, 503, "", "Service Unavailable"},
		{errors.New("boom"), 500, "", "Internal Server Error"},
	} {
		if got := httpguard.StatusCode(tc.err); got != tc.code {
			t.Errorf("StatusCode(%v) = %d, want %d", tc.err, got, tc.code)
		}
		w := httptest.NewRecorder()
		if got := httpguard.WriteError(w, tc.err); got != tc.code || w.Code != tc.code {
			t.Errorf("WriteError(%v) = %d, wrote %d, want %d", tc.err, got, w.Code, tc.code)
		}
		if got := w.Header().Get("Retry-After"); got != tc.retryAfter {
			t.Errorf("%v: Retry-After %q, want %q", tc.err, got, tc.retryAfter)
		}
		body := w.Body.String()
		if !strings.Contains(body, tc.body) || len(body) > 100 {
			t.Errorf("%v: body %q, want a short one with %q", tc.err, body, tc.body)
		}
		if strings.Contains(body, "10.0.0.7") {
			t.Errorf("body shows the server address: %q", body)
		}
	}
	if httpguard.StatusCode(nil) != 200 {
		t.Error("StatusCode(nil) != 200")
	}
}

func TestHandler(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	h := httpguard.Handler(log, func(w http.ResponseWriter, r *http.Request) error {
		switch r.URL.Path {
		case "/busy":
			return &guard.BusyError{Name: "payment"}
		case "/down":
			return &guard.UnavailableError{Name: "login", Reason: guard.ReasonRedis}
		}
		_, err := w.Write([]byte("ok"))
		return err
	})
	for path, want := range map[string]int{"/busy": 409, "/down": 503, "/": 200} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != want {
			t.Errorf("%s: %d, want %d", path, w.Code, want)
		}
	}
	if !strings.Contains(logs.String(), "status=503") || !strings.Contains(logs.String(), "level=WARN") {
		t.Errorf("logs: %s", logs.String())
	}
}
