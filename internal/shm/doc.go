// Package shm holds the memory that localities on one machine lend each
// other without copying: a Segment is a []float64 in a memory file
// (memfd) of its own, which another process of the same user on the same
// machine maps by its Desc. The first page of the file holds the count of
// references to the segment — its owner's and one per value lent out —
// so any process that holds a reference can pass it on or drop it without
// asking the owner, and the owner reuses the memory only when the count
// is zero.
//
// The runtime allocates the tiles of distributed arrays here when another
// locality of the job shares the machine, and Channel.Lend sends a Desc in
// place of the elements. Only Linux has segments; elsewhere New fails and
// callers use ordinary memory.
package shm
