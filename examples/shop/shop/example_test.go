package shop_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/rediskit/rediskit/examples/shop/shop"
	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/lab"
)

// The shop on a lab Redis: the catalog keeps answering while Redis is
// down; login and payment refuse with 503 and start nothing.
func Example() {
	ctx := context.Background()
	l, err := lab.Start(ctx, lab.Config{Proxy: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	g, err := guard.Open(guard.ClientConfig{Addr: l.Node(0).Addr(), KeyPrefix: "shop"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer g.Close()
	s, err := shop.New(shop.Config{Guard: g})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()

	call := func(method, path, body string) {
		req, _ := http.NewRequestWithContext(ctx, method, srv.URL+path, strings.NewReader(body))
		res, err := srv.Client().Do(req)
		if err != nil {
			fmt.Println(err)
			return
		}
		b, _ := io.ReadAll(res.Body)
		_ = res.Body.Close()
		fmt.Printf("%s %s: %d %s\n", method, path, res.StatusCode, strings.TrimSpace(string(b)))
	}

	call("GET", "/catalog/sku-1", "")
	l.Node(0).Proxy().Suspend() // Redis down
	call("GET", "/catalog/sku-1", "")
	call("POST", "/login", `{"account":"alice","password":"wonderland"}`)
	call("POST", "/pay", `{"order":"o-1","amount_minor":1250}`)
	fmt.Println("provider calls:", s.Provider().Calls())
	// Output:
	// GET /catalog/sku-1: 200 {"sku":"sku-1","price_minor":1250,"source":"loader"}
	// GET /catalog/sku-1: 200 {"sku":"sku-1","price_minor":1250,"source":"loader","degraded":true}
	// POST /login: 503 login unavailable, try again later
	// POST /pay: 503 payment unavailable, try again later
	// provider calls: 0
}
