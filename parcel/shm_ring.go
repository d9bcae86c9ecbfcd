package parcel

import (
	"encoding/binary"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/tessera-amt/tessera/internal/shm"
)

// The shared-memory segment of a pair of localities: one memory file
// (shm.Region) holding two rings, one per direction, each with a single
// writer and a single reader. The rings carry the same frames as a TCP
// connection (see "Wire format"), as a byte stream: the reader feeds
// what it takes out of its ring to the one frame decoder, so a ring entry
// is checked exactly as a frame off a socket is, and a chunk is copied
// out of the ring straight into its Handler.Buffer memory.
//
//	page 0   segment header: magic, version, ring size, the token
//	page 1   control of ring 0 (dialer -> acceptor)
//	page 2   control of ring 1 (acceptor -> dialer)
//	         data of ring 0, ringBytes
//	         data of ring 1, ringBytes
//
// A ring's control holds its head (bytes written, moved by the writer),
// its tail (bytes read, moved by the reader), each on a cache line of its
// own, and two futex words with their sleeper flags: the reader sleeps on
// dataSeq when the ring is empty, the writer on spaceSeq when it is full.
// Positions only grow (64 bits do not wrap); a byte's place in the data is
// its position modulo the ring size, a power of two.
//
// Nothing the other process writes into the segment is trusted: a
// position that would put more bytes in the ring than it holds is an
// error (errRingCorrupt), never a read outside it; the frames themselves
// go through the frame decoder's checks.
const (
	ringMagic      uint64 = 0x314d485341525354 // "TSRASHM1"
	ringVersion    uint32 = 1
	ringPage              = 4096
	ringHeadBytes         = 3 * ringPage
	ringTokenLen          = 32
	minRingBytes          = 64 << 10
	maxRingBytes          = 1 << 30
	ringSleepLimit        = time.Second // longest futex sleep; a wake-up ends it sooner

	// A spinning ring waiter that does not poll lets the process's
	// goroutines run every 4*ringGoschedEvery looks (the progress loop
	// every ringGoschedEvery; a polling waiter: ringPollGoschedEvery),
	// and the machine's threads every ringYieldEvery; a
	// sched_yield that took ringYieldTaken or more ends the spin (the
	// TCP spinner's figures).
	ringGoschedEvery = 4
	ringYieldEvery   = 4
	ringYieldTaken   = 20 * time.Microsecond

	// A waiter with a yieldPace (a ring's reader) offers the core less
	// often while its sched_yields come back at once, which says no other
	// thread wanted the core: every ringYieldEvery looks at first, twice
	// as seldom after each quick yield, up to every ringYieldEveryMax; a
	// yield that took ringYieldGave or more starts again from the
	// beginning. On a machine with a core per locality the reader then
	// looks at its ring instead of sitting in a system call when the
	// message comes.
	ringYieldEveryMax = 256
	ringYieldGave     = 5 * time.Microsecond

	// A spinning waiter looks at its stop condition (channels closed when
	// the peer or the port goes: a select each) every ringStopEvery
	// looks, at its ring at every look, and at the clock every
	// ringClockEvery looks.
	ringStopEvery  = 16
	ringClockEvery = 32

	// A polling waiter (the port's readers in poll mode) spins on for as
	// long as the port polls, and a look at its ring costs a few
	// nanoseconds where a Gosched costs about 150 and a look at the clock
	// over 100 on some machines (a virtual machine's): it lets the
	// process's goroutines run every ringPollGoschedEvery looks, looks at
	// the clock every ringPollClockEvery (the port's PollFor is a
	// millisecond), and, while its yields come back at once, yields as
	// seldom as every ringPollYieldEveryMax looks, about twice as far
	// apart in time as with a Gosched every four looks; while they give
	// the core away it yields as often as a blocking waiter. A goroutine
	// a delivered parcel readies runs at once all the same (the reader
	// lets it after each batch), and a task that polls the rings itself
	// gets the processor at the next look (ringWait.polls). Spinning with
	// a Gosched every four looks, the reader spent most of its time in
	// them, and a message that came then waited for one to end.
	ringPollGoschedEvery  = 256
	ringPollClockEvery    = 1024
	ringPollYieldEveryMax = 16 * ringYieldEveryMax
)

// yieldPace is how often a spinning ring waiter calls sched_yield,
// adapted to what the yields showed (see ringYieldEveryMax): every least
// looks at most often (ringYieldEvery when 0), every most looks at least
// often (ringYieldEveryMax when 0). It lives as long as its waiter,
// across waits.
type yieldPace struct{ every, least, most int }

func (y *yieldPace) floor() int {
	if y != nil && y.least > 0 {
		return y.least
	}
	return ringYieldEvery
}

func (y *yieldPace) ceil() int {
	if y != nil && y.most > 0 {
		return y.most
	}
	return ringYieldEveryMax
}

// period is how many looks apart the waiter yields now.
func (y *yieldPace) period() int {
	e := y.floor()
	if y != nil && y.every > e {
		e = y.every
	}
	return e
}

// due reports whether the waiter yields at its look i. A waiter that looks
// every few nanoseconds counts down period instead: a division at every
// look took a fifth of a polling reader's spin.
func (y *yieldPace) due(i int) bool {
	e := y.period()
	return i%e == e-1
}

// took adapts the pace to a yield that took d.
func (y *yieldPace) took(d time.Duration) {
	switch {
	case y == nil:
	case d >= ringYieldGave:
		y.every = y.floor()
	case y.every < y.ceil():
		y.every = min(max(2*y.every, 2*y.floor()), y.ceil())
	}
}

// ringCtl is the control page of one ring, in shared memory.
type ringCtl struct {
	head         atomic.Uint64
	_            [120]byte
	tail         atomic.Uint64
	_            [120]byte
	dataSeq      atomic.Uint32 // the reader's futex word
	readerSleeps atomic.Uint32 // 1 while the reader sleeps (or is about to)
	_            [120]byte
	spaceSeq     atomic.Uint32 // the writer's futex word
	writerSleeps atomic.Uint32
	_            [120]byte
	byeSeen      atomic.Uint32 // set by the reader once it has delivered everything before the writer's goodbye
}

// ringSegment is one process's mapping of a pair's segment.
type ringSegment struct {
	reg   *shm.Region
	size  uint64 // bytes of each ring's data
	rings [2]ring
}

// segmentBytes is the size of the file of a segment with rings of n bytes.
func segmentBytes(n uint64) int64 { return ringHeadBytes + 2*int64(n) }

// validRingBytes reports whether n is a size of ring this build accepts.
func validRingBytes(n uint64) bool {
	return n >= minRingBytes && n <= maxRingBytes && n&(n-1) == 0
}

// newRingSegment creates a segment with rings of n bytes and token
// written into its header.
func newRingSegment(n uint64, token []byte) (*ringSegment, error) {
	if !validRingBytes(n) {
		return nil, fmt.Errorf("ring of %d bytes: want a power of two from %d to %d", n, minRingBytes, maxRingBytes)
	}
	reg, err := shm.NewRegion(int(segmentBytes(n)))
	if err != nil {
		return nil, err
	}
	m := reg.Mem
	binary.LittleEndian.PutUint64(m, ringMagic)
	binary.LittleEndian.PutUint32(m[8:], ringVersion)
	binary.LittleEndian.PutUint64(m[16:], n)
	copy(m[24:24+ringTokenLen], token)
	return bindSegment(reg, n), nil
}

// mapRingSegment maps the segment of a peer's offer and checks its
// header: magic, version, ring size, and that it holds the token the
// offer carried.
func mapRingSegment(o *shmOffer) (*ringSegment, error) {
	if !validRingBytes(o.ringBytes) {
		return nil, fmt.Errorf("segment with rings of %d bytes refused: want a power of two from %d to %d", o.ringBytes, minRingBytes, maxRingBytes)
	}
	reg, err := shm.MapRegion(o.pid, o.fd, o.ino, segmentBytes(o.ringBytes))
	if err != nil {
		return nil, err
	}
	m := reg.Mem
	switch {
	case binary.LittleEndian.Uint64(m) != ringMagic:
		err = fmt.Errorf("%v: not a ring segment (magic %#x)", reg, binary.LittleEndian.Uint64(m))
	case binary.LittleEndian.Uint32(m[8:]) != ringVersion:
		err = fmt.Errorf("%v: ring segment version %d, this build speaks %d", reg, binary.LittleEndian.Uint32(m[8:]), ringVersion)
	case binary.LittleEndian.Uint64(m[16:]) != o.ringBytes:
		err = fmt.Errorf("%v: rings of %d bytes, the offer says %d", reg, binary.LittleEndian.Uint64(m[16:]), o.ringBytes)
	case !constantTimeEqual(m[24:24+ringTokenLen], o.token[:]):
		err = fmt.Errorf("%v: %w", reg, errTokenMismatch)
	}
	if err != nil {
		reg.Close()
		return nil, err
	}
	return bindSegment(reg, o.ringBytes), nil
}

func constantTimeEqual(a, b []byte) bool {
	var d byte
	for i := range a {
		d |= a[i] ^ b[i]
	}
	return len(a) == len(b) && d == 0
}

// bindSegment lays the rings out over reg.
func bindSegment(reg *shm.Region, n uint64) *ringSegment {
	s := &ringSegment{reg: reg, size: n}
	for i := range s.rings {
		ctl := (*ringCtl)(unsafe.Pointer(&reg.Mem[ringPage*(1+i)]))
		start := ringHeadBytes + uint64(i)*n
		s.rings[i] = ring{ctl: ctl, data: reg.Mem[start : start+n : start+n], size: n}
	}
	return s
}

// close unmaps the segment; its rings must not be used afterwards.
func (s *ringSegment) close() error { return s.reg.Close() }

// ring is one process's end of one ring: the writer's or the reader's.
// pos is the writer's head (written, perhaps not yet published) or the
// reader's tail; pub is the head the writer last published; seen is the
// reader's tail as the writer last loaded it (see writable).
type ring struct {
	ctl  *ringCtl
	data []byte
	size uint64
	pos  uint64
	pub  uint64
	seen uint64
}

// errRingCorrupt: the other side's position is impossible.
type errRingCorrupt struct {
	what       string
	head, tail uint64
	size       uint64
}

func (e *errRingCorrupt) Error() string {
	return fmt.Sprintf("shared-memory ring corrupt: %s (head %d, tail %d, ring of %d bytes)", e.what, e.head, e.tail, e.size)
}

// writable returns how many bytes the writer may add now: as many as
// were free when it last loaded the reader's tail, as long as that leaves
// more than a quarter of the ring; else it loads the tail again. The tail
// lives on a cache line the reader writes after every read: loading it
// for every message would move that line from the reader's core to the
// writer's, a transfer between cores on the path of every message, where
// a writer of small messages now loads it once per three quarters of a
// ring.
func (r *ring) writable() (uint64, error) {
	if used := r.pos - r.seen; used < r.size-r.size/4 {
		return r.size - used, nil
	}
	tail := r.ctl.tail.Load()
	used := r.pos - tail
	if used > r.size {
		return 0, &errRingCorrupt{"the reader's tail is outside the ring", r.pos, tail, r.size}
	}
	r.seen = tail
	return r.size - used, nil
}

// put copies as much of b as fits contiguously in free bytes of room
// (from writable) and returns how much it copied; publish makes it
// visible.
func (r *ring) put(b []byte, free uint64) int {
	off := r.pos & (r.size - 1)
	n := min(uint64(len(b)), free, r.size-off)
	copy(r.data[off:off+n], b)
	r.pos += n
	return int(n)
}

// putFrame writes the frame of h and chunks into the ring at once, its
// header encoded in place, when the whole frame is at most limit bytes
// and fits, contiguous, in the room the writer knows of (writable); it
// returns the frame's length, or 0 when the frame does not fit so and
// the caller writes it piece by piece (put). publish makes it visible.
// h must be one checkSend passed. A small parcel so costs no copy of its
// header through a buffer and no loop over its pieces.
func (r *ring) putFrame(h *Header, chunks [][]byte, limit int) (int, error) {
	body := 0
	for _, c := range chunks {
		body += len(c)
	}
	need := FrameHeadLen + headerMax(h, len(chunks)) + body
	if need > limit {
		return 0, nil
	}
	free, err := r.writable()
	if err != nil {
		return 0, err
	}
	off := r.pos & (r.size - 1)
	if uint64(need) > free || uint64(need) > r.size-off {
		return 0, nil
	}
	w := r.data[off : off+uint64(need) : off+uint64(need)]
	hlen := len(appendHeader(w[FrameHeadLen:FrameHeadLen], h, chunks)) // in place: w has the room
	binary.LittleEndian.PutUint64(w, uint64(body+hlen))
	binary.LittleEndian.PutUint32(w[8:], uint32(hlen))
	n := FrameHeadLen + hlen
	for _, c := range chunks {
		n += copy(w[n:], c)
	}
	r.pos += uint64(n)
	return n, nil
}

// publish makes what the writer put visible to the reader and reports
// whether the reader sleeps, for the caller to wake it (the SHM port rings
// its doorbell: shmPeer.publish). The head is stored before the sleeper
// flag is read, and the reader raises its flag before it looks at the head
// (both sequentially consistent), so either the reader sees the head or
// the writer sees the flag: no wake-up is lost.
func (r *ring) publish() (sleeps bool) {
	if r.pos == r.pub {
		return false
	}
	r.ctl.head.Store(r.pos)
	r.pub = r.pos
	return r.ctl.readerSleeps.Load() != 0
}

// readable returns how many bytes wait for the reader.
func (r *ring) readable() (uint64, error) {
	head := r.ctl.head.Load()
	n := head - r.pos
	if n > r.size {
		return 0, &errRingCorrupt{"the writer's head is outside the ring", head, r.pos, r.size}
	}
	return n, nil
}

// pending reports whether the writer published bytes the reader has not
// taken (or the positions are impossible, for readable to say): from the
// positions in the control, so that anyone may ask while the reader
// reads.
func (r *ring) pending() bool { return r.ctl.head.Load() != r.ctl.tail.Load() }

// get copies up to avail bytes (from readable) into b, as many as lie
// contiguously in the ring, frees them for the writer and wakes the
// writer if it sleeps; it returns how many it copied.
func (r *ring) get(b []byte, avail uint64) int {
	off := r.pos & (r.size - 1)
	n := min(uint64(len(b)), avail, r.size-off)
	copy(b, r.data[off:off+n])
	r.pos += n
	r.ctl.tail.Store(r.pos)
	if r.ctl.writerSleeps.Load() != 0 {
		r.ctl.spaceSeq.Add(1)
		shm.FutexWake(&r.ctl.spaceSeq, 1)
	}
	return int(n)
}

// wakeReader and wakeWriter wake this process's sleeper on the ring, so
// that it looks at its stop condition.
func (r *ring) wakeReader() {
	r.ctl.dataSeq.Add(1)
	shm.FutexWake(&r.ctl.dataSeq, 1)
}

func (r *ring) wakeWriter() {
	r.ctl.spaceSeq.Add(1)
	shm.FutexWake(&r.ctl.spaceSeq, 1)
}

// ringWait is how a ring's reader or writer waits: it spins for spin,
// letting the process's other goroutines run every few looks (more often
// when poll, the progress mode's polling) and the machine's other threads
// too (sched_yield), then sleeps until woken: in park when it is set (a
// reader: on its doorbell, in Go's scheduler), else on the futex. It stops
// spinning early when a sched_yield shows that another thread wanted the
// core (ringYieldTaken), as the TCP spinner does. polling, if not nil,
// counts the waiters spinning now.
//
// Why a reader does not sleep on the futex: a futex sleep is a system call
// that keeps the thread's processor (P) until the scheduler's monitor
// takes it back, 20 µs to 10 ms later. With one processor per locality
// (GOMAXPROCS=1, as tessera run sets with more localities than cores),
// every goroutine the process readies meanwhile waits for that: an
// AllReduce of 4 localities on 2 cores took 850-900 µs blocking so, and
// 160 µs with GOMAXPROCS=2.
type ringWait struct {
	spin    time.Duration
	poll    bool
	polling *atomic.Int32
	park    func()     // a reader's sleep until its doorbell rings or it should stop
	pace    *yieldPace // how often to sched_yield; nil: every ringYieldEvery looks
	// polls, if not nil, counts the port's Polls: while it moves between
	// looks a task reads the rings itself, and the waiter gives it the
	// processor at once rather than after ringPollGoschedEvery looks.
	polls *atomic.Uint64
}

// wait returns once ready or stop reports true. seq and sleeps are the
// futex word and sleeper flag of the waiting side. The flag is raised
// before ready is looked at a last time (see publish).
func (w ringWait) wait(seq, sleeps *atomic.Uint32, ready, stop func() bool) {
	if ready() || stop() {
		return
	}
	if w.spin > 0 {
		if w.polling != nil {
			w.polling.Add(1)
		}
		var start time.Time
		var polls uint64
		// Masks, not moduli: the counts are powers of two, and a division
		// at every look would cost more than the look.
		gosched, clock := uint(4*ringGoschedEvery-1), uint(ringClockEvery-1)
		if w.poll {
			gosched, clock = ringPollGoschedEvery-1, ringPollClockEvery-1
			if w.pace != nil && w.pace.most == 0 {
				w.pace.most = ringPollYieldEveryMax // the pace lives across waits: set once
			}
		}
		yieldIn := w.pace.period()
		for i := uint(1); ; i++ {
			if w.polls != nil {
				// Before the look at the ring: a task that polls takes
				// what comes itself.
				if n := w.polls.Load(); n != polls {
					polls = n
					goruntime.Gosched()
					continue
				}
			}
			if ready() || (i%ringStopEvery == 0 && stop()) {
				if w.polling != nil {
					w.polling.Add(-1)
				}
				return
			}
			if i&gosched == 0 {
				goruntime.Gosched()
			}
			if yieldIn--; yieldIn <= 0 {
				// As the TCP spinner: a sched_yield that gave the core
				// away for long means the cores are shared, and spinning
				// on would take one from the process the ring waits for.
				t0 := time.Now()
				ringYield()
				took := time.Since(t0)
				w.pace.took(took)
				yieldIn = w.pace.period()
				if took >= ringYieldTaken {
					break
				}
			}
			if i&clock == 0 {
				now := time.Now()
				if start.IsZero() {
					start = now
				} else if now.Sub(start) >= w.spin {
					break
				}
			}
		}
		if w.polling != nil {
			w.polling.Add(-1)
		}
	}
	for {
		v := seq.Load()
		sleeps.Store(1)
		if ready() || stop() {
			sleeps.Store(0)
			return
		}
		if w.park != nil {
			w.park()
		} else {
			shm.FutexWait(seq, v, ringSleepLimit)
		}
		sleeps.Store(0)
		if ready() || stop() {
			return
		}
	}
}
