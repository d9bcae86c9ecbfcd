//go:build unix

package parcel

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"
)

// spinner is the poll progress mode of a TCP reader (TCPConfig.PollFor):
// when the socket has nothing to read, the reader tries to read it again
// and again (a probe: a non-blocking read, whose bytes, once some come, are
// the reader's next read — asking with ppoll(2) first cost a second system
// call per message, 4% of the round trip), letting the other goroutines of the process run
// between tries (runtime.Gosched) and, every yieldEvery tries, the other
// processes of the machine (sched_yield, where the system has it). Data that
// arrives is then read at once instead of after the poller's wake-up, which
// on a machine whose idle cores sleep costs tens of microseconds. While it
// spins, the reader keeps a core busy.
//
// It gives up — and the reader blocks in the network poller until data
// comes — once PollFor has passed without data, and as soon as a
// sched_yield gave the core to another thread for yieldTaken or more: then
// the cores are shared (more localities than cores, or other work), and
// spinning on would take a core from a process whose work the message may
// depend on.
//
// That is a port's only reader. When a port has several, a reader does
// not spin itself: it parks in the port's progress loop (progress), one
// goroutine that waits for them all. Readers that each spin keep the
// process's goroutines runnable, and Go's scheduler looks at its network
// poller — where the readers that gave up wait — only when it has nothing
// else to run, so they starve one another: an AllReduce of 4 localities on
// 2 cores took 500-800 µs so, 110-140 µs when the readers of a port
// stopped spinning for 10 ms after one found the cores shared (70-84 µs
// on another day), and 34-39 µs with the progress loop (59-64 µs
// blocking, Open MPI 24-34 µs, in 4 alternating rounds).
type spinner struct {
	window time.Duration
	port   *spinners
	parked parking // this reader's wait in the port's progress loop
}

// spinners is what the spinning readers of a port share.
type spinners struct {
	polling atomic.Int32 // readers spinning now, and the progress loop
	readers atomic.Int32 // readers that spin when they wait (readRaw)

	// The progress loop (progress) spins for the readers parked in it.
	mu       sync.Mutex
	parked   []*parking
	stopped  bool          // the loop ended: readers block
	blocking *epollSet     // the loop blocks in it: a reader that parks arms itself
	kick     chan struct{} // a reader parked (the loop exists when it is not nil)
}

// parking is a reader waiting in the progress loop for its descriptor to
// have something to read.
type parking struct {
	fd   int
	quit func(now time.Time) bool
	wake chan bool // true: read again; false: block in the network poller
}

// newSpinner returns the spinner of a reader of port that polls for
// window, or nil for one that blocks (window <= 0).
func newSpinner(window time.Duration, port *spinners) *spinner {
	if window <= 0 {
		return nil
	}
	return &spinner{window: window, port: port}
}

// wait waits for descriptor fd, which had nothing to read, to have
// something: by spinning on probe itself (await) when this is the port's
// only reader, in the port's progress loop (park) when it has several;
// false means the reader should block in the network poller instead.
func (s *spinner) wait(fd int, probe func() bool, quit func(now time.Time) bool) bool {
	shared := func() bool { return s.port.kick != nil && s.port.readers.Load() > 1 }
	if shared() {
		return s.park(fd, quit)
	}
	if s.await(probe, quit) {
		return true
	}
	// The port may have gained readers while this one spun alone; then
	// its loop spins, and Go's scheduler would not look at the network
	// poller while it does. (A reader that went to the poller before the
	// port had other readers waits there until its next message, which
	// the scheduler finds at the latest when its monitor thread looks, every
	// 10 ms.)
	if shared() {
		return s.park(fd, quit)
	}
	return false
}

// park hands the wait to the port's progress loop and returns what the
// loop says: true when fd has something to read (or its end), false when
// the reader should block in the network poller (quit said so, the port
// closed, or the loop could not open its epoll set).
func (s *spinner) park(fd int, quit func(now time.Time) bool) bool {
	pk, sp := &s.parked, s.port
	if pk.wake == nil {
		pk.wake = make(chan bool, 1)
	}
	pk.fd, pk.quit = fd, quit
	sp.mu.Lock()
	if sp.stopped {
		sp.mu.Unlock()
		return false
	}
	sp.parked = append(sp.parked, pk)
	ep := sp.blocking
	sp.mu.Unlock()
	if ep != nil {
		ep.arm(fd)
	}
	select {
	case sp.kick <- struct{}{}:
	default: // a kick is pending already
	}
	return <-pk.wake
}

// unpark wakes pk with v, unless it is no longer parked.
func (sp *spinners) unpark(pk *parking, v bool) {
	sp.mu.Lock()
	i := -1
	for j, q := range sp.parked {
		if q == pk {
			i = j
			break
		}
	}
	if i >= 0 {
		last := len(sp.parked) - 1
		sp.parked[i] = sp.parked[last]
		sp.parked[last] = nil
		sp.parked = sp.parked[:last]
	}
	sp.mu.Unlock()
	if i >= 0 {
		pk.wake <- v
	}
}

// unparkAll wakes every parked reader with false; with stop, later
// readers do not park either.
func (sp *spinners) unparkAll(stop bool) {
	sp.mu.Lock()
	list := sp.parked
	sp.parked = nil
	sp.stopped = sp.stopped || stop
	sp.mu.Unlock()
	for _, pk := range list {
		pk.wake <- false
	}
}

// progress is the progress loop of a port in the poll mode, until stop
// is closed: one goroutine that waits for every parked reader, as an MPI
// library's progress engine polls all its connections from one loop.
// While it spins it peeks at each parked reader's descriptor (a one-byte
// recv with MSG_PEEK, which leaves the bytes to the reader) and wakes the
// readers whose sockets have something; between rounds it lets the
// process's goroutines run (runtime.Gosched: a woken reader runs on this
// processor without waking another thread) and offers the core to the
// machine's other processes (sched_yield). Unlike a reader spinning alone
// it does not give up when the cores are shared: with one spinner per
// process and a yield in every round, the processes of a job take turns
// on the cores, and a message is picked up at the next turn instead of
// after a sleeping core's wake-up (an AllReduce of one double, 4
// processes of plain Go on 2 cores: 19-20 µs polling so, 43-63 µs
// blocking). Once window has passed without anything to read it blocks
// instead, in an epoll set of its own that holds the parked readers
// (block): the readers never wait in Go's network poller, which the Go
// scheduler consults only when it has nothing else to run — never while
// this loop spins.
func (sp *spinners) progress(window time.Duration, stop <-chan struct{}) {
	var list []*parking
	var b [1]byte
	ep := &epollSet{fd: -1}
	defer ep.close()
	for {
		select {
		case <-stop:
			sp.unparkAll(true)
			return
		case <-sp.kick:
		}
		sp.polling.Add(1)
		last := time.Now()
		for try := 1; ; try++ {
			sp.mu.Lock()
			list = append(list[:0], sp.parked...)
			sp.mu.Unlock()
			if len(list) == 0 {
				break
			}
			found := false
			for _, pk := range list {
				_, _, e := syscall.RawSyscall6(syscall.SYS_RECVFROM, uintptr(pk.fd), uintptr(unsafe.Pointer(&b[0])), 1,
					syscall.MSG_PEEK|syscall.MSG_DONTWAIT, 0, 0)
				if e == syscall.EAGAIN || e == syscall.EINTR {
					continue
				}
				// Bytes, the end of the stream or an error: the
				// reader's read tells which.
				sp.unpark(pk, true)
				found = true
			}
			if found {
				last = time.Now()
				goruntime.Gosched()
				continue
			}
			if try%16 == 0 {
				now := time.Now()
				sp.quit(list, now)
				select {
				case <-stop:
					sp.polling.Add(-1)
					sp.unparkAll(true)
					return
				default:
				}
				if now.Sub(last) >= window {
					sp.polling.Add(-1)
					if sp.block(ep, stop) {
						return
					}
					sp.polling.Add(1)
					last = time.Now()
					continue
				}
			}
			goruntime.Gosched()
			osYield()
		}
		sp.polling.Add(-1)
	}
}

// quit wakes the readers of list whose quit says so, to block in the
// network poller: their peer went silent or their connection is closing,
// which the poller reports.
func (sp *spinners) quit(list []*parking, now time.Time) {
	for _, pk := range list {
		if pk.quit(now) {
			sp.unpark(pk, false)
		}
	}
}

// blockSlice is how long the progress loop blocks at a time before it
// looks at stop and at the readers' quit.
const blockSlice = 10 // milliseconds

// block waits, without spinning, until a parked reader's socket has
// something (it wakes those readers and returns false) or no reader is
// parked any more (false), or stop is closed (it wakes every reader and
// returns true). Readers that park meanwhile arm themselves (park).
func (sp *spinners) block(ep *epollSet, stop <-chan struct{}) bool {
	if !ep.open() {
		// No epoll set: hand the readers to the network poller.
		sp.unparkAll(false)
		return false
	}
	sp.mu.Lock()
	sp.blocking = ep
	list := append([]*parking(nil), sp.parked...)
	sp.mu.Unlock()
	defer func() {
		sp.mu.Lock()
		sp.blocking = nil
		sp.mu.Unlock()
	}()
	for _, pk := range list {
		ep.arm(pk.fd)
	}
	// Whatever is runnable runs before this goroutine takes its thread
	// into a blocking system call.
	goruntime.Gosched()
	var fds []int
	for {
		var err error
		fds, err = ep.wait(blockSlice, fds[:0])
		if err != nil {
			sp.unparkAll(false)
			return false
		}
		if len(fds) > 0 {
			sp.mu.Lock()
			var ready []*parking
			for _, fd := range fds {
				for _, pk := range sp.parked {
					if pk.fd == fd {
						ready = append(ready, pk)
					}
				}
			}
			sp.mu.Unlock()
			for _, pk := range ready {
				sp.unpark(pk, true)
			}
			if len(ready) > 0 {
				return false
			}
			continue // events of readers that are reading already
		}
		select {
		case <-stop:
			sp.unparkAll(true)
			return true
		default:
		}
		sp.mu.Lock()
		list = append(list[:0], sp.parked...)
		sp.mu.Unlock()
		if len(list) == 0 {
			return false
		}
		sp.quit(list, time.Now())
	}
}

// await spins until probe, a non-blocking read, reports that it read
// something (or failed otherwise than finding nothing), and reports
// whether it did; false means the reader should block instead. It also
// gives up when quit says so (asked now and then with the time): when the
// peer went silent or the connection is closing, which the poller then
// reports.
func (s *spinner) await(probe func() bool, quit func(now time.Time) bool) bool {
	s.port.polling.Add(1)
	defer s.port.polling.Add(-1)
	var start time.Time
	for try := 0; ; try++ {
		if try%goschedEvery == 0 {
			// First of all: what the reader just delivered may have
			// readied a goroutine (a reply's waiter, a call's task).
			goruntime.Gosched()
		}
		if probe() {
			return true
		}
		// Look at the clock now and then only.
		if try%16 == 0 {
			now := time.Now()
			if start.IsZero() {
				start = now
			} else if now.Sub(start) >= s.window || quit(now) {
				return false // silent for long, or done: block
			}
		}
		if try%yieldEvery == yieldEvery-1 {
			t0 := time.Now()
			osYield()
			if now := time.Now(); now.Sub(t0) >= yieldTaken {
				// Another thread had this core meanwhile: the cores are
				// shared, and spinning on takes them from work that the
				// message awaited may depend on.
				return false
			}
		}
	}
}

// yieldEvery is how many tries the spinner makes per sched_yield.
const yieldEvery = 4

// goschedEvery is how many tries the spinner makes per runtime.Gosched,
// which lets the process's other goroutines run: a Gosched takes the
// scheduler's lock twice, a try is one read.
const goschedEvery = 4

// yieldTaken is how long a sched_yield must take for the spinner to
// conclude that another thread wanted its core.
const yieldTaken = 20 * time.Microsecond
