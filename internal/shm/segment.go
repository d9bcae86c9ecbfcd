package shm

import (
	"fmt"
	"sync/atomic"
)

// HeaderBytes is the size of a segment's header: the first page of its
// file, with the reference count; the elements follow it.
const HeaderBytes = 4096

// Desc names a segment to another process on the same machine: the owner's
// process id and the segment's file descriptor there, the file's inode
// (which tells a reused descriptor number from the segment) and the number
// of float64s.
type Desc struct {
	PID int32
	FD  int32
	Ino uint64
	N   uint64
}

// String names the segment in errors.
func (d Desc) String() string {
	return fmt.Sprintf("segment fd %d (inode %d, %d float64s) of process %d", d.FD, d.Ino, d.N, d.PID)
}

// Segment is a mapping of a segment: the owner's, readable and writable
// (New), or another process's, readable only (Map). Data is the elements;
// a Segment's memory stays mapped until Close.
type Segment struct {
	Data []float64
	desc Desc
	refs *atomic.Int64 // in the file's header, shared by every process that maps it
	raw  [][]byte      // the mappings, for Close
	own  bool          // created here (New): Close closes the file
}

// Desc returns the segment's name for other processes.
func (s *Segment) Desc() Desc { return s.desc }

// Hold adds a reference: before the segment is lent to another process,
// which drops it with Drop.
func (s *Segment) Hold() { s.refs.Add(1) }

// Drop removes a reference and returns the references left.
func (s *Segment) Drop() int64 { return s.refs.Add(-1) }

// Refs returns the references held now, in every process.
func (s *Segment) Refs() int64 { return s.refs.Load() }
