//go:build !unix

package runtime

import (
	"testing"
	"time"
)

// cpuTime skips the test: the process's CPU time is read with getrusage,
// which this system does not have.
func cpuTime(t *testing.T) time.Duration {
	t.Skip("no getrusage on this system to measure the process's CPU time")
	return 0
}
