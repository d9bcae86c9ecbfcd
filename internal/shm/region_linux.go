//go:build linux

package shm

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// NewRegion creates a zeroed region of size bytes, sealed at that size,
// and maps it.
func NewRegion(size int) (*Region, error) {
	if size <= 0 {
		return nil, fmt.Errorf("shm: region of %d bytes", size)
	}
	fd, err := unix.MemfdCreate("tessera-ring", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	fail := func(what string, err error) (*Region, error) {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: %s a region of %d bytes: %w", what, size, err)
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		return fail("sizing", err)
	}
	// Sealed at its size: a process that maps it cannot shrink it under
	// the other (a read past the end would be a SIGBUS).
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		return fail("sealing", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail("fstat of", err)
	}
	m, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return fail("mapping", err)
	}
	return &Region{Mem: m, PID: int32(os.Getpid()), FD: int32(fd), Ino: st.Ino, own: true}, nil
}

// MapRegion maps the region that process pid created as descriptor fd,
// refusing it unless the descriptor holds inode ino, size bytes long and
// sealed against shrinking.
func MapRegion(pid, fd int32, ino uint64, size int64) (*Region, error) {
	name := fmt.Sprintf("region fd %d (inode %d, %d bytes) of process %d", fd, ino, size, pid)
	if size <= 0 || size > 1<<40 {
		return nil, fmt.Errorf("shm: %s: bad size", name)
	}
	f, err := unix.Open(fmt.Sprintf("/proc/%d/fd/%d", pid, fd), unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: opening %s: %w", name, err)
	}
	defer unix.Close(f)
	var st unix.Stat_t
	if err := unix.Fstat(f, &st); err != nil {
		return nil, fmt.Errorf("shm: fstat of %s: %w", name, err)
	}
	if st.Ino != ino || st.Size != size {
		return nil, fmt.Errorf("shm: %s: the descriptor holds inode %d of %d bytes, not the region", name, st.Ino, st.Size)
	}
	seals, err := unix.FcntlInt(uintptr(f), unix.F_GET_SEALS, 0)
	if err != nil || seals&unix.F_SEAL_SHRINK == 0 {
		return nil, fmt.Errorf("shm: %s: not sealed against shrinking (seals %#x, %v)", name, seals, err)
	}
	m, err := unix.Mmap(f, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mapping %s: %w", name, err)
	}
	return &Region{Mem: m, PID: pid, FD: fd, Ino: ino}, nil
}

// Close unmaps the region, and closes its descriptor when this process
// created it. Mem must not be used afterwards. A second Close does
// nothing.
func (r *Region) Close() error {
	if r.done {
		return nil
	}
	r.done = true
	err := unix.Munmap(r.Mem)
	r.Mem = nil
	if r.own {
		if cerr := unix.Close(int(r.FD)); err == nil {
			err = cerr
		}
	}
	return err
}
