//go:build unix

package main

import (
	"fmt"
	"syscall"
)

// usage is this process's resource use so far: CPU seconds in user and
// system mode, minor page faults, context switches.
type usage struct {
	user, sys                  float64
	faults, voluntary, preempt int64
}

func readUsage() usage {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return usage{}
	}
	sec := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return usage{sec(ru.Utime), sec(ru.Stime), int64(ru.Minflt), int64(ru.Nvcsw), int64(ru.Nivcsw)}
}

func (u usage) String() string {
	return fmt.Sprintf("user %.2f s, system %.2f s, %d minor faults, %d voluntary and %d involuntary context switches", u.user, u.sys, u.faults, u.voluntary, u.preempt)
}

func (u usage) minus(v usage) usage {
	return usage{u.user - v.user, u.sys - v.sys, u.faults - v.faults, u.voluntary - v.voluntary, u.preempt - v.preempt}
}
