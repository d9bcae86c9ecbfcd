//go:build linux

package shm

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// New creates a segment of n zeroed float64s, with one reference (the
// caller's).
func New(n int) (*Segment, error) {
	if n <= 0 {
		return nil, fmt.Errorf("shm: segment of %d float64s", n)
	}
	fd, err := unix.MemfdCreate("tessera-tile", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("shm: memfd_create: %w", err)
	}
	size := HeaderBytes + 8*n
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: sizing a segment of %d bytes: %w", size, err)
	}
	// Sealed at its size: no process that maps it can shrink it under
	// the others (a read past the end would be a SIGBUS).
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW|unix.F_SEAL_SEAL); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: sealing a segment: %w", err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: fstat of a new segment: %w", err)
	}
	m, err := unix.Mmap(fd, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		unix.Close(fd)
		return nil, fmt.Errorf("shm: mapping a segment of %d bytes: %w", size, err)
	}
	s := &Segment{
		Data: unsafe.Slice((*float64)(unsafe.Pointer(&m[HeaderBytes])), n),
		desc: Desc{PID: int32(os.Getpid()), FD: int32(fd), Ino: st.Ino, N: uint64(n)},
		refs: (*atomic.Int64)(unsafe.Pointer(&m[0])),
		raw:  [][]byte{m},
		own:  true,
	}
	s.refs.Store(1)
	return s, nil
}

// Map maps the segment d names, which another process (or this one)
// created with New: its elements read-only, its header writable for the
// reference count. It takes no reference: the caller got one with d.
func Map(d Desc) (*Segment, error) {
	if d.N == 0 || d.N > 1<<40 {
		return nil, fmt.Errorf("shm: %v: bad size", d)
	}
	path := fmt.Sprintf("/proc/%d/fd/%d", d.PID, d.FD)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("shm: opening %v: %w", d, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, fmt.Errorf("shm: fstat of %v: %w", d, err)
	}
	size := HeaderBytes + 8*int64(d.N)
	if st.Ino != d.Ino || st.Size != size {
		return nil, fmt.Errorf("shm: %v: the descriptor now holds inode %d of %d bytes, not the segment", d, st.Ino, st.Size)
	}
	h, err := unix.Mmap(fd, 0, HeaderBytes, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("shm: mapping the header of %v: %w", d, err)
	}
	m, err := unix.Mmap(fd, HeaderBytes, int(8*d.N), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		unix.Munmap(h)
		return nil, fmt.Errorf("shm: mapping %v: %w", d, err)
	}
	return &Segment{
		Data: unsafe.Slice((*float64)(unsafe.Pointer(&m[0])), int(d.N)),
		desc: d,
		refs: (*atomic.Int64)(unsafe.Pointer(&h[0])),
		raw:  [][]byte{h, m},
	}, nil
}

// Close unmaps the segment, and closes its file when this process created
// it. Its Data must not be used afterwards; the memory goes back to the
// system when no process maps it any more.
func (s *Segment) Close() error {
	var first error
	for _, m := range s.raw {
		if err := unix.Munmap(m); err != nil && first == nil {
			first = err
		}
	}
	s.raw, s.Data = nil, nil
	if s.own {
		if err := unix.Close(int(s.desc.FD)); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Supported tells whether this system has segments.
const Supported = true

// Node names this machine and process-id namespace: two processes with the
// same Node can map each other's segments by process id. It is the
// kernel's boot id with the namespace's inode, or "" when either cannot be
// read.
func Node() string {
	boot, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	ns, err := os.Readlink("/proc/self/ns/pid")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(boot)) + "/" + ns
}
