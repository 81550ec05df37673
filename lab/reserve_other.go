//go:build !linux

package lab

// reservePort does not hold ports outside Linux (see reserve_linux.go):
// a suspended proxy's port is free for others while it is down.
func reservePort(string) func() { return nil }
