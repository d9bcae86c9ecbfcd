package runtime

import (
	"context"
	goruntime "runtime"
	"sync"
	"sync/atomic"

	"github.com/tessera-amt/tessera/trace"
)

// scheduler runs tasks on a fixed number of worker lanes. A lane is held by
// exactly one goroutine at a time — a worker running queued tasks, or a task
// that resumed after waiting — or it is free. A task that blocks in Get
// releases its lane and takes one back when its value arrives, so at most
// `lanes` tasks compute at any moment and a waiting task holds none.
//
// Hand-offs are the cost to avoid: a task that waits with nothing else to do
// just frees its lane, and one that resumes while a lane is free takes it
// without waking anyone.
type scheduler struct {
	// Set when the scheduler is made (names: seldom) and read for every
	// task, these fields keep cache lines of their own: the mutex and the
	// counters below are written by every lane, and a line they shared
	// would be taken from the reader's core each time.
	rt       *Runtime        // the locality the tasks belong to
	base     context.Context // the locality's lifetime; tasks run under it
	locality uint32
	lanes    int
	tracer   *trace.Tracer // nil: no tracing
	observer TaskObserver
	// names caches the names of local tasks' functions for observers:
	// FuncForPC costs a search per call. Read without a lock; replaced,
	// under namesMu, by a copy with one more function.
	names atomic.Pointer[map[uintptr]string]
	_     [64]byte

	mu       sync.Mutex
	queue    taskQueue   // tasks waiting for a lane
	resumers []chan int  // blocked tasks whose value arrived, waiting for a lane
	free     []int       // lanes nobody holds
	idle     []chan work // workers without a lane, waiting for one and a task
	parked   *task       // tasks parked on their wake channel (Future.Get), linked
	stopped  bool

	seq      atomic.Uint64
	spawned  atomic.Uint64
	executed atomic.Uint64
	yields   atomic.Uint64
	queued   atomic.Int64 // tasks waiting in queue that nobody claimed, readable without the lock

	// spareOut is the parcel of the last call sent to another locality,
	// emptied, for the next one (asyncInto): a swap costs less than a
	// sync.Pool's Get and Put. Calls sent meanwhile take the pool's.
	spareOut atomic.Pointer[outParcel]
	// lastDirect is the direct action a reader served last, under the
	// name its call carried, looked up without the registry's map while
	// calls keep naming it (direct.go).
	lastDirect atomic.Pointer[directName]

	namesMu sync.Mutex
}

// work is what a parked worker is woken with.
type work struct {
	t    *task
	lane int
}

func newScheduler(base context.Context, locality uint32, lanes int, tr *trace.Tracer, o TaskObserver) *scheduler {
	s := &scheduler{
		base:     base,
		locality: locality,
		lanes:    lanes,
		tracer:   tr,
		observer: o,
	}
	for lane := lanes - 1; lane >= 0; lane-- {
		s.free = append(s.free, lane)
	}
	context.AfterFunc(base, s.wakeParked)
	return s
}

// wakeParked wakes every task parked on its wake channel, once the
// locality has ended: their waits end with its cause.
func (s *scheduler) wakeParked() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for t := s.parked; t != nil; t = t.nextParked {
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// funcName returns the name of the function at pc, looked up once per
// function.
func (s *scheduler) funcName(pc uintptr) string {
	if m := s.names.Load(); m != nil {
		if name, ok := (*m)[pc]; ok {
			return name
		}
	}
	name := ""
	if f := goruntime.FuncForPC(pc); f != nil {
		name = f.Name()
	}
	s.namesMu.Lock()
	defer s.namesMu.Unlock()
	next := map[uintptr]string{pc: name}
	if m := s.names.Load(); m != nil {
		for k, v := range *m {
			next[k] = v
		}
	}
	s.names.Store(&next)
	return name
}

func (s *scheduler) newGUID() uint64 {
	return uint64(s.locality)<<guidSeqBits | s.seq.Add(1)
}

// spawn queues fn as a task named name (or after the function at pc) whose
// parent is the task with GUID parent, and returns the task. It never
// blocks. If the scheduler has stopped, drop is called instead, with
// ErrShutdown.
func (s *scheduler) spawn(base context.Context, parent uint64, name string, pc uintptr, fn func(ctx context.Context), drop func(error)) *task {
	ft := &funcTask{fn: fn, fail: drop}
	ft.t.pc, ft.t.job = pc, ft
	s.submit(&ft.t, base, parent, name)
	return &ft.t
}

// submit gives t, whose job is set, its identity
// and runs it on a free lane or queues it.
func (s *scheduler) submit(t *task, base context.Context, parent uint64, name string) {
	s.adopt(t, base, parent, name)
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		t.claimed.Store(true)
		t.abandon(ErrShutdown)
		return
	}
	if n := len(s.free); n > 0 {
		lane := s.free[n-1]
		s.free = s.free[:n-1]
		s.startLocked(work{t, lane})
		return
	}
	t.inQueue.Store(true)
	s.queue.push(t)
	s.queued.Add(1)
	s.mu.Unlock()
}

// adopt gives t its identity on s: context, GUID, parent and name. A local
// task that the tracer or an observer will see is named after its function
// here, by the goroutine that makes it: one that makes many tasks finds the
// names warm in its cache, where the lane that runs each would have to
// fetch them.
func (s *scheduler) adopt(t *task, base context.Context, parent uint64, name string) {
	t.Context, t.s, t.guid, t.parent, t.name = base, s, s.newGUID(), parent, name
	if name == "" && s.watched() {
		t.name = s.funcName(t.pc)
	}
	s.spawned.Add(1)
}

// runHere runs t, whose job is set, on the calling goroutine if a lane is
// free, and reports whether it did; the lane goes on to the next task
// afterwards, as a worker's would. t is marked direct: it may not wait.
func (s *scheduler) runHere(t *task, base context.Context, parent uint64, name string) bool {
	s.mu.Lock()
	n := len(s.free)
	if s.stopped || n == 0 {
		s.mu.Unlock()
		return false
	}
	lane := s.free[n-1]
	s.free = s.free[:n-1]
	s.mu.Unlock()
	s.adopt(t, base, parent, name)
	t.direct = true
	t.claimed.Store(true)
	if lane = s.runClaimed(t, lane); lane >= 0 {
		s.release(lane, nil)
	}
	return true
}

// startLocked runs w on an idle worker, or a new one, and unlocks s.mu.
func (s *scheduler) startLocked(w work) {
	if n := len(s.idle); n > 0 {
		ch := s.idle[n-1]
		s.idle = s.idle[:n-1]
		s.mu.Unlock()
		ch <- w
		return
	}
	s.mu.Unlock()
	go s.worker(w)
}

// release gives up lane while its holder waits: to a waiting resumer, to
// the next queued task on another worker, or to the free list; park, if
// given, is listed among the parked tasks (see pass).
func (s *scheduler) release(lane int, park *task) {
	if t := s.pass(lane, park); t != nil {
		s.mu.Lock()
		s.startLocked(work{t, lane})
	}
}

// pass hands lane to the first task waiting to resume, or returns the next
// queued task for the caller to run on lane, or frees lane. With park
// given, it lists park among the parked tasks in the same critical
// section.
func (s *scheduler) pass(lane int, park *task) *task {
	s.mu.Lock()
	if park != nil {
		park.nextParked = s.parked
		if s.parked != nil {
			s.parked.prevParked = park
		}
		s.parked = park
	}
	if len(s.resumers) > 0 {
		ch := s.resumers[0]
		s.resumers = s.resumers[1:]
		s.mu.Unlock()
		ch <- lane
		return nil
	}
	for t := s.queue.pop(); t != nil; t = s.queue.pop() {
		if t.inQueue.CompareAndSwap(true, false) {
			s.queued.Add(-1)
		}
		if !t.claimed.Load() { // else a waiter ran it already
			s.mu.Unlock()
			return t
		}
	}
	s.free = append(s.free, lane)
	s.mu.Unlock()
	return nil
}

// acquire returns a lane for t, which resumes, waiting for one if all are
// held; t leaves the parked list if it is on it. After stop it returns -1:
// the task finishes without a lane.
func (s *scheduler) acquire(t *task) int {
	s.mu.Lock()
	if t.prevParked != nil || s.parked == t {
		if t.prevParked != nil {
			t.prevParked.nextParked = t.nextParked
		} else {
			s.parked = t.nextParked
		}
		if t.nextParked != nil {
			t.nextParked.prevParked = t.prevParked
		}
		t.prevParked, t.nextParked = nil, nil
	}
	if s.stopped {
		s.mu.Unlock()
		return -1
	}
	if n := len(s.free); n > 0 {
		lane := s.free[n-1]
		s.free = s.free[:n-1]
		s.mu.Unlock()
		return lane
	}
	ch := make(chan int, 1)
	s.resumers = append(s.resumers, ch)
	s.mu.Unlock()
	return <-ch // close sends -1
}

// worker runs w, then keeps taking work while its lane has some (tasks
// waiting to resume go first, see pass). Without work it parks, lane-less,
// unless enough workers are parked already.
func (s *scheduler) worker(w work) {
	var ch chan work
	for {
		lane := s.run(w.t, w.lane)
		if lane < 0 {
			return
		}
		if t := s.pass(lane, nil); t != nil {
			w = work{t, lane}
			continue
		}
		s.mu.Lock()
		if s.stopped || len(s.idle) >= s.lanes {
			s.mu.Unlock()
			return
		}
		if ch == nil {
			ch = make(chan work, 1) // one per worker: a park takes exactly one send
		}
		s.idle = append(s.idle, ch)
		s.mu.Unlock()
		if w = <-ch; w.t == nil {
			return // close
		}
	}
}

// run runs t on lane and returns the lane the goroutine holds afterwards
// (t may have blocked and resumed on another, or on none after stop). A task
// that somebody else claimed already is skipped.
func (s *scheduler) run(t *task, lane int) int {
	if !t.claimed.CompareAndSwap(false, true) {
		return lane
	}
	return s.runClaimed(t, lane)
}

// runClaimed is run for a task its caller has claimed.
func (s *scheduler) runClaimed(t *task, lane int) int {
	t.lane = lane
	watched := s.watched()
	if watched {
		s.entered(t, false)
	}
	j := t.job
	t.job = nil // a finished task keeps nothing of its caller's alive
	j.run(t)
	if watched {
		s.left(t, false)
	}
	s.executed.Add(1)
	return t.lane
}

func (s *scheduler) queueLen() int { return int(s.queued.Load()) }

// close stops the scheduler and fails the tasks that will now never run, so
// nobody waits for them. Tasks running now finish; those blocked in Get
// return with the locality's cause, since their context is the locality's.
func (s *scheduler) close() {
	s.mu.Lock()
	if s.stopped {
		s.mu.Unlock()
		return
	}
	s.stopped = true
	// Parked workers and waiting resumers wait on one channel each (a
	// plain receive costs less than a select with a stop channel); each
	// is told to stop on its own. Their channels have room for the one
	// send.
	for _, ch := range s.idle {
		ch <- work{lane: -1}
	}
	s.idle = nil
	for _, ch := range s.resumers {
		ch <- -1
	}
	s.resumers = nil
	var dropped []*task
	for t := s.queue.pop(); t != nil; t = s.queue.pop() {
		if t.claimed.CompareAndSwap(false, true) {
			dropped = append(dropped, t)
		}
	}
	s.queued.Store(0)
	s.mu.Unlock()
	for _, t := range dropped {
		t.abandon(ErrShutdown)
	}
}

// taskQueue is a FIFO ring of tasks.
type taskQueue struct {
	buf        []*task
	head, size int
}

func (q *taskQueue) push(t *task) {
	if q.size == len(q.buf) {
		grown := make([]*task, max(16, 2*len(q.buf)))
		for i := range q.size {
			grown[i] = q.buf[(q.head+i)%len(q.buf)]
		}
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.size)%len(q.buf)] = t
	q.size++
}

func (q *taskQueue) pop() *task {
	if q.size == 0 {
		return nil
	}
	t := q.buf[q.head]
	q.buf[q.head] = nil
	q.head = (q.head + 1) % len(q.buf)
	q.size--
	return t
}
