// Package nodebulk is the protocol of the large collectives (AllReduce and
// AllGather of more than a board's slot) that the sites of a communicator
// run through one shared memory region when they all live on one machine.
//
// The region holds a few entries; one operation uses one entry, which the
// runtime picks and names to the sites (through the board of
// runtime/internal/nodecoll). An entry holds, per site, two input buffers
// of one chunk each, two result buffers of one chunk, and per site three
// progress counters: chunks copied in, chunks reduced, chunks copied out.
// A counter holds the generation in its high bits and the count in its
// low ones, so a counter left over from an earlier use of the entry is
// never taken for this one's. The store that brings the last site's
// counter of a kind to a count rings the entry's bell, a futex word
// sleepers wait on.
//
// The data goes through in chunks, two in flight, so a bounded region
// serves any size and the working set stays in the caches. AllReduce:
// every site copies its chunk in; site s reduces the s-th part of the
// chunk over all sites' inputs, in site order, into the result buffer;
// every site copies the result out. AllGather: every site copies its chunk
// in and the others' chunks straight out.
//
// It has no goroutines and takes no locks; the caller's Wait decides how
// to spin, sleep and give up.
package nodebulk

import (
	"fmt"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tessera-amt/tessera/internal/shm"
)

const (
	// Entries is how many operations the region serves at once.
	Entries = 2
	// depth is how many chunks are in flight in an entry.
	depth = 2
	// countBits is the bits of a counter that hold the count.
	countBits = 24
	// line is a cache line: counters of different sites sit in their own.
	line = 64
	// entryHead is the bytes of an entry's header: left, bell, sleepers,
	// then three counters per site, each in its own line.
	entryHead = line
)

// Size returns the bytes of a region for sites sites and chunks of chunk
// bytes per site (a multiple of 64).
func Size(sites, chunk int) int { return Entries * entrySize(sites, chunk) }

func entrySize(sites, chunk int) int {
	return entryHead + 3*sites*line + (sites+1)*depth*chunk
}

// Region is the protocol over one mapped region.
type Region struct {
	mem   []byte
	sites int
	chunk int // bytes per site and chunk
}

// New lays a region for sites sites and chunks of chunk bytes over mem,
// which is Size(sites, chunk) bytes zeroed when made, 64-byte aligned.
func New(mem []byte, sites, chunk int) (*Region, error) {
	if sites <= 0 || chunk <= 0 || chunk%line != 0 || len(mem) < Size(sites, chunk) {
		return nil, fmt.Errorf("nodebulk: %d bytes for %d sites and chunks of %d bytes, want %d and a chunk a multiple of %d",
			len(mem), sites, chunk, Size(sites, chunk), line)
	}
	if uintptr(unsafe.Pointer(&mem[0]))%line != 0 {
		return nil, fmt.Errorf("nodebulk: a region's memory must be aligned to %d bytes", line)
	}
	return &Region{mem: mem, sites: sites, chunk: chunk}, nil
}

// Sites returns the number of sites.
func (r *Region) Sites() int { return r.sites }

// Entry is one entry of the region, as one site sees it.
type Entry struct {
	base     unsafe.Pointer
	left     *atomic.Uint32 // sites still using the entry; 0: free
	bell     *atomic.Uint32
	sleepers *atomic.Uint32
	owner    *atomic.Uint64 // the generation that holds or held it
	sites    int
	chunk    int
}

// Entry returns entry i (0 <= i < Entries).
func (r *Region) Entry(i int) *Entry {
	p := unsafe.Pointer(&r.mem[i*entrySize(r.sites, r.chunk)])
	return &Entry{
		base:     p,
		left:     (*atomic.Uint32)(p),
		bell:     (*atomic.Uint32)(unsafe.Add(p, 4)),
		sleepers: (*atomic.Uint32)(unsafe.Add(p, 8)),
		owner:    (*atomic.Uint64)(unsafe.Add(p, 16)),
		sites:    r.sites,
		chunk:    r.chunk,
	}
}

// Claim takes the entry for generation gen when every site is done with
// its last use, and reports whether it did.
func (e *Entry) Claim(gen uint64) bool {
	if !e.left.CompareAndSwap(0, uint32(e.sites)) {
		return false
	}
	e.owner.Store(gen)
	return true
}

// Reclaim takes the entry for gen although sites of its last generation
// have not given it back, when failed says that generation failed (its
// sites gave up), and reports whether it took it.
func (e *Entry) Reclaim(gen uint64, failed func(gen uint64) bool) bool {
	v := e.left.Load()
	if v == 0 || !failed(e.owner.Load()) || !e.left.CompareAndSwap(v, uint32(e.sites)) {
		return false
	}
	e.owner.Store(gen)
	return true
}

// Done gives the entry back: this site no longer reads or writes it.
func (e *Entry) Done() { e.left.Add(^uint32(0)) }

// Counters: in, reduced, out.
const (
	cIn = iota
	cRed
	cOut
)

func (e *Entry) counter(site, which int) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Add(e.base, entryHead+(3*site+which)*line))
}

// set publishes this site's counter and rings the bell when every site's
// counter has come to n: every wait is for all sites' counters of a kind
// to come to a count, so only the last site's store can end one. Of sites
// that store at once, at least one sees the others' stores (the atomics
// are sequentially consistent), so the ring is not lost.
func (e *Entry) set(site, which int, gen uint64, n int) {
	e.counter(site, which).Store(gen<<countBits | uint64(n))
	if !e.all(which, gen, n) {
		return
	}
	e.bell.Add(1)
	if e.sleepers.Load() > 0 {
		shm.FutexWake(e.bell, 1<<30)
	}
}

// all reports whether every site's counter says at least n for gen.
func (e *Entry) all(which int, gen uint64, n int) bool {
	for s := range e.sites {
		v := e.counter(s, which).Load()
		if v>>countBits != gen&(1<<(64-countBits)-1) || int(v&(1<<countBits-1)) < n {
			return false
		}
	}
	return true
}

// sleep waits for the bell to ring after it read v, at most d.
func (e *Entry) sleep(ready func() bool, d time.Duration) bool {
	v := e.bell.Load()
	if ready() {
		return true
	}
	e.sleepers.Add(1)
	shm.FutexWait(e.bell, v, d)
	e.sleepers.Add(^uint32(0))
	return ready()
}

func (e *Entry) in(site, k int) []float64 {
	off := entryHead + 3*e.sites*line + ((site*depth)+k%depth)*e.chunk
	return unsafe.Slice((*float64)(unsafe.Add(e.base, off)), e.chunk/8)
}

func (e *Entry) result(k int) []float64 {
	return e.in(e.sites, k)
}

// Wait waits until ready says so: it may look at ready, spin, and sleep by
// calling sleep(d), which waits on the entry's bell at most d and reports
// whether ready. It returns an error when the wait is to be abandoned (a
// site or the generation failed).
type Wait func(ready func() bool, sleep func(d time.Duration) bool) error

// Combine reduces element-wise: dst[i] = op(lo[i], hi[i]), lo holding the
// values of the lower sites.
type Combine func(dst, lo, hi []float64)

// wait waits until every site's counter which says at least n for gen.
func (e *Entry) wait(wait Wait, which int, gen uint64, n int) error {
	ready := func() bool { return e.all(which, gen, n) }
	if ready() {
		return nil
	}
	return wait(ready, func(d time.Duration) bool { return e.sleep(ready, d) })
}

// ChunkElems returns the float64s per site and chunk.
func (r *Region) ChunkElems() int { return r.chunk / 8 }
