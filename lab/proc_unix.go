//go:build unix

package lab

import (
	"errors"
	"syscall"
)

// errPlatform is nil where the lab runs: every Unix system with
// redis-server on it (Linux, macOS, the BSDs).
var errPlatform error

// setPaused sends SIGSTOP (pause) or SIGCONT to pid.
func setPaused(pid int, pause bool) (signal string, err error) {
	sig := syscall.SIGCONT
	if pause {
		sig = syscall.SIGSTOP
	}
	return sig.String(), syscall.Kill(pid, sig)
}

// killPID sends SIGKILL to pid; a process already gone is not an error.
func killPID(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// writeFD writes b to a non-blocking socket; a full buffer (EAGAIN) or an
// interrupted call writes nothing and is not an error.
func writeFD(fd uintptr, b []byte) (int, error) {
	n, err := syscall.Write(int(fd), b)
	if n < 0 {
		n = 0
	}
	if err == syscall.EAGAIN || err == syscall.EINTR {
		err = nil
	}
	return n, err
}
