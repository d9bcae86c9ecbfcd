//go:build !unix

package bench

import "time"

// processCPU is 0 here: the process's CPU time is read with getrusage,
// which this system does not have (the CPU metrics then read 0).
func processCPU() time.Duration { return 0 }
