// Package configerr is the one shape of rediskit's configuration errors.
//
// Every package that takes a Config (or a <Thing>Config) reports a field
// it cannot accept with an *Error, exported under the package's own name
// as an alias (type ConfigError = configerr.Error), so that
//
//	var ce *sentinel.ConfigError
//	if errors.As(err, &ce) { ... ce.Field ... }
//
// works with the package the caller imported. The message reads
// "<package>: <Struct>.<Field> <problem>", for example
//
//	sentinel: Config.MasterName is required
//	multidb: Config.Databases["main"].Weight must be a finite number, not negative
//
// Problem says what is wrong and what to do. It may quote the value the
// caller set (a duration, a number, a host name) but never a secret:
// configuration errors end up in logs.
package configerr
