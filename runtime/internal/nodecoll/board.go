// Package nodecoll is the flag protocol of the collectives that the sites of
// a communicator run through one shared memory region when they all live on
// one machine: a Board laid over the region's bytes, with a slot per site
// and generation where a site publishes its contribution, sequence numbers
// that say which generation a slot holds, counts of the readers a slot
// still waits for, and futex words that a sleeper waits on: a slot's
// arrivals and its last consumption wake only the sleepers of that slot.
// It has no goroutines and takes no locks; the runtime decides when to
// spin, sleep and give up.
//
// A slot is reused every Entries generations. Its writer claims it only
// once every reader of its previous contents has consumed them (Left is
// zero), so a slow reader never sees its data overwritten; a reader
// accepts a slot only when its sequence number is the generation it
// wants, so a slot reused for a later generation is never taken for an
// earlier one.
//
// Combining operations (AllReduce, Barrier) use two more words of a
// generation's entry: an arrival count, which a site increments once its
// slot holds its contribution (Arrive), and a result slot. The site whose
// arrival completes the count reads every site's slot, reduces them and
// publishes the result there; the others wait for that one slot, and only
// its publication wakes them.
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
	// boardHead is the bytes before the first slot.
	boardHead = 64
	// countHead is the bytes of an entry's arrival count, its own cache
	// line, before the entry's result slot.
	countHead = 64
	// writing marks a slot's Left while its writer fills it.
	writing = ^uint32(0)
	// countBits is the low bits of an arrival word that count the sites
	// arrived; the high ones hold the generation (at most 2^48).
	countBits = 16
	// MaxSites is the most sites a board has: an arrival word counts
	// them in countBits bits.
	MaxSites = 1<<countBits - 1
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
	return boardHead + Entries*entryStride(sites, room)
}

func stride(room int) int { return slotHead + (room+63)&^63 }

// entryStride is the bytes of one generation's entry: the arrival count,
// the result slot and a slot per site.
func entryStride(sites, room int) int { return countHead + (sites+1)*stride(room) }

// Board is the protocol over one region, as one process maps it.
type Board struct {
	mem   []byte
	sites int
	room  int
}

// New lays a board of sites sites, room bytes of data per slot, over mem,
// which is Size(sites, room) bytes of memory zeroed when the region was
// made, 8-byte aligned (a page).
func New(mem []byte, sites, room int) (*Board, error) {
	if sites > MaxSites {
		return nil, fmt.Errorf("nodecoll: a board of %d sites, want at most %d", sites, MaxSites)
	}
	if sites <= 0 || room < 0 || len(mem) < Size(sites, room) {
		return nil, fmt.Errorf("nodecoll: %d bytes for a board of %d sites and %d bytes per slot, want %d",
			len(mem), sites, room, Size(sites, room))
	}
	if uintptr(unsafe.Pointer(&mem[0]))%64 != 0 {
		return nil, fmt.Errorf("nodecoll: a board's memory must be aligned to 64 bytes")
	}
	return &Board{mem: mem, sites: sites, room: room}, nil
}

// Room returns the bytes of data a slot holds.
func (b *Board) Room() int { return b.room }

// Sites returns the number of sites.
func (b *Board) Sites() int { return b.sites }

// Slot is site's slot for one generation: a view of the board's memory.
type Slot struct {
	seq   *atomic.Uint64
	seq32 *atomic.Uint32 // seq's low half, written after it: the arrivals' futex word
	left  *atomic.Uint32 // the claims' futex word
	// sleepers on seq32 and on left
	arrivalSleepers, claimSleepers *atomic.Uint32
	op                             *uint32
	flag                           *uint32
	root                           *uint32
	count                          *uint64
	data                           unsafe.Pointer
	room                           int
}

// Slot returns site's slot for generation gen.
func (b *Board) Slot(site int, gen uint64) Slot {
	return b.slotAt(b.entry(gen) + countHead + (site+1)*stride(b.room))
}

// Result returns the slot of generation gen where the last site to
// arrive (Arrive) publishes the result of a combining operation.
func (b *Board) Result(gen uint64) Slot { return b.slotAt(b.entry(gen) + countHead) }

// entry returns the offset of generation gen's entry.
func (b *Board) entry(gen uint64) int {
	return boardHead + int(gen%Entries)*entryStride(b.sites, b.room)
}

// Arrive counts this site in generation gen's combining operation, once
// its slot holds its contribution. It reports whether this site is the
// last of all sites to arrive, which then combines the slots and publishes
// the result, and with ok false that gen failed: the entry moved on to a
// later generation, which it does only once gen completed or failed
// everywhere.
func (b *Board) Arrive(gen uint64) (last, ok bool) {
	w := (*atomic.Uint64)(unsafe.Pointer(&b.mem[b.entry(gen)]))
	for {
		v := w.Load()
		next := gen<<countBits | 1
		switch g := v >> countBits; {
		case g == gen:
			next = v + 1
		case g > gen:
			return false, false
		}
		// g < gen: the entry's earlier generation completed (its sites
		// moved on) or failed (its sites gave it up): start counting.
		if w.CompareAndSwap(v, next) {
			return int(next&MaxSites) == b.sites, true
		}
	}
}

// slotAt returns the slot at offset off of the board.
func (b *Board) slotAt(off int) Slot {
	p := unsafe.Pointer(&b.mem[off])
	return Slot{
		seq:   (*atomic.Uint64)(p),
		left:  (*atomic.Uint32)(unsafe.Add(p, 8)),
		op:    (*uint32)(unsafe.Add(p, 12)),
		flag:  (*uint32)(unsafe.Add(p, 16)),
		root:  (*uint32)(unsafe.Add(p, 20)),
		count: (*uint64)(unsafe.Add(p, 24)),
		seq32: (*atomic.Uint32)(unsafe.Add(p, 32)),
		data:  unsafe.Add(p, slotHead),

		arrivalSleepers: (*atomic.Uint32)(unsafe.Add(p, 36)),
		claimSleepers:   (*atomic.Uint32)(unsafe.Add(p, 40)),
		room:            b.room,
	}
}

// Claim takes the slot for writing when every reader of its previous
// contents consumed them, and reports whether it did.
func (s Slot) Claim() bool { return s.left.CompareAndSwap(0, writing) }

// Publish fills a claimed slot with h and data (at most the room) for
// generation gen, which readers sites then read, and wakes the sleepers
// that wait for it.
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
	s.seq32.Store(uint32(gen))
	if s.arrivalSleepers.Load() > 0 {
		shm.FutexWake(s.seq32, 1<<30)
	}
}

// Gen returns the generation the slot holds or held last (0: none).
func (s Slot) Gen() uint64 { return s.seq.Load() }

// Reclaim takes the slot for writing although readers of its last
// generation have not consumed it: for a generation that failed, whose
// readers gave up. It reports whether it took it.
func (s Slot) Reclaim() bool {
	v := s.left.Load()
	return v != writing && s.left.CompareAndSwap(v, writing)
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
// last reader wakes a writer waiting to reuse it.
func (b *Board) Consume(s Slot) {
	if s.left.Add(^uint32(0)) == 0 && s.claimSleepers.Load() > 0 {
		shm.FutexWake(s.left, 1<<30)
	}
}

// SleepArrival waits until the slot holds generation gen, or for a wake
// or timeout, and reports whether it holds gen. A publication between the
// look and the sleep is not lost: the sleep starts only while the futex
// word holds the value read before the look.
func (s Slot) SleepArrival(gen uint64, timeout time.Duration) bool {
	v := s.seq32.Load()
	if s.Holds(gen) {
		return true
	}
	s.arrivalSleepers.Add(1)
	shm.FutexWait(s.seq32, v, timeout)
	s.arrivalSleepers.Add(^uint32(0))
	return s.Holds(gen)
}

// SleepClaim is Claim that waits, as SleepArrival does, for the last
// reader's Consume when the slot is still held.
func (s Slot) SleepClaim(timeout time.Duration) bool {
	v := s.left.Load()
	if v == 0 && s.Claim() {
		return true
	}
	s.claimSleepers.Add(1)
	shm.FutexWait(s.left, v, timeout)
	s.claimSleepers.Add(^uint32(0))
	return s.Claim()
}
