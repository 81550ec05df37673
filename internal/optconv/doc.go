// Package optconv converts go-redis's option structs into rediskit's
// configs field by field (sentinel.FromFailoverOptions,
// rediskit.FromUniversalOptions): every exported field has a rule, and a
// field no rule knows (a later go-redis added it) is refused when set, so
// that nothing is silently dropped.
package optconv
