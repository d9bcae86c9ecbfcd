package parcel

import (
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"
)

// The SHM port's progress loop: one goroutine that spins for all of a
// port's ring readers when it has several, as the tcp port's progress
// loop does for its sockets (tcp_poll_unix.go).
//
// A reader that spins itself is right for a port with one peer on the
// machine: the message is read the moment the peer publishes it. With
// several, readers that each spin keep as many goroutines runnable and
// take the core from the process whose message they wait for (an
// AllReduce of 4 localities on 2 cores, polling: 430-860 µs so, 200-415 µs
// with the loop, on a loaded machine). So a reader of a port with several
// parks here instead: the loop looks at every parked reader's ring in
// turn and hands a ring that has data back to its reader (a channel send;
// the writer, which finds no sleeper flag, rings no doorbell). Polling, it
// lets the process's goroutines run after every look, and the machine's
// threads too while they take the core (a sched_yield that comes back at
// once says none wanted it: the loop then yields more seldom, yieldPace),
// and, as the tcp loop, does not give up when the cores are shared;
// blocking, it spins for SpinFor, not at all when the port's localities
// outnumber the cores, and gives up early when a sched_yield shows that
// another thread wanted the core, as a lone reader does. Once its window
// passed without data it sends the parked readers to sleep on their
// doorbells (ringWait.park), where ring.publish's flag protocol loses no
// wake-up.

// ringPark is a reader waiting in the progress loop.
type ringPark struct {
	in          *ring
	ready, stop func() bool
	wake        chan bool // true: look at the ring again; false: sleep on its futex
}

// ringProgress is a port's progress loop.
type ringProgress struct {
	readers atomic.Int32 // ring readers of the port now; they park when more than one

	mu      sync.Mutex
	parked  []*ringPark
	running bool // the loop goroutine runs
}

// waitShared is a ring reader's wait when the port has several readers:
// parked in the loop, then asleep on its doorbell if the loop sends it
// there; asleep at once when the loop would not spin. It returns once
// pk.ready or pk.stop reports true.
func (s *SHM) waitShared(pk *ringPark, w ringWait) {
	g := &s.progress
	if !w.poll && int(g.readers.Load())+1 > goruntime.NumCPU() {
		// Blocking, with more localities on the machine than cores: a
		// spinning loop would take a core from a locality whose
		// message it waits for.
		w.spin = 0
	}
	if w.spin <= 0 {
		w.wait(&pk.in.ctl.dataSeq, &pk.in.ctl.readerSleeps, pk.ready, pk.stop)
		return
	}
	if pk.ready() || pk.stop() {
		return
	}
	g.mu.Lock()
	g.parked = append(g.parked, pk)
	start := !g.running
	g.running = true
	g.mu.Unlock()
	if start {
		go s.progressLoop(w)
	}
	if <-pk.wake {
		return
	}
	w.spin = 0
	w.wait(&pk.in.ctl.dataSeq, &pk.in.ctl.readerSleeps, pk.ready, pk.stop)
}

// progressLoop waits for the parked readers until none is parked; see the
// top of this file.
func (s *SHM) progressLoop(w ringWait) {
	g := &s.progress
	var look []*ringPark
	if w.polling != nil {
		w.polling.Add(1)
		defer w.polling.Add(-1)
	}
	last := time.Now() // when the loop last found data, or woke
	// Polling, it yields after every look while the yields give the core
	// away, more seldom while they come back at once (yieldPace).
	pace := &yieldPace{least: 1}
	for i := 1; ; i++ {
		g.mu.Lock()
		if len(g.parked) == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}
		look = append(look[:0], g.parked...)
		g.mu.Unlock()
		found := false
		for _, pk := range look {
			if pk.ready() || (i%ringStopEvery == 0 && pk.stop()) {
				found = g.unpark(pk, true) || found
			}
		}
		if found {
			last = time.Now()
			goruntime.Gosched() // the readers it woke run on this processor
			continue
		}
		giveUp := false
		if w.poll {
			goruntime.Gosched()
			if pace.due(i) {
				t0 := time.Now()
				ringYield()
				pace.took(time.Since(t0))
			}
		} else {
			if i%ringGoschedEvery == 0 {
				goruntime.Gosched()
			}
			if i%ringYieldEvery == ringYieldEvery-1 {
				t0 := time.Now()
				ringYield()
				giveUp = giveUp || time.Since(t0) >= ringYieldTaken
			}
		}
		if i%16 == 0 && time.Since(last) >= w.spin {
			giveUp = true
		}
		if giveUp {
			s.sleepParked()
			last = time.Now()
		}
	}
}

// sleepParked sends the parked readers to sleep on their doorbells
// (ringWait.park), without a processor each.
func (s *SHM) sleepParked() {
	g := &s.progress
	g.mu.Lock()
	parked := g.parked
	g.parked = nil
	g.mu.Unlock()
	for _, pk := range parked {
		pk.wake <- false
	}
}

// unpark hands pk its answer if it is still parked; it reports whether
// it was.
func (g *ringProgress) unpark(pk *ringPark, v bool) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	for i, q := range g.parked {
		if q == pk {
			last := len(g.parked) - 1
			g.parked[i] = g.parked[last]
			g.parked[last] = nil
			g.parked = g.parked[:last]
			pk.wake <- v // buffered: one answer per park
			return true
		}
	}
	return false
}
