// Package shop is the example service of rediskit's guard package: a shop
// whose catalog keeps working while Redis is down, while login and
// payment refuse with 503 rather than skip the checks Redis makes for
// them.
//
// The database and the payment provider are in-process stand-ins that
// count their calls (PriceStore, Provider); the provider honours
// idempotency keys as real ones do. New returns the service; Handler is
// its http.Handler, and Stats its counters, for tests and for the
// rediskit demo's tour. The runnable program is in the parent directory:
//
//	go run ./examples/shop -redis redis://127.0.0.1:6379
//
// Decisions, route by route:
//
//   - GET /catalog/{sku} fails open. The price comes from Redis, else from
//     the database, at most 8 reads at once and 500 ms each; when all 8 are
//     busy the request gets 503 at once. With the guard's defaults the
//     slowest path is 150 ms (Redis read) + 500 ms (database) + 150 ms
//     (write-back), and a Redis outage adds at most 150 ms to a request.
//   - POST /login fails closed: 5 attempts per account per minute, counted
//     from the first, before the password is checked. Over the limit: 429
//     with Retry-After. Redis unavailable: 503, since the limit cannot be
//     checked. A per-account limit lets anyone lock out a known account;
//     real login flows add limits by request source.
//   - POST /pay fails closed: SET NX admits one attempt per order for 30 s
//     (a repeat gets 409); Redis unavailable gives 503 and no charge is
//     started. The provider's idempotency key is per order, so a retry
//     after the admission expired gets the first payment back instead of a
//     second charge.
//   - GET /healthz and GET /readyz do not depend on Redis: a restart does
//     not bring Redis back, and an unready shop would lose its catalog
//     too. GET /debug/redis shows the health monitor's cached report.
package shop
