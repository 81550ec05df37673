package lab

import (
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// BenchmarkTimerWakeFloor measures how late the kernel wakes a thread
// blocked on a timerfd, with nothing of the proxy in the way: one OS
// thread, a blocking read(2) on a timerfd armed 3 ms ahead, b.N times. That
// is the floor under the proxy's lateness (BenchmarkProxyPrecision's
// late-p50-us): on a virtual machine, waking an idle CPU takes tens of
// microseconds, and no clock in the proxy can be more punctual than that
// without spinning. It reports the lateness percentiles (late-p50-us,
// late-p90-us, late-p99-us): on an otherwise idle machine (neighbours=0),
// and with two other OS threads waking every 100 µs (neighbours=2), which
// keep the vCPUs from idling the way many reads in flight do.
//
//	go test -run '^$' -bench TimerWakeFloor -benchtime 1000x ./lab/
func BenchmarkTimerWakeFloor(b *testing.B) {
	b.Run("neighbours=0", func(b *testing.B) { timerWakeFloor(b, 0) })
	b.Run("neighbours=2", func(b *testing.B) { timerWakeFloor(b, 2) })
}

// timerWakeFloor measures with n other threads, each in a loop of 100 µs
// sleeps, running until the measurement ends.
func timerWakeFloor(b *testing.B, n int) {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_CLOEXEC) // blocking
	if err != nil {
		b.Skipf("no timerfd: %v", err)
	}
	defer unix.Close(fd)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(stop)
	for range n {
		wg.Go(func() {
			runtime.LockOSThread() // a thread of its own, sleeping in the kernel
			defer runtime.UnlockOSThread()
			nap := unix.NsecToTimespec(int64(100 * time.Microsecond))
			for {
				select {
				case <-stop:
					return
				default:
				}
				_ = unix.Nanosleep(&nap, nil)
			}
		})
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()

	const ahead = 3 * time.Millisecond
	late := make([]time.Duration, 0, b.N)
	var buf [8]byte
	var spec unix.ItimerSpec
	b.ResetTimer()
	for range b.N {
		due := time.Now().Add(ahead)
		spec.Value = unix.NsecToTimespec(int64(ahead))
		if err := unix.TimerfdSettime(fd, 0, &spec, nil); err != nil {
			b.Fatal(err)
		}
		if _, err := unix.Read(fd, buf[:]); err != nil {
			b.Fatal(err)
		}
		late = append(late, time.Since(due))
	}
	b.StopTimer()
	slices.Sort(late)
	b.ReportMetric(us(pct(late, 50)), "late-p50-us")
	b.ReportMetric(us(pct(late, 90)), "late-p90-us")
	b.ReportMetric(us(pct(late, 99)), "late-p99-us")
}
