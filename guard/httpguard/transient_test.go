package httpguard_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/guard/httpguard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/sentinel"
)

const (
	safeToRepeat = "nothing was changed: repeating the request is safe"
	mayHaveRun   = "a change may have been made: check before repeating the request"
)

// Every transient error of sentinel and multidb, bare or wrapped as the
// guard and a handler wrap them, answers 503 with Retry-After and says
// whether repeating the request is safe.
func TestWriteErrorTransient(t *testing.T) {
	const addr = "10.0.0.7:6379" // must not reach the body
	cause := errors.New("read tcp " + addr + ": i/o timeout")
	mce := &sentinel.MasterChangedError{MasterName: "shop", Sentinel: "10.0.0.9:26379", NewMaster: "10.0.0.8:6379",
		OldMaster: addr, MayHaveExecuted: true, Cause: cause}
	for _, tc := range []struct {
		name       string
		err        error
		is         error // errors.Is must still hold, when set
		retryAfter string
		body       []string
	}{
		{"node error: a write that may have run", &sentinel.NodeError{MasterName: "shop", Addr: addr, Role: "master", Write: true, MayHaveExecuted: true, Err: cause},
			nil, "1", []string{"Service Unavailable, retry after 1 s; " + mayHaveRun}},
		{"node error: a write never sent", &sentinel.NodeError{MasterName: "shop", Addr: addr, Role: "master", Write: true, Err: cause},
			nil, "1", []string{safeToRepeat}},
		{"node error: a read that may have run", &sentinel.NodeError{MasterName: "shop", Addr: addr, Role: "replica", MayHaveExecuted: true, Err: cause},
			nil, "1", []string{safeToRepeat}},
		{"write held for FailoverHold", &sentinel.WriteHeldError{MasterName: "shop", Master: addr, Reason: "a failover is under way", Waited: 5*time.Second + 3*time.Millisecond},
			sentinel.ErrFailoverInProgress, "5", []string{"retry after 5 s", safeToRepeat}},
		{"write held, the caller's deadline ended it", &sentinel.WriteHeldError{MasterName: "shop", Master: addr, Waited: 200 * time.Millisecond, Cause: context.DeadlineExceeded},
			sentinel.ErrFailoverInProgress, "3", []string{"retry after 3 s", safeToRepeat}},
		{"master changed, the write may have run", mce, sentinel.ErrMasterChanged, "1", []string{"retry after 1 s", mayHaveRun}},
		{"master changed, strict mode kept an unsent write", &sentinel.MasterChangedError{MasterName: "shop", NewMaster: "10.0.0.8:6379", OldMaster: addr},
			sentinel.ErrMasterChanged, "1", []string{safeToRepeat}},
		{"not durable: ran, not confirmed", &sentinel.NotDurableError{Master: addr, Required: 2, Acked: 1, Timeout: 1500 * time.Millisecond},
			sentinel.ErrNotDurable, "2", []string{"retry after 2 s", mayHaveRun}},
		{"not durable: WAIT failed", &sentinel.NotDurableError{Master: addr, Required: 1, Cause: cause},
			sentinel.ErrNotDurable, "1", []string{"retry after 1 s", mayHaveRun}},
		{"not durable: refused unsent", &sentinel.NotDurableError{Master: addr, Required: 2, Unconfirmable: []string{"10.0.0.8:6379"}, Timeout: time.Second, NotSent: true},
			sentinel.ErrNotDurable, "2", []string{"retry after 2 s", safeToRepeat}},
		{"no replica", &sentinel.NoReplicaError{MasterName: "shop", Master: addr}, sentinel.ErrNoReplica, "2", []string{"retry after 2 s", safeToRepeat}},
		{"no master discovered", &sentinel.DiscoveryError{MasterName: "shop", Attempts: []sentinel.SentinelAttempt{{Sentinel: addr, Reason: sentinel.SkipDown, Err: cause}}},
			nil, "2", []string{"retry after 2 s", safeToRepeat}},
		{"no healthy database at the moment", &multidb.UnavailableError{Since: time.Now(), Attempts: 1, MaxAttempts: 10},
			multidb.ErrTemporarilyUnavailable, "5", []string{"retry after 5 s", safeToRepeat}},
		{"no healthy database, attempts used up", &multidb.UnavailableError{Exhausted: true, Since: time.Now(), Attempts: 10, MaxAttempts: 10},
			multidb.ErrNoHealthyDatabase, "5", []string{"retry after 5 s", safeToRepeat}},
		{"database changed under a write", &multidb.DatabaseChangedError{Old: "primary", New: "standby", Cause: cause},
			multidb.ErrDatabaseChanged, "1", []string{"retry after 1 s", mayHaveRun}},
		{"wrapped by the handler", fmt.Errorf("checkout: %w", &multidb.DatabaseChangedError{Old: "primary", New: "standby"}),
			multidb.ErrDatabaseChanged, "1", []string{"Service Unavailable, retry after 1 s; " + mayHaveRun}},
		{"through Guard.Call and a limiter", &guard.UnavailableError{Name: "login", Reason: guard.ReasonRedis,
			Err: &guard.RedisError{Op: "login limit", Server: addr, Kind: guard.FailureUnreachable, Err: mce}},
			guard.ErrUnavailable, "1", []string{"login unavailable, retry after 1 s; " + mayHaveRun}},
		{"through Guard.Call", &guard.RedisError{Op: "price get", Server: addr, Kind: guard.FailureReply, Err: &sentinel.NoReplicaError{MasterName: "shop"}},
			guard.ErrUnavailable, "2", []string{"Service Unavailable, retry after 2 s; " + safeToRepeat}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.is != nil && !errors.Is(tc.err, tc.is) {
				t.Fatalf("%v does not match %v", tc.err, tc.is)
			}
			if got := httpguard.StatusCode(tc.err); got != 503 {
				t.Errorf("StatusCode = %d, want 503", got)
			}
			if got := httpguard.RetryAfter(tc.err); got != tc.retryAfter {
				t.Errorf("RetryAfter = %q, want %q", got, tc.retryAfter)
			}
			w := httptest.NewRecorder()
			if got := httpguard.WriteError(w, tc.err); got != 503 || w.Code != 503 {
				t.Errorf("WriteError = %d, wrote %d, want 503", got, w.Code)
			}
			if got := w.Header().Get("Retry-After"); got != tc.retryAfter {
				t.Errorf("Retry-After %q, want %q", got, tc.retryAfter)
			}
			body := w.Body.String()
			for _, want := range tc.body {
				if !strings.Contains(body, want) {
					t.Errorf("body %q, want %q in it", body, want)
				}
			}
			if len(body) > 120 || strings.Contains(body, "10.0.0.") || strings.Contains(body, "shop") {
				t.Errorf("body %q: want a short one without servers or names", body)
			}
		})
	}
}

// guard's own errors are not guard.Transient: their mapping (TestStatusCode)
// is what it was, with no Retry-After on a 503.
func TestGuardErrorsAreNotTransient(t *testing.T) {
	for _, err := range []error{
		&guard.RedisError{Op: "price get", Kind: guard.FailureTimeout},
		&guard.UnavailableError{Name: "price", Reason: guard.ReasonBusy},
		&guard.UnavailableError{Name: "login", Reason: guard.ReasonRedis, Err: &guard.RedisError{Op: "login limit", Kind: guard.FailureUnreachable}},
		context.DeadlineExceeded,
		multidb.ErrClosed,
	} {
		var tr guard.Transient
		if errors.As(err, &tr) {
			t.Errorf("%v is Transient", err)
		}
		if ra := httpguard.RetryAfter(err); ra != "" {
			t.Errorf("%v: Retry-After %q", err, ra)
		}
	}
}

// The real thing: a read under ReadFrom Replica on a deployment with no
// replica, and a call while multidb has no healthy database, both through
// Guard.Call, answer 503 with Retry-After and "safe to repeat".
func TestWriteErrorTransientFromRealClients(t *testing.T) {
	ctx := testkit.Context(t, 60*time.Second)
	get := func(ctx context.Context, c redis.Cmdable) error { return c.Get(ctx, "k").Err() }
	check := func(t *testing.T, err error, target any, retryAfter string) {
		t.Helper()
		if !errors.As(err, target) {
			t.Fatalf("err %v, want a %T", err, target)
		}
		w := httptest.NewRecorder()
		if code := httpguard.WriteError(w, err); code != 503 || w.Header().Get("Retry-After") != retryAfter ||
			!strings.Contains(w.Body.String(), safeToRepeat) {
			t.Errorf("WriteError(%v): %d, Retry-After %q, body %q", err, code, w.Header().Get("Retry-After"), w.Body.String())
		}
	}

	t.Run("sentinel, no replica", func(t *testing.T) {
		l := lab.New(t, lab.Config{Sentinels: 1})
		sc, err := sentinel.NewClient(sentinel.Config{MasterName: l.MasterName(), SentinelAddrs: l.SentinelAddrs(), ReadFrom: sentinel.Replica})
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		g, err := guard.New(sc, guard.Config{KeyPrefix: "test", CallLimit: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var nre *sentinel.NoReplicaError
		check(t, g.Call(ctx, "get", get), &nre, "2")
	})

	t.Run("multidb, no healthy database", func(t *testing.T) {
		n := lab.New(t, lab.Standalone()).Node(0)
		o := n.Options()
		o.DialTimeout, o.ReadTimeout = time.Second, time.Second
		mc, err := multidb.NewClient(multidb.Config{Databases: []multidb.Database{{Name: "only", Options: o}}})
		if err != nil {
			t.Fatal(err)
		}
		defer mc.Close()
		if err := n.Kill(); err != nil {
			t.Fatal(err)
		}
		// The failed calls trip the breaker (three in a row); the calls
		// after it are refused unsent.
		var ue *multidb.UnavailableError
		testkit.WaitFor(t, 20*time.Second, "the breaker to open", func() bool {
			return errors.As(mc.Get(ctx, "k").Err(), &ue)
		})
		g, err := guard.New(mc, guard.Config{KeyPrefix: "test", CallLimit: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		check(t, g.Call(ctx, "get", get), &ue, "5")
	})
}
