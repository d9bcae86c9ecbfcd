//go:build !unix

package runtime

import (
	"os"
	"testing"
)

// suspend skips the test: there is no SIGSTOP here to silence a process.
func suspend(t *testing.T, p *os.Process) (resume func()) {
	t.Skip("no SIGSTOP on this system to make a locality silent")
	return func() {}
}
