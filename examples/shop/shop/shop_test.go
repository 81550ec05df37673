package shop_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/examples/shop/shop"
	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// fixture is a shop on a lab Redis, served by an httptest server.
type fixture struct {
	t    *testing.T
	ctx  context.Context
	lab  *lab.Lab
	node *lab.Node
	g    *guard.Guard
	shop *shop.Shop
	srv  *httptest.Server
}

type options struct {
	timing bool // the guard's default timeouts (for tests that time them)
	cfg    func(*shop.Config)
}

func newFixture(t *testing.T, o options) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	l := lab.New(t, lab.Config{Proxy: true}) // Proxy: "down" without losing the data
	n := l.Node(0)
	s := guard.ClientConfig{Addr: n.Addr(), KeyPrefix: "shop"}
	if !o.timing {
		// Behaviour tests: generous timeouts, so that a loaded 2-core
		// machine running -race cannot turn a slow reply into a 503.
		s.DialTimeout, s.ReadTimeout, s.WriteTimeout, s.CallLimit = 2*time.Second, 2*time.Second, 2*time.Second, 3*time.Second
	}
	g, err := guard.Open(s)
	if err != nil {
		t.Fatal(err)
	}
	cfg := shop.Config{Guard: g}
	if o.cfg != nil {
		o.cfg(&cfg)
	}
	sh, err := shop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(sh.Handler())
	t.Cleanup(func() {
		if n.Paused() {
			_ = n.Resume()
		}
		srv.Close()
		_ = sh.Close()
		_ = g.Close()
	})
	return &fixture{t: t, ctx: ctx, lab: l, node: n, g: g, shop: sh, srv: srv}
}

type response struct {
	code       int
	retryAfter string
	body       string
	took       time.Duration
}

// do sends a request. It may run on any goroutine: a transport error is
// reported with Errorf and gives status 0, which no check accepts.
func (f *fixture) do(method, path, body string) response {
	f.t.Helper()
	req, err := http.NewRequestWithContext(f.ctx, method, f.srv.URL+path, strings.NewReader(body))
	if err != nil {
		f.t.Errorf("%s %s: %v", method, path, err)
		return response{}
	}
	start := time.Now()
	res, err := f.srv.Client().Do(req)
	if err != nil {
		f.t.Errorf("%s %s: %v", method, path, err)
		return response{}
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return response{code: res.StatusCode, retryAfter: res.Header.Get("Retry-After"), body: string(b), took: time.Since(start)}
}

func (f *fixture) price(sku string) (response, shop.PriceResponse) {
	f.t.Helper()
	r := f.do("GET", "/catalog/"+sku, "")
	var p shop.PriceResponse
	if r.code == 200 {
		if err := json.Unmarshal([]byte(r.body), &p); err != nil {
			f.t.Fatalf("price body %q: %v", r.body, err)
		}
	}
	return r, p
}

func (f *fixture) login(account, password string) response {
	f.t.Helper()
	b, _ := json.Marshal(shop.LoginRequest{Account: account, Password: password})
	return f.do("POST", "/login", string(b))
}

func (f *fixture) pay(order string, amount int64) response {
	f.t.Helper()
	b, _ := json.Marshal(shop.PayRequest{Order: order, AmountMinor: amount})
	return f.do("POST", "/pay", string(b))
}

// redisDown refuses new connections and resets open ones, while the
// server keeps its data; the returned func brings it back.
func (f *fixture) redisDown() (up func()) {
	f.node.Proxy().Suspend()
	return func() {
		if err := f.node.Proxy().Resume(); err != nil {
			f.t.Fatal(err)
		}
	}
}

func TestCatalogTwoRequestsOneDatabaseRead(t *testing.T) {
	f := newFixture(t, options{})
	r1, p1 := f.price("sku-1")
	r2, p2 := f.price("sku-1")
	if r1.code != 200 || r2.code != 200 || p1.PriceMinor != 1250 || p2.PriceMinor != 1250 {
		t.Fatalf("responses %v %v", r1, r2)
	}
	if p1.Source != "loader" || p2.Source != "cache" {
		t.Fatalf("sources %q then %q, want loader then cache", p1.Source, p2.Source)
	}
	if n := f.shop.Stats().PriceReads; n != 1 {
		t.Fatalf("two consecutive requests made %d database reads, want 1", n)
	}
	if r, _ := f.price("no-such-sku"); r.code != 404 {
		t.Fatalf("unknown SKU: %d %q", r.code, r.body)
	}
}

// Redis paused (SIGSTOP): the next catalog read goes to the database
// within the call limit + 50 ms, and the request succeeds.
func TestCatalogRedisPausedFallsBackWithinTheBound(t *testing.T) {
	f := newFixture(t, options{timing: true})
	// The bound has the process's worst scheduling stall in this test
	// added: on a loaded machine the guard's timer fires late by that much.
	stalls := testkit.MeasureStalls(t)
	if r, _ := f.price("sku-2"); r.code != 200 { // cached; connection open
		t.Fatalf("warm-up: %v", r)
	}
	if err := f.node.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	r, p := f.price("sku-2")
	if r.code != 200 || p.PriceMinor != 899 || !p.Degraded || p.Source != "loader" {
		t.Fatalf("catalog with Redis paused: %d %q", r.code, r.body)
	}
	reads := f.shop.Stats().PriceReads
	toDB := f.shop.Prices().LastRead().Sub(start)
	bound := f.g.CallLimit() + 50*time.Millisecond + stalls.Max()
	t.Logf("Redis paused: database read after %v, response after %v (bound to the read: %v, with the worst stall %v)", toDB, r.took, bound, stalls.Max())
	if reads != 2 {
		t.Fatalf("database reads %d, want 2", reads)
	}
	if toDB > bound {
		t.Fatalf("the database read started %v after the request, want at most %v", toDB, bound)
	}
	if err := f.node.Resume(); err != nil {
		t.Fatal(err)
	}
	if _, p := f.price("sku-2"); p.Source != "cache" {
		t.Fatalf("after resume: source %q, want cache", p.Source)
	}
}

// Every database slot busy: one more catalog miss is refused at once.
func TestCatalogFullFallbackRefusesAtOnce(t *testing.T) {
	stalls := testkit.MeasureStalls(t) // added to the "at once" bound
	f := newFixture(t, options{cfg: func(c *shop.Config) { c.LoadSlots = 2; c.LoadTimeout = 10 * time.Second }})
	release := f.shop.Prices().Hold()
	defer release()
	var wg sync.WaitGroup
	for _, sku := range []string{"sku-1", "sku-2"} {
		wg.Go(func() {
			if r, _ := f.price(sku); r.code != 200 {
				t.Errorf("held request: %v", r)
			}
		})
	}
	deadline := time.Now().Add(10 * time.Second)
	for f.shop.Stats().PriceReads < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the held requests never reached the database")
		}
		time.Sleep(2 * time.Millisecond)
	}
	r, _ := f.price("sku-3")
	if r.code != 503 || !strings.Contains(r.body, "busy") {
		t.Fatalf("third request with both slots busy: %d %q, want 503 busy", r.code, r.body)
	}
	if at := 50*time.Millisecond + stalls.Max(); r.took > at {
		t.Errorf("refused after %v, want at once (within %v, with the worst stall)", r.took, at)
	}
	if n := f.shop.Stats().PriceReads; n != 2 {
		t.Errorf("database reads %d, want 2: the refused request reached the database", n)
	}
	release()
	wg.Wait()
}

// 8 concurrent login attempts on one account: exactly 5 admitted, 3 get
// 429 with Retry-After.
func TestLoginEightConcurrentAttempts(t *testing.T) {
	f := newFixture(t, options{})
	codes := map[int]int{}
	for _, r := range concurrently(8, func() response { return f.login("Alice ", "wonderland") }) {
		codes[r.code]++
		if r.code == 429 {
			if s, err := strconv.Atoi(r.retryAfter); err != nil || s < 1 || s > 60 {
				t.Errorf("429 with Retry-After %q", r.retryAfter)
			}
		}
	}
	if codes[200] != 5 || codes[429] != 3 || len(codes) != 2 {
		t.Fatalf("status counts %v, want 5×200 and 3×429", codes)
	}
	// The limit is per account and checked before the password.
	if r := f.login("alice", "wrong"); r.code != 429 {
		t.Fatalf("9th attempt with a wrong password: %d, want 429", r.code)
	}
	if r := f.login("bob", "wrong"); r.code != 401 {
		t.Fatalf("other account, wrong password: %d, want 401", r.code)
	}
}

// Redis down: login answers 503 and the attempt is not counted.
func TestLoginRedisDownIs503AndNotCounted(t *testing.T) {
	f := newFixture(t, options{})
	up := f.redisDown()
	r := f.login("alice", "wonderland")
	if r.code != 503 || !strings.Contains(r.body, "login unavailable") {
		t.Fatalf("login with Redis down: %d %q, want 503", r.code, r.body)
	}
	up()
	if n, err := f.node.Do(f.ctx, "EXISTS", "shop:login:alice").Int(); err != nil || n != 0 {
		t.Fatalf("EXISTS shop:login:alice = %d, %v: the refused attempt was counted", n, err)
	}
	for i := range 5 {
		if r := f.login("alice", "wonderland"); r.code != 200 {
			t.Fatalf("attempt %d after recovery: %d (the limit must be whole)", i+1, r.code)
		}
	}
	if s := f.shop.Stats().Login; s.Unavailable != 1 || s.Allowed != 5 {
		t.Errorf("login stats %+v", s)
	}
}

// Two concurrent payments for one order: one charge, one 409.
func TestPayTwoConcurrentPaymentsOneCharge(t *testing.T) {
	f := newFixture(t, options{cfg: func(c *shop.Config) { c.ProviderDelay = 50 * time.Millisecond }})
	codes := map[int]int{}
	for _, r := range concurrently(2, func() response { return f.pay("order-1", 4500) }) {
		codes[r.code]++
	}
	if codes[200] != 1 || codes[409] != 1 {
		t.Fatalf("status counts %v, want one 200 and one 409", codes)
	}
	if s := f.shop.Stats(); s.Charges != 1 || s.ProviderCalls != 1 {
		t.Fatalf("charges %d, provider calls %d; want 1 and 1", s.Charges, s.ProviderCalls)
	}
}

// Redis down: pay answers 503 and the provider is never called.
func TestPayRedisDownNeverCallsTheProvider(t *testing.T) {
	f := newFixture(t, options{})
	up := f.redisDown()
	r := f.pay("order-2", 1250)
	if r.code != 503 || !strings.Contains(r.body, "payment unavailable") {
		t.Fatalf("pay with Redis down: %d %q, want 503", r.code, r.body)
	}
	if n := f.shop.Provider().Calls(); n != 0 {
		t.Fatalf("provider called %d times with Redis down", n)
	}
	up()
	if r := f.pay("order-2", 1250); r.code != 200 {
		t.Fatalf("pay after recovery: %d %q", r.code, r.body)
	}
}

// A retry after the admission's TTL (the first reply was lost, say)
// reuses the order's idempotency key: the provider returns the first
// payment, and the charge count does not grow.
func TestPayRetryAfterTTLReusesTheIdempotencyKey(t *testing.T) {
	const ttl = 300 * time.Millisecond
	f := newFixture(t, options{cfg: func(c *shop.Config) { c.PaymentTTL = ttl }})
	first := f.pay("order-3", 2000)
	if first.code != 200 {
		t.Fatalf("first payment: %d %q", first.code, first.body)
	}
	if r := f.pay("order-3", 2000); r.code != 409 {
		t.Fatalf("repeat within the TTL: %d, want 409", r.code)
	}
	time.Sleep(ttl + 50*time.Millisecond)
	retry := f.pay("order-3", 2000)
	if retry.code != 200 {
		t.Fatalf("retry after the TTL: %d %q", retry.code, retry.body)
	}
	var p1, p2 shop.Payment
	_ = json.Unmarshal([]byte(first.body), &p1)
	_ = json.Unmarshal([]byte(retry.body), &p2)
	if p1.ID == "" || p2.ID != p1.ID || !p2.Replayed || p1.Replayed {
		t.Fatalf("payments %+v then %+v: want the same payment, replayed", p1, p2)
	}
	if s := f.shop.Stats(); s.Charges != 1 || s.ProviderCalls != 2 {
		t.Fatalf("charges %d, provider calls %d; want 1 and 2", s.Charges, s.ProviderCalls)
	}
}

// Liveness and readiness do not depend on Redis; the cached report does.
func TestProbesDoNotDependOnRedis(t *testing.T) {
	stalls := testkit.MeasureStalls(t) // added to the "at once" bound
	f := newFixture(t, options{timing: true, cfg: func(c *shop.Config) { c.MonitorInterval = 20 * time.Millisecond }})
	report := func() shop.RedisReport {
		var rep shop.RedisReport
		r := f.do("GET", "/debug/redis", "")
		if err := json.Unmarshal([]byte(r.body), &rep); err != nil || r.code != 200 {
			t.Fatalf("/debug/redis: %d %q", r.code, r.body)
		}
		return rep
	}
	waitUntil(t, func() bool { return report().Writable })
	if err := f.node.Pause(); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/healthz", "/readyz"} {
		if r := f.do("GET", path, ""); r.code != 200 || r.took > 50*time.Millisecond+stalls.Max() {
			t.Errorf("%s with Redis paused: %d after %v, want 200 at once (within 50 ms + the worst stall %v)", path, r.code, r.took, stalls.Max())
		}
	}
	waitUntil(t, func() bool { return report().State == "timeout" })
	if err := f.node.Resume(); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, func() bool { return report().Writable })
}

// concurrently runs n copies of req at once and returns their responses.
func concurrently(n int, req func() response) []response {
	results := make([]response, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { <-start; results[i] = req() })
	}
	close(start)
	wg.Wait()
	return results
}

func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 20 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestBadRequests(t *testing.T) {
	f := newFixture(t, options{})
	for _, tc := range []struct{ path, body string }{
		{"/login", "not json"}, {"/login", `{"password":"x"}`},
		{"/pay", `{"order":"o"}`}, {"/pay", `{"amount_minor":5}`},
	} {
		if r := f.do("POST", tc.path, tc.body); r.code != 400 {
			t.Errorf("POST %s %s: %d, want 400", tc.path, tc.body, r.code)
		}
	}
	if r := f.pay("order-9", 100); r.code != 200 {
		t.Fatal(r)
	}
}
