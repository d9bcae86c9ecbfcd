//go:build linux

package primitives

import (
	"os"

	"golang.org/x/sys/unix"
)

// adviseSequential tells the kernel that f is read once from start to
// end: a larger read-ahead window.
func adviseSequential(f *os.File, size int64) {
	unix.Fadvise(int(f.Fd()), 0, size, unix.FADV_SEQUENTIAL)
}

// adviseWillNeed starts reading the file at path into the page cache
// without waiting for it (the read-ahead of a chunk read next); errors
// are the later read's to report.
func adviseWillNeed(path string) {
	f, err := os.Open(path)
	if err != nil {
		return
	}
	unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_WILLNEED)
	f.Close()
}
