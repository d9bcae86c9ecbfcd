package agas

import (
	"fmt"

	"github.com/tessera-amt/tessera/runtime"
)

// GID names a distributed object for its whole life, wherever it lives. It
// is 64 bits: the locality that created it — its home, which always knows
// where the object is now — in the top runtime.GUIDLocalityBits bits, and a
// sequence number unique on that locality in the rest. 0 is no object.
// (HPX's GIDs are 128 bits; 2^20 localities and 2^44 objects per locality
// are enough here, and a GID fits in one machine word and one msgpack
// integer.)
type GID uint64

const gidSeqBits = 64 - runtime.GUIDLocalityBits

// MakeGID returns the GID of object seq created on locality home.
func MakeGID(home uint32, seq uint64) GID {
	return GID(uint64(home)<<gidSeqBits | seq&(1<<gidSeqBits-1))
}

// Home returns the locality that created the object.
func (g GID) Home() uint32 { return uint32(g >> gidSeqBits) }

// Seq returns the object's number on its home locality.
func (g GID) Seq() uint64 { return uint64(g) & (1<<gidSeqBits - 1) }

// String prints a GID as {home:seq}.
func (g GID) String() string { return fmt.Sprintf("{%d:%d}", g.Home(), g.Seq()) }
