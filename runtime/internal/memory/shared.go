package memory

import (
	"fmt"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/tessera-amt/tessera/internal/hugepage"
	"github.com/tessera-amt/tessera/internal/shm"
)

// Shared is a locality's memory for lending to the localities on its
// machine (internal/shm): its own segments, which sharedFloat64s hands
// out (lendable tiles, NewTile) and giveBack takes back, and its mappings
// of the segments other localities lent it (Channel.Lend), which giveBack
// gives back.
//
// A segment's reference count lives in the segment itself: the owner's
// reference while the memory is in use here, plus one per value lent out
// and not yet recycled by its holder, in whichever process. The owner
// reuses a segment only when the count is zero, so a tile lent to a
// neighbour, and passed on by it to the next, is never overwritten under
// them — and the owner learns of it without a message.
type Shared struct {
	probe *shm.Segment // this locality's probe, during the start barrier

	on      bool   // some locality of the job maps this one's segments
	mappers []bool // by locality: it mapped this locality's probe (lend to it)
	limit   int    // bytes of free segments kept (Config.RecycleBytes)

	mu    sync.Mutex
	own   map[*float64]*shm.Segment // this locality's segments, by their first element
	free  map[int][]*shm.Segment    // own segments nobody holds, by length
	held  int                       // bytes in free
	lent  []*shm.Segment            // own segments let go here but still held by a borrower
	peers map[shm.Desc]*borrowedSeg // other localities' segments mapped here
	at    map[*float64]*borrowedSeg // the same, by their first element
	// idle is the bytes of the mappings this locality holds no
	// reference to: kept for the next loan of the same segment, up to
	// limit (a mapping keeps its segment's memory alive even after its
	// owner closed it).
	idle int

	lentBytes, borrowedBytes atomic.Uint64 // Counters
}

// borrowedSeg is another locality's segment mapped here, and the
// references this locality holds to it.
type borrowedSeg struct {
	seg  *shm.Segment
	refs int
}

// NewProbe creates this locality's probe, a segment of one float64 that
// the other localities on its machine try to map in the start barrier,
// and returns its Desc (zero where the system has no segments or does
// not say what machine this is).
func (s *Shared) NewProbe() shm.Desc {
	if !shm.Supported || shm.Node() == "" {
		return shm.Desc{}
	}
	seg, err := shm.New(1)
	if err != nil {
		return shm.Desc{}
	}
	s.mu.Lock()
	s.probe = seg
	s.mu.Unlock()
	return seg.Desc()
}

// CloseProbe closes the probe once the start barrier is over.
func (s *Shared) CloseProbe() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.probe != nil {
		s.probe.Close()
		s.probe = nil
	}
}

// MapProbes tries to map the probe of every other locality on this
// machine (by nodes) with try (nil: shm.Map) and returns, by locality, 1
// for the probes it mapped: those localities may lend to this one.
func (s *Shared) MapProbes(here uint32, nodes []string, probes []shm.Desc, try func(from uint32, d shm.Desc) error) []byte {
	mapped := make([]byte, len(nodes))
	if int(here) >= len(nodes) || nodes[here] == "" || len(probes) != len(nodes) {
		return mapped
	}
	if try == nil {
		try = func(_ uint32, d shm.Desc) error {
			seg, err := shm.Map(d)
			if err == nil {
				seg.Close()
			}
			return err
		}
	}
	for l, n := range nodes {
		if uint32(l) != here && n == nodes[here] && probes[l].N > 0 && try(uint32(l), probes[l]) == nil {
			mapped[l] = 1
		}
	}
	return mapped
}

// Enable turns lending on towards the localities that mapped this one's
// probe (mappers, by locality), when there is one; it runs before this
// locality leaves the start barrier.
func (s *Shared) Enable(here uint32, mappers []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mappers = make([]bool, len(mappers))
	for l, m := range mappers {
		if uint32(l) != here && m == 1 && shm.Supported {
			s.mappers[l], s.on = true, true
		}
	}
}

// LendsTo tells whether this locality lends to locality l: l mapped its
// probe.
func (s *Shared) LendsTo(l uint32) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.on && int(l) < len(s.mappers) && s.mappers[l]
}

// Alloc returns an own segment of n float64s, with the owner's reference:
// zeroed, or with zero false a reused segment as its last user left it;
// nil when lending is off or the system has no segments.
func (s *Shared) Alloc(n int, zero bool) []float64 {
	s.mu.Lock()
	if !s.on {
		s.mu.Unlock()
		return nil
	}
	seg := s.reusable(n)
	s.mu.Unlock()
	if seg != nil {
		if zero {
			clear(seg.Data)
		}
		return seg.Data
	}
	seg, err := shm.New(n)
	if err != nil {
		return nil
	}
	s.mu.Lock()
	if s.own == nil {
		s.own = make(map[*float64]*shm.Segment)
	}
	s.own[&seg.Data[0]] = seg
	s.mu.Unlock()
	return seg.Data
}

// reusable takes a free own segment of n float64s, or a lent one whose
// borrowers have all given it back, and gives it the owner's reference;
// s.mu is held.
func (s *Shared) reusable(n int) *shm.Segment {
	if list := s.free[n]; len(list) > 0 {
		seg := list[len(list)-1]
		s.free[n] = list[:len(list)-1]
		s.held -= 8 * n
		seg.Hold()
		return seg
	}
	for i, seg := range s.lent {
		if len(seg.Data) == n && seg.Refs() == 0 {
			s.lent = append(s.lent[:i], s.lent[i+1:]...)
			seg.Hold()
			return seg
		}
	}
	return nil
}

// Give takes back b when it is a segment — this locality's (dropping the
// owner's reference) or a borrowed one (dropping this locality's) — and
// tells whether it was. With poisoned, an own segment nobody holds any
// more is filled with NaN (Config.PoisonReleased).
func (s *Shared) Give(b []float64, poisoned bool) bool {
	if 8*len(b) < hugepage.MinBytes {
		return false // no segment is this small (sharedFloat64s)
	}
	p := unsafe.SliceData(b)
	s.mu.Lock()
	defer s.mu.Unlock()
	if seg := s.own[p]; seg != nil {
		if seg.Drop() > 0 {
			s.lent = append(s.lent, seg)
			return true
		}
		if poisoned {
			Poison(seg.Data)
		}
		n := len(seg.Data)
		if s.held+8*n > s.limit {
			delete(s.own, p)
			seg.Close()
			return true
		}
		if s.free == nil {
			s.free = make(map[int][]*shm.Segment)
		}
		s.free[n] = append(s.free[n], seg)
		s.held += 8 * n
		return true
	}
	if bs := s.at[p]; bs != nil {
		// Mapped read-only: never the recycler's, even given back twice.
		if bs.refs > 0 {
			bs.refs--
			bs.seg.Drop()
			if bs.refs == 0 {
				s.idle += 8 * len(bs.seg.Data)
				s.evict()
			}
		}
		return true
	}
	return false
}

// segmentOf returns the segment mapped here whose elements start at p —
// this locality's, or a borrowed one — and whether this locality holds a
// reference to it; s.mu is held.
func (s *Shared) segmentOf(p *float64) (seg *shm.Segment, held bool) {
	if seg := s.own[p]; seg != nil {
		return seg, true
	}
	if bs := s.at[p]; bs != nil {
		return bs.seg, bs.refs > 0
	}
	return nil, false
}

// Lend adds a reference to the segment that is exactly v, for a value
// lent to another locality, and returns its Desc; ok is false when v is
// not a whole segment.
func (s *Shared) Lend(v []float64) (d shm.Desc, ok bool) {
	if 8*len(v) < hugepage.MinBytes {
		return d, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	seg, held := s.segmentOf(unsafe.SliceData(v))
	if !held || len(seg.Data) != len(v) {
		return d, false
	}
	seg.Hold()
	return seg.Desc(), true
}

// Sent counts the value lend took a reference for as lent, or, when it
// could not be sent (err), drops that reference again.
func (s *Shared) Sent(v []float64, err error) {
	if err == nil {
		s.lentBytes.Add(uint64(8 * len(v)))
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// Still mapped, even if v was recycled meanwhile: a mapping goes only
	// under s.mu.
	if seg, _ := s.segmentOf(unsafe.SliceData(v)); seg != nil {
		seg.Drop()
	}
}

// Borrow maps the segment d names, lent to this locality by locality
// from, and returns its elements; the reference that came with d is now
// this locality's.
func (s *Shared) Borrow(from uint32, d shm.Desc) ([]float64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	bs := s.peers[d]
	if bs == nil {
		seg, err := shm.Map(d)
		if err != nil {
			return nil, fmt.Errorf("locality %d lent memory that this locality cannot map: %w", from, err)
		}
		if s.peers == nil {
			s.peers, s.at = make(map[shm.Desc]*borrowedSeg), make(map[*float64]*borrowedSeg)
		}
		bs = &borrowedSeg{seg: seg}
		s.peers[d], s.at[&seg.Data[0]] = bs, bs
	} else if bs.refs == 0 {
		s.idle -= 8 * len(bs.seg.Data)
	}
	bs.refs++
	s.borrowedBytes.Add(uint64(8 * len(bs.seg.Data)))
	return bs.seg.Data, nil
}

// evict unmaps mappings this locality holds no reference to while they
// take more than limit bytes; s.mu is held.
func (s *Shared) evict() {
	for d, bs := range s.peers {
		if s.idle <= s.limit {
			return
		}
		if bs.refs == 0 {
			s.unmap(d, bs)
		}
	}
}

// unmap forgets a mapping this locality holds no reference to; s.mu is
// held.
func (s *Shared) unmap(d shm.Desc, bs *borrowedSeg) {
	delete(s.peers, d)
	delete(s.at, &bs.seg.Data[0])
	s.idle -= 8 * len(bs.seg.Data)
	bs.seg.Close()
}

// Close unmaps what nobody uses when the locality ends: the free own
// segments and the mappings this locality holds no reference to. Memory
// still in use (a tile of an array not released, a value lent and not
// given back) stays mapped until the process ends.
func (s *Shared) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for n, list := range s.free {
		for _, seg := range list {
			delete(s.own, &seg.Data[0])
			seg.Close()
		}
		delete(s.free, n)
	}
	s.held = 0
	lent := s.lent[:0]
	for _, seg := range s.lent {
		if seg.Refs() == 0 {
			delete(s.own, &seg.Data[0])
			seg.Close()
			continue
		}
		lent = append(lent, seg)
	}
	s.lent = lent
	for d, bs := range s.peers {
		if bs.refs == 0 {
			s.unmap(d, bs)
		}
	}
	s.on = false
}

// SetLimit sets the bytes of free segments and idle mappings kept for
// reuse (the runtime's Config.RecycleBytes).
func (s *Shared) SetLimit(n int) { s.limit = n }

// Traffic returns the bytes lent to other localities and borrowed from
// them so far.
func (s *Shared) Traffic() (lent, borrowed uint64) {
	return s.lentBytes.Load(), s.borrowedBytes.Load()
}

// Mappings returns how many other localities' segments are mapped here,
// and the bytes of those this locality holds no reference to (idle).
func (s *Shared) Mappings() (n, idleBytes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.peers), s.idle
}
