//go:build unix && !linux && !freebsd

package lab

import "syscall"

// procAttr puts a server in its own process group. This system has no
// parent-death signal (macOS, OpenBSD, NetBSD): servers are stopped by
// Close, and a test binary killed before it runs Close leaves them running
// until they are stopped by their PID (the lab's directory keeps each
// server's log and config; `ps` shows the config file's path).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
