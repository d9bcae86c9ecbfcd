// Package nodecoll is the flag protocol of the collectives that the sites of
// a communicator run through one shared memory region when they all live on
// one machine: a Board laid over the region's bytes, with a slot per site
// and generation where a site publishes its contribution, sequence numbers
// that say which generation a slot holds, counts of the readers a slot
// still waits for, and one bell (a futex word) that every change rings. It
// has no goroutines and takes no locks; the runtime decides when to spin,
// sleep and give up.
//
// A slot is reused every Entries generations. Its writer claims it only
// once every reader of its previous contents has consumed them (Left is
// zero), so a slow reader never sees its data overwritten; a reader
// accepts a slot only when its sequence number is the generation it
// wants, so a slot reused for a later generation is never taken for an
// earlier one.
package nodecoll

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tessera-amt/tessera/internal/shm"
)

const (
	// Entries is how many generations a site's slots cover before they
	// are reused.
	Entries = 32
	// slotHead is the bytes of a slot's header, before its data.
	slotHead = 64
	// boardHead is the bytes before the first slot: the bell and the
	// count of sleepers, on cache lines of their own.
	boardHead = 128
	// writing marks a slot's Left while its writer fills it.
	writing = ^uint32(0)
)

// Header is what a site says of its call with its contribution: the
// operation, its element count and the root, which every reader compares
// with its own call, and a flag the writer may set (Broadcast: the data
// goes by point-to-point messages instead).
type Header struct {
	Op    uint32
	Flag  uint32
	Root  uint32
	Count uint64
}

// Size returns the bytes of the region a board of sites sites with room
// bytes of data per slot needs.
func Size(sites, room int) int {
	return boardHead + Entries*sites*stride(room)
}

func stride(room int) int { return slotHead + (room+63)&^63 }

// Board is the protocol over one region, as one process maps it.
type Board struct {
	mem      []byte
	sites    int
	room     int
	bell     *atomic.Uint32
	sleepers *atomic.Uint32
}

// New lays a board of sites sites, room bytes of data per slot, over mem,
// which is Size(sites, room) bytes of memory zeroed when the region was
// made, 8-byte aligned (a page).
func New(mem []byte, sites, room int) (*Board, error) {
	if sites <= 0 || room < 0 || len(mem) < Size(sites, room) {
		return nil, fmt.Errorf("nodecoll: %d bytes for a board of %d sites and %d bytes per slot, want %d",
			len(mem), sites, room, Size(sites, room))
	}
	if uintptr(unsafe.Pointer(&mem[0]))%64 != 0 {
		return nil, fmt.Errorf("nodecoll: a board's memory must be aligned to 64 bytes")
	}
	return &Board{
		mem:      mem,
		sites:    sites,
		room:     room,
		bell:     (*atomic.Uint32)(unsafe.Pointer(&mem[0])),
		sleepers: (*atomic.Uint32)(unsafe.Pointer(&mem[64])),
	}, nil
}

// Room returns the bytes of data a slot holds.
func (b *Board) Room() int { return b.room }

// Sites returns the number of sites.
func (b *Board) Sites() int { return b.sites }

// Slot is site's slot for one generation: a view of the board's memory.
type Slot struct {
	seq   *atomic.Uint64
	left  *atomic.Uint32
	op    *uint32
	flag  *uint32
	root  *uint32
	count *uint64
	data  unsafe.Pointer
	room  int
}

// Slot returns site's slot for generation gen.
func (b *Board) Slot(site int, gen uint64) Slot {
	off := boardHead + (int(gen%Entries)*b.sites+site)*stride(b.room)
	p := unsafe.Pointer(&b.mem[off])
	return Slot{
		seq:   (*atomic.Uint64)(p),
		left:  (*atomic.Uint32)(unsafe.Add(p, 8)),
		op:    (*uint32)(unsafe.Add(p, 12)),
		flag:  (*uint32)(unsafe.Add(p, 16)),
		root:  (*uint32)(unsafe.Add(p, 20)),
		count: (*uint64)(unsafe.Add(p, 24)),
		data:  unsafe.Add(p, slotHead),
		room:  b.room,
	}
}

// Claim takes the slot for writing when every reader of its previous
// contents consumed them, and reports whether it did.
func (s Slot) Claim() bool { return s.left.CompareAndSwap(0, writing) }

// Publish fills a claimed slot with h and data (at most the room) for
// generation gen, which readers sites then read; it rings the board's
// bell.
func (b *Board) Publish(s Slot, gen uint64, h Header, data []float64, readers int) {
	if 8*len(data) > s.room {
		panic(fmt.Sprintf("nodecoll: %d float64s in a slot of %d bytes", len(data), s.room))
	}
	*s.op, *s.flag, *s.root, *s.count = h.Op, h.Flag, h.Root, h.Count
	if len(data) > 0 {
		copy(unsafe.Slice((*float64)(s.data), len(data)), data)
	}
	s.left.Store(uint32(readers))
	s.seq.Store(gen) // after the contents: a reader that sees gen sees them
	b.Ring()
}

// Holds reports whether the slot holds generation gen.
func (s Slot) Holds(gen uint64) bool { return s.seq.Load() == gen }

// Header returns what the writer said of its call; valid once Holds.
func (s Slot) Header() Header {
	return Header{Op: *s.op, Flag: *s.flag, Root: *s.root, Count: *s.count}
}

// Data returns the slot's first n float64s, valid once Holds and until
// Consume; n must fit the room.
func (s Slot) Data(n int) []float64 {
	if 8*n > s.room {
		panic(fmt.Sprintf("nodecoll: %d float64s from a slot of %d bytes", n, s.room))
	}
	return unsafe.Slice((*float64)(s.data), n)
}

// Consume tells the writer that this reader is done with the slot; the
// last reader rings the bell, for a writer waiting to reuse it.
func (b *Board) Consume(s Slot) {
	if s.left.Add(^uint32(0)) == 0 {
		b.Ring()
	}
}

// Ring tells the sleepers that something changed.
func (b *Board) Ring() {
	b.bell.Add(1)
	if b.sleepers.Load() > 0 {
		shm.FutexWake(b.bell, 1<<30)
	}
}

// Sleep waits until ready returns true, the bell rings, or timeout passes,
// and returns ready's answer. A ring between ready's answer and the sleep
// is not lost: the sleep starts only while the bell holds the value read
// before ready was asked.
func (b *Board) Sleep(ready func() bool, timeout time.Duration) bool {
	rung := b.bell.Load()
	if ready() {
		return true
	}
	b.sleepers.Add(1)
	shm.FutexWait(b.bell, rung, timeout)
	b.sleepers.Add(^uint32(0))
	return ready()
}
