// Command shop runs the example shop (package shop) on a Redis: a catalog
// that keeps working while Redis is down, and login and payment routes
// that refuse with 503 rather than skip their checks.
//
//	go run ./examples/shop -redis redis://127.0.0.1:6379 -listen 127.0.0.1:8080
//	curl localhost:8080/catalog/sku-1
//	curl -d '{"account":"alice","password":"wonderland"}' localhost:8080/login
//	curl -d '{"order":"o-1","amount_minor":1250}' localhost:8080/pay
//	curl localhost:8080/metrics   # OpenTelemetry metrics, Prometheus format
//
// Stop Redis (or pause it: kill -STOP) and try again. Ctrl-C stops the
// shop.
package main
