package runtime

import (
	"context"
	goruntime "runtime"
	"sync"
	"sync/atomic"
)

// A GUID names one task across the whole job: the locality that created it
// in the high GUIDLocalityBits bits, a per-locality sequence number in the
// rest. 0 means "no task" (the parent of a root task).
const (
	GUIDLocalityBits = 20
	guidSeqBits      = 64 - GUIDLocalityBits
)

// GUIDLocality returns the locality that created the task guid.
func GUIDLocality(guid uint64) uint32 { return uint32(guid >> guidSeqBits) }

// TaskInfo describes a task to a TaskObserver.
type TaskInfo struct {
	GUID     uint64 // this task
	Parent   uint64 // the task that spawned it; 0 for a root task
	Name     string // action name, or the function's name for local tasks
	Locality uint32 // where it runs
	Lane     int    // the worker lane it runs on (or resumes on)
}

// TaskObserver watches tasks: the tracer implements it. Its methods are
// called on the task's goroutine and must be quick. A nil observer costs
// nothing.
type TaskObserver interface {
	TaskStart(TaskInfo)  // the task begins on a lane
	TaskStop(TaskInfo)   // the task ended
	TaskYield(TaskInfo)  // the task blocked on a future and gave its lane back
	TaskResume(TaskInfo) // the task has a lane again (perhaps another one)
}

// task is one unit of work on a scheduler. It is also the context the work
// runs with, so that Get can find the task it blocks.
type task struct {
	context.Context
	s      *scheduler
	guid   uint64
	parent uint64
	name   string  // set for actions
	pc     uintptr // function of a local task, named lazily
	fn     func(ctx context.Context)
	drop   func(err error) // fails the task's result when it will never run
	lane   int
}

type taskKey struct{}

// Value returns the task itself for taskKey, so taskOf works through any
// context derived from the task's.
func (t *task) Value(key any) any {
	if key == (taskKey{}) {
		return t
	}
	return t.Context.Value(key)
}

// taskOf returns the task whose context ctx is or derives from, or nil.
func taskOf(ctx context.Context) *task {
	if t, ok := ctx.(*task); ok {
		return t
	}
	t, _ := ctx.Value(taskKey{}).(*task)
	return t
}

// TaskGUID returns the GUID of the task running with ctx, or 0 outside any
// task.
func TaskGUID(ctx context.Context) uint64 {
	if t := taskOf(ctx); t != nil {
		return t.guid
	}
	return 0
}

func (t *task) info() TaskInfo {
	name := t.name
	if name == "" {
		if f := goruntime.FuncForPC(t.pc); f != nil {
			name = f.Name()
		}
	}
	return TaskInfo{GUID: t.guid, Parent: t.parent, Name: name, Locality: t.s.locality, Lane: t.lane}
}

// yield gives the task's lane to a new worker while the task blocks.
func (t *task) yield() {
	s := t.s
	if o := s.observer; o != nil {
		o.TaskYield(t.info())
	}
	s.yields.Add(1)
	s.goWorker(t.lane)
}

// resume takes a lane again: the next worker that looks for work hands its
// lane over and retires.
func (t *task) resume() {
	s := t.s
	w := make(chan int, 1)
	select {
	case s.resumeq <- w:
		select {
		case t.lane = <-w:
		case <-s.stop:
			t.lane = -1
		}
	case <-s.stop:
		t.lane = -1 // shutting down: finish without a lane
	}
	if o := s.observer; o != nil {
		o.TaskResume(t.info())
	}
}

// scheduler runs tasks on a fixed number of worker lanes. A worker is a
// goroutine that owns a lane; a task that blocks hands its lane to a new
// worker and later takes one back from whichever worker next looks for work,
// so at most `lanes` tasks compute at any moment.
type scheduler struct {
	rt       *Runtime        // the locality the tasks belong to
	base     context.Context // the locality's lifetime; tasks run under it
	locality uint32
	lanes    int
	observer TaskObserver
	queue    chan *task
	resumeq  chan chan int // blocked tasks waiting for a lane
	stop     chan struct{}
	stopOnce sync.Once
	seq      atomic.Uint64
	spawned  atomic.Uint64
	executed atomic.Uint64
	yields   atomic.Uint64
	overflow atomic.Int64 // tasks waiting to enter a full queue
}

func newScheduler(base context.Context, locality uint32, lanes int, o TaskObserver) *scheduler {
	s := &scheduler{
		base:     base,
		locality: locality,
		lanes:    lanes,
		observer: o,
		queue:    make(chan *task, 1<<14),
		resumeq:  make(chan chan int),
		stop:     make(chan struct{}),
	}
	for lane := range lanes {
		s.goWorker(lane)
	}
	return s
}

func (s *scheduler) newGUID() uint64 {
	return uint64(s.locality)<<guidSeqBits | s.seq.Add(1)
}

func (s *scheduler) goWorker(lane int) { go s.work(lane) }

// work is a worker's loop. Blocked tasks waiting to resume go first.
func (s *scheduler) work(lane int) {
	for {
		select {
		case w := <-s.resumeq:
			w <- lane
			return
		default:
		}
		select {
		case w := <-s.resumeq:
			w <- lane
			return
		case t := <-s.queue:
			lane = s.run(t, lane)
			if lane < 0 {
				return
			}
		case <-s.stop:
			return
		}
	}
}

// run runs t on lane and returns the lane the goroutine holds afterwards
// (t may have blocked and resumed on another).
func (s *scheduler) run(t *task, lane int) int {
	t.lane = lane
	o := s.observer
	if o != nil {
		o.TaskStart(t.info())
	}
	t.fn(t)
	if o != nil {
		o.TaskStop(t.info())
	}
	s.executed.Add(1)
	return t.lane
}

// spawn queues fn as a task named name (or after fn) whose parent is the
// task running with ctx, if any. It never blocks.
// If the scheduler has stopped, drop is called instead, with ErrShutdown.
func (s *scheduler) spawn(base context.Context, parent uint64, name string, pc uintptr, fn func(ctx context.Context), drop func(error)) {
	t := &task{Context: base, s: s, guid: s.newGUID(), parent: parent, name: name, pc: pc, fn: fn, drop: drop}
	s.spawned.Add(1)
	select {
	case <-s.stop:
		t.drop(ErrShutdown)
		return
	default:
	}
	select {
	case s.queue <- t:
	default:
		// The queue is full; never block the spawner (it may be a worker the
		// queue is waiting for).
		s.overflow.Add(1)
		go func() {
			defer s.overflow.Add(-1)
			select {
			case s.queue <- t:
			case <-s.stop:
				t.drop(ErrShutdown)
			}
		}()
	}
}

func (s *scheduler) queueLen() int { return len(s.queue) + int(s.overflow.Load()) }

// close stops the workers and fails the tasks that will now never run, so
// nobody waits for them.
func (s *scheduler) close() {
	s.stopOnce.Do(func() { close(s.stop) })
	for {
		select {
		case t := <-s.queue:
			t.drop(ErrShutdown)
		default:
			return
		}
	}
}
