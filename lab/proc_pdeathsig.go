//go:build linux || freebsd

package lab

import "syscall"

// procAttr puts a server in its own process group, and with Pdeathsig has
// the kernel kill it if the process that started it dies without running
// Close (a test binary killed by its timeout, say).
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
}
