//go:build linux

package primitives

import (
	"errors"
	"io"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// directAlign is the alignment readDirect asks of memory and lengths: a
// page, which covers every block size a file system asks for O_DIRECT.
const directAlign = 4096

// readDirect reads the whole file f, of len(dst) bytes, into dst straight
// from the disk (O_DIRECT: no page cache, no copy; the disk writes into
// the tile) when none of the file is in the page cache (cachestat(2)) and
// dst and its length are page-aligned. It reports whether it read;
// otherwise the caller reads f as usual — a file in the cache is copied
// from there rather than read from the disk again, and a file system
// without O_DIRECT (tmpfs) or a kernel without cachestat falls back too.
func readDirect(f *os.File, dst []byte) (bool, error) {
	if len(dst) == 0 || len(dst)%directAlign != 0 || uintptr(unsafe.Pointer(unsafe.SliceData(dst)))%directAlign != 0 {
		return false, nil
	}
	var st unix.Cachestat_t
	if err := unix.Cachestat(uint(f.Fd()), &unix.CachestatRange{Off: 0, Len: uint64(len(dst))}, &st, 0); err != nil || st.Cache != 0 {
		return false, nil
	}
	d, err := os.OpenFile(f.Name(), os.O_RDONLY|syscall.O_DIRECT, 0)
	if err != nil {
		return false, nil
	}
	defer d.Close()
	n, err := io.ReadFull(d, dst)
	if errors.Is(err, syscall.EINVAL) && n == 0 {
		return false, nil // O_DIRECT refused at the first read
	}
	return true, err
}
