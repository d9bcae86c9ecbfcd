package shm

import "fmt"

// Region is a memory file (memfd) mapped readable and writable by every
// process that maps it: the rings of the shared-memory parcelport live in
// one per pair of localities. Its creator names it to the other process
// by (PID, FD, Ino) over a connection both trust; the other opens it
// through /proc, which only a process of the same user may do, checks
// that the descriptor still holds that inode at the expected size, and
// maps it. Unlike a Segment it has no reference count: both sides keep
// their mapping until they are done with the peer, and the memory goes
// back to the system when the last mapping and descriptor are gone, even
// if a process is killed (nothing is left in a filesystem).
type Region struct {
	Mem  []byte // the whole file, mapped shared
	PID  int32  // the creator's process id
	FD   int32  // the file's descriptor in the creator
	Ino  uint64 // the file's inode
	own  bool   // created here: Close closes the descriptor
	done bool
}

// String names the region in errors.
func (r *Region) String() string {
	return fmt.Sprintf("region fd %d (inode %d, %d bytes) of process %d", r.FD, r.Ino, len(r.Mem), r.PID)
}
