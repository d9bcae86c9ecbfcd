//go:build unix

package main

import "syscall"

// peakRSSKiB is the most resident memory the process has had, in KiB
// (getrusage's maxrss; 0 where it cannot be read).
func peakRSSKiB() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return int64(ru.Maxrss) // KiB on Linux; the BSDs' bytes are not told apart here
}
