package lab

import (
	"net/netip"
	"syscall"
)

// reservePort holds addr's port while nothing listens on it: a TCP socket
// bound to it and never listening, without SO_REUSEADDR. A connection to
// the port is refused (the kernel answers RST, as for a closed port), and
// no other socket can bind it, so the port stays the lab's while a killed
// node is down. Without it, a killed node's proxy port went back to the
// kernel, and a server another lab started (make test runs a Redis pass
// and a Valkey pass side by side) could get it as its own: the killed
// node's replica, still dialling its master's address, then synced from
// that foreign server (CI, 2026-12-06: "Can't handle RDB format version
// 11", and the replica flushed its data first). Best effort: it returns
// nil when the port cannot be held (the caller goes on without).
func reservePort(addr string) func() {
	ap, err := netip.ParseAddrPort(addr)
	if err != nil || !ap.Addr().Is4() {
		return nil
	}
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Port: int(ap.Port()), Addr: ap.Addr().As4()}); err != nil {
		_ = syscall.Close(fd)
		return nil
	}
	return func() { _ = syscall.Close(fd) }
}
