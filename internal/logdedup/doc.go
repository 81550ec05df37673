// Package logdedup wraps a slog.Handler so that no record it passes on
// carries an attribute key twice in the same group.
//
// slog lets every layer add attributes: a logger's With, a package that
// adds its own With on the logger it was given, and each record's own.
// The built-in handlers write them all, so a key bound twice appears
// twice ({"master_name":"m","master_name":"m"}), which some log pipelines
// reject and every reader has to guess about. rediskit wraps the logger
// a caller gives it once, where it first binds attributes of its own, and
// every record rediskit logs through it, in any package, has each key
// once.
//
// Which value is kept: the last one, at the position of the first. The
// later attribute is the more specific one (a record's own attribute over
// the logger's, an inner package's With over the outer's: the component
// that logged over the one that handed it the logger), and it is the
// value a JSON decoder keeps from a duplicate key, so the output means
// what readers already took it to mean. Two groups with the same key are
// merged (recursively, by the same rule), a group with nothing in it is
// dropped as slog's handlers drop it, and an inline group (empty key) is
// spliced into its parent.
//
// What the wrapper cannot see: attributes bound to the caller's handler
// before rediskit received it (the caller's own logger.With) are already
// inside that handler, formatted. rediskit therefore binds its own
// context under keys of its own (rediskit.master_name,
// rediskit.component), which a caller's master_name or component cannot
// collide with.
package logdedup
