package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/rediskit/rediskit/examples/shop/shop"
)

// guardTour sends requests to the example shop (examples/shop) on its own
// standalone Redis and pauses that Redis: the catalog keeps answering from
// the database, login and payment refuse with 503, and everything recovers
// on resume. It prints each request's status, latency and source.
func (d *demo) guardTour(ctx context.Context) error {
	// The shop the metrics step started (or a new one, when this step runs
	// alone); it stops with this step.
	shopRun, err := d.openShop(ctx)
	if err != nil {
		return err
	}
	defer func() { _ = d.closeShop() }()
	node, g, s, srv := shopRun.node, shopRun.guard, shopRun.shop, shopRun.srv

	fmt.Fprintf(d.out, "the example shop on a standalone Redis (%s); guard settings: no retries, "+
		"100ms socket timeouts, %v per Redis call\n", node.Addr(), g.CallLimit())
	t := &shopTour{ctx: ctx, out: d.out, srv: srv}

	fmt.Fprintln(d.out, "Redis up:")
	t.catalog("first request")
	t.catalog("")
	t.login()
	t.pay("order-1")
	fmt.Fprintf(d.out, "  database reads %d, provider calls %d\n", s.Prices().Reads(), s.Provider().Calls())

	if err := node.Pause(); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "Redis paused (SIGSTOP: connections accepted, nothing answered):")
	t.catalog("fallback")
	t.login()
	t.pay("order-2")
	fmt.Fprintf(d.out, "  database reads %d, provider calls %d: no charge was started\n", s.Prices().Reads(), s.Provider().Calls())

	if err := node.Resume(); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "Redis resumed:")
	t.catalog("")
	t.login()
	t.pay("order-2")
	t.pay("order-3")
	if t.err != nil {
		return t.err
	}
	// Commands that were sent while Redis was paused sat in its socket
	// buffer and ran when it resumed: say so when it happened.
	count, _ := node.Do(ctx, "GET", "shop:login:alice").Int()
	fmt.Fprintf(d.out, "  login attempts counted for alice: %d of 3 requests", count)
	if count == 3 {
		fmt.Fprint(d.out, " (the one refused during the pause counted too: its script reached Redis before the timeout)")
	}
	fmt.Fprintln(d.out)
	if held, _ := node.Do(ctx, "EXISTS", "shop:payment:order-2").Int(); held == 1 && t.lastPayStatus["order-2"] == http.StatusConflict {
		fmt.Fprintln(d.out, "  order-2 is held until its 30s admission ends: the SET NX sent during the pause ran on resume (the provider was never called for it)")
	}
	st := s.Stats()
	fmt.Fprintf(d.out, "totals: database reads %d, cache hits %d, Redis failures %d, fallbacks %d; "+
		"login 503s %d; payment 503s %d; provider calls %d, charges %d\n",
		st.PriceReads, st.Catalog.Hits, st.Catalog.RedisFailures, st.Catalog.Fallbacks,
		st.Login.Unavailable, st.Payment.Unavailable, st.ProviderCalls, st.Charges)
	if st.ProviderCalls != st.Charges {
		return fmt.Errorf("provider calls %d but charges %d", st.ProviderCalls, st.Charges)
	}
	return nil
}

// shopTour sends the tour's requests and prints one line for each.
type shopTour struct {
	ctx           context.Context
	out           io.Writer
	srv           *httptest.Server
	err           error
	lastPayStatus map[string]int
}

func (t *shopTour) request(method, path, body string) (int, string, time.Duration) {
	if t.err != nil {
		return 0, "", 0
	}
	req, err := http.NewRequestWithContext(t.ctx, method, t.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.err = err
		return 0, "", 0
	}
	start := time.Now()
	res, err := t.srv.Client().Do(req)
	if err != nil {
		t.err = err
		return 0, "", 0
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	took := time.Since(start)
	if err != nil {
		t.err = err
	}
	return res.StatusCode, strings.TrimSpace(string(b)), took
}

func (t *shopTour) line(what string, code int, took time.Duration, detail string) {
	if t.err == nil {
		fmt.Fprintf(t.out, "  %-22s %d in %-9v %s\n", what, code, took.Round(100*time.Microsecond), detail)
	}
}

// tourSKU is the product the tour asks the catalog for.
const tourSKU = "sku-1"

func (t *shopTour) catalog(note string) {
	sku := tourSKU
	code, body, took := t.request("GET", "/catalog/"+sku, "")
	detail := body
	var p shop.PriceResponse
	if code == http.StatusOK && json.Unmarshal([]byte(body), &p) == nil {
		from := "from Redis"
		if p.Source != "cache" {
			from = "from the database"
		}
		detail = fmt.Sprintf("price %d %s", p.PriceMinor, from)
		if note != "" {
			detail += " (" + note + ")"
		}
	}
	t.line("GET  /catalog/"+sku, code, took, detail)
}

func (t *shopTour) login() {
	code, body, took := t.request("POST", "/login", `{"account":"alice","password":"wonderland"}`)
	t.line("POST /login alice", code, took, body)
}

func (t *shopTour) pay(order string) {
	code, body, took := t.request("POST", "/pay", fmt.Sprintf(`{"order":%q,"amount_minor":1250}`, order))
	var p shop.Payment
	if code == http.StatusOK && json.Unmarshal([]byte(body), &p) == nil {
		body = "payment " + p.ID
	}
	if t.lastPayStatus == nil {
		t.lastPayStatus = map[string]int{}
	}
	t.lastPayStatus[order] = code
	t.line("POST /pay "+order, code, took, body)
}
