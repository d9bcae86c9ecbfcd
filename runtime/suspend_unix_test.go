//go:build unix

package runtime

import (
	"os"
	"syscall"
	"testing"
)

// suspend stops process p (SIGSTOP: its sockets stay open, it answers
// nothing) and returns what lets it go on.
func suspend(t *testing.T, p *os.Process) (resume func()) {
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	return func() { p.Signal(syscall.SIGCONT) }
}
