package lab

import (
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// timerfdClock is a clock on a timerfd that Go's network poller waits on.
// A runtime timer can fire up to a millisecond late when the process is
// otherwise idle, because the poller's epoll_wait timeout is in whole
// milliseconds; a timerfd is a kernel hrtimer and wakes the poller when it
// expires, without spinning.
type timerfdClock struct {
	f    *os.File
	rc   syscall.RawConn
	fd   int
	base time.Time    // for at
	at   atomic.Int64 // the time set, since base; MaxInt64 when unset
	spec unix.ItimerSpec

	stopped  atomic.Bool
	stopOnce sync.Once
}

// newPreciseClock returns a timerfd clock, or nil when there is none.
func newPreciseClock() clock {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	f := os.NewFile(uintptr(fd), "timerfd")
	rc, err := f.SyscallConn()
	if err != nil {
		_ = f.Close()
		return nil
	}
	t := &timerfdClock{f: f, rc: rc, fd: fd, base: time.Now()}
	t.at.Store(math.MaxInt64)
	return t
}

func (t *timerfdClock) set(at time.Time) {
	if at.IsZero() {
		t.at.Store(math.MaxInt64)
		t.spec.Value = unix.Timespec{}
		_ = unix.TimerfdSettime(t.fd, 0, &t.spec, nil) // disarm
		return
	}
	// Relative to now, taken before the call: the timer cannot expire
	// before at.
	d := time.Until(at)
	if d <= 0 {
		d = 1 // zero would disarm it
	}
	t.at.Store(int64(at.Sub(t.base)))
	t.spec.Value = unix.NsecToTimespec(int64(d))
	if err := unix.TimerfdSettime(t.fd, 0, &t.spec, nil); err != nil {
		panic("lab: timerfd_settime: " + err.Error()) // cannot happen with a valid fd and time
	}
}

func (t *timerfdClock) wait() bool {
	// The file is never read: set clears its expirations, and the poller
	// tells us of each expiry (edge-triggered). The poller forgets a
	// readiness it saw before the wait starts, so the time set is checked
	// first: an expiry before that means the time has come.
	err := t.rc.Read(func(uintptr) bool {
		return t.stopped.Load() || int64(time.Since(t.base)) >= t.at.Load()
	})
	return err == nil && !t.stopped.Load()
}

func (t *timerfdClock) stop() {
	t.stopOnce.Do(func() {
		t.stopped.Store(true)
		_ = t.f.SetReadDeadline(time.Unix(1, 0)) // wakes a wait
	})
}

func (t *timerfdClock) close() { _ = t.f.Close() }
