package sentinel

import "golang.org/x/sys/unix"

// pinToCPU runs the process pid on CPU cpu only (a benchmark's placement).
func pinToCPU(pid, cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(pid, &set)
}
