package httpguard_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"time"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/guard/httpguard"
	"github.com/rediskit/rediskit/sentinel"
)

// The statuses of package guard's errors.
func ExampleStatusCode() {
	for _, err := range []error{
		nil,
		&guard.LimitError{Name: "login", Limit: 5, Window: time.Minute, RetryAfter: 12 * time.Second},
		&guard.BusyError{Name: "payment", TTL: 30 * time.Second},
		&guard.UnavailableError{Name: "login", Reason: guard.ReasonRedis},
		&guard.UnavailableError{Name: "price", Reason: guard.ReasonBusy},
		context.Canceled,
		errors.New("something else"),
	} {
		fmt.Printf("%d %q\n", httpguard.StatusCode(err), httpguard.RetryAfter(err))
	}
	// Output:
	// 200 ""
	// 429 "12"
	// 409 ""
	// 503 ""
	// 503 ""
	// 503 ""
	// 500 ""
}

// A limit, and two failover errors of package sentinel: a write held
// while a failover was under way (never sent: safe to repeat), and a
// write that reached the old master as it was demoted (it may have run).
// The bodies name neither the servers nor the master.
func ExampleWriteError() {
	for _, err := range []error{
		&guard.LimitError{Name: "login", Limit: 5, Window: time.Minute, Count: 6, RetryAfter: 41200 * time.Millisecond},
		fmt.Errorf("checkout: %w", &sentinel.WriteHeldError{MasterName: "shop", Master: "10.0.0.7:6379", Waited: 5 * time.Second}),
		fmt.Errorf("checkout: %w", &sentinel.MasterChangedError{MasterName: "shop", OldMaster: "10.0.0.7:6379", NewMaster: "10.0.0.8:6379", MayHaveExecuted: true}),
	} {
		w := httptest.NewRecorder()
		code := httpguard.WriteError(w, err)
		fmt.Printf("%d Retry-After %q: %s", code, w.Header().Get("Retry-After"), w.Body)
	}
	// Output:
	// 429 Retry-After "42": login: too many attempts, retry after 42 s
	// 503 Retry-After "5": Service Unavailable, retry after 5 s; nothing was changed: repeating the request is safe
	// 503 Retry-After "1": Service Unavailable, retry after 1 s; a change may have been made: check before repeating the request
}

// A route that returns its refusal: Handler answers it and logs it.
func ExampleHandler() {
	// The log without its time, so that the output is the same every run,
	// and without the "err" attribute (the error's own text, package
	// guard's to word).
	log := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == "err") {
				return slog.Attr{}
			}
			return a
		},
	}))
	pay := httpguard.Handler(log, func(w http.ResponseWriter, r *http.Request) error {
		if r.URL.Query().Get("order") == "1" {
			return &guard.BusyError{Name: "payment", TTL: 30 * time.Second}
		}
		_, err := w.Write([]byte("paid\n"))
		return err
	})
	for _, target := range []string{"/pay?order=1", "/pay?order=2"} {
		w := httptest.NewRecorder()
		pay.ServeHTTP(w, httptest.NewRequest("POST", target, nil))
		fmt.Printf("%s: %d %s", target, w.Code, w.Body)
	}
	// Output:
	// level=INFO msg="guard: request refused" method=POST path=/pay status=409
	// /pay?order=1: 409 payment: an attempt is already in progress
	// /pay?order=2: 200 paid
}
