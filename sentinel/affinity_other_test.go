//go:build !linux

package sentinel

import "errors"

// pinToCPU is Linux's only: elsewhere it says so.
func pinToCPU(int, int) error {
	return errors.New("placing a process on a CPU is supported on Linux only")
}
