//go:build !unix

package benchcmp

import "time"

// cpuTime is 0 where getrusage is not available: Cost.CPUPerOp is then 0.
func cpuTime() time.Duration { return 0 }
