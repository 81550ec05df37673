package lab

import (
	"errors"
	"os"
	"syscall"
)

// errPlatform is why the lab does not run here: redis-server and
// redis-sentinel are Unix programs, and the lab's faults are Unix signals
// and non-blocking socket writes. Start and NewProxy return it.
var errPlatform = errors.New("lab: needs Linux, macOS or another Unix system; on Windows, run it under WSL")

func setPaused(int, bool) (string, error) { return "", errPlatform }

func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	if err := p.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return nil
}

func writeFD(uintptr, []byte) (int, error) { return 0, errPlatform }

func procAttr() *syscall.SysProcAttr { return nil }
