// Package errplace is the tests' check of the rule every routed client
// keeps (internal/failure's Seal): each error a caller sees is one of the
// client's typed errors, which says whether the work may have run, or the
// command's own answer (failure.Answer: redis.Nil, WRONGTYPE, a script's
// error). Anything else (a bare timeout, EOF, a context's end, a raw
// MOVED or CLUSTERDOWN) is unplaced, and fails the test that finds it.
//
// It is a package of its own, beside testkit, because it uses
// internal/failure, whose own tests use testkit.
package errplace
