package main

import (
	"fmt"
	goruntime "runtime"
	"syscall"
	"unsafe"
)

// cpuSet is a Linux CPU affinity mask (cpu_set_t of 1024 CPUs).
type cpuSet [1024 / 64]uint64

// allowedCPUs returns the CPUs this thread may run on, in ascending order.
func allowedCPUs() ([]int, error) {
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
		s[c/64] |= 1 << (c % 64)
	}
	if _, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, 0, unsafe.Sizeof(s), uintptr(unsafe.Pointer(&s))); errno != 0 {
		return fmt.Errorf("sched_setaffinity %v: %w", cpus, errno)
	}
	return nil
}

// startOnCPUs runs start — which forks a process — on a thread bound to
// cpus, so the process inherits that affinity from the fork, whatever its
// program, and every thread it makes inherits it in turn.
func startOnCPUs(cpus []int, start func() error) error {
	goruntime.LockOSThread()
	old, err := allowedCPUs()
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

const bindSupported = true
