package affinity

import (
	"fmt"
	goruntime "runtime"
	"syscall"
	"unsafe"
)

// Supported says whether this system can bind processes to CPUs.
const Supported = true

// cpuSet is a Linux CPU affinity mask (cpu_set_t of 1024 CPUs).
type cpuSet [1024 / 64]uint64

// Allowed returns the CPUs the calling thread may run on, in ascending
// order.
func Allowed() ([]int, error) {
	var s cpuSet
	if _, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_GETAFFINITY, 0, unsafe.Sizeof(s), uintptr(unsafe.Pointer(&s))); errno != 0 {
		return nil, fmt.Errorf("sched_getaffinity: %w", errno)
	}
	var cpus []int
	for i := range len(s) * 64 {
		if s[i/64]&(1<<(i%64)) != 0 {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

func setThreadCPUs(cpus []int) error {
	var s cpuSet
	for _, c := range cpus {
		if c < 0 || c >= len(s)*64 {
			return fmt.Errorf("sched_setaffinity %v: CPU %d is out of range", cpus, c)
		}
		s[c/64] |= 1 << (c % 64)
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(s), uintptr(unsafe.Pointer(&s))); errno != 0 {
		return fmt.Errorf("sched_setaffinity %v: %w", cpus, errno)
	}
	return nil
}

// StartOn runs start — which forks a process — on a thread bound to cpus,
// so the process inherits that affinity from the fork, whatever its
// program, and every thread it makes inherits it in turn. The calling
// process's own affinity is unchanged afterwards.
func StartOn(cpus []int, start func() error) error {
	goruntime.LockOSThread()
	old, err := Allowed()
	if err != nil {
		goruntime.UnlockOSThread()
		return err
	}
	if err := setThreadCPUs(cpus); err != nil {
		goruntime.UnlockOSThread()
		return err
	}
	err = start()
	if setThreadCPUs(old) == nil {
		goruntime.UnlockOSThread() // else the thread ends with this goroutine
	}
	return err
}
