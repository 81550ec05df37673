// Package oncewrite is the mechanism of exactly-once writes (package
// exactlyonce explains the design and argues each case): it turns a write
// into the script call that runs it once per id, loads the script on a
// node and checks it may run there, and types the script's own errors.
// Every routed client (sentinel, cluster) uses it; the rule that lets
// such a write be sent again is failure.Next's.
package oncewrite
