package tick

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// timerFile returns a non-blocking timerfd that expires every d, as a file
// the network poller waits on, or nil if the kernel refuses one.
func timerFile(d time.Duration) *os.File {
	fd, err := unix.TimerfdCreate(unix.CLOCK_MONOTONIC, unix.TFD_NONBLOCK|unix.TFD_CLOEXEC)
	if err != nil {
		return nil
	}
	period := unix.NsecToTimespec(int64(d))
	if err := unix.TimerfdSettime(fd, 0, &unix.ItimerSpec{Interval: period, Value: period}, nil); err != nil {
		unix.Close(fd)
		return nil
	}
	return os.NewFile(uintptr(fd), "timerfd")
}
