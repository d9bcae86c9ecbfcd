package runtime

import (
	"context"
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

// TaskObserver watches tasks. Its methods are called on the task's
// goroutine and must be quick. A nil observer costs nothing. The
// locality's tracer, when tracing is on, sees the same events just before
// the observer does.
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
	job    job     // the work; nil once run or dropped
	lane   int
	// nested counts the waiters this task runs inside of (helpWith), on
	// the same goroutine's stack.
	nested int
	// direct marks a direct action run by its parcel's reader: it may not
	// wait (Future.Get).
	direct bool

	// wake is where a task parked on a future (Future.waiter) is woken:
	// by the future's fulfilment, or by the locality's end. It has room
	// for one wake-up; one left over from an earlier wait only makes the
	// next look again. Made by the first goroutine that parks on it.
	wake chan struct{}
	// prevParked and nextParked link the task into scheduler.parked while
	// it is parked there; guarded by the scheduler's mu.
	prevParked, nextParked *task
	// waiting is held by the goroutine in Future.Get for the task: it
	// alone gives the task's lane back and parks on wake. Other goroutines
	// that wait with the task's context meanwhile wait as goroutines
	// outside any task do.
	waiting atomic.Bool

	// claimed is set by whoever runs (or drops) the task: the worker that
	// takes it off the queue, or a task that waits for its result and runs
	// it itself (see Future.Get). Only the claimer touches fn and drop.
	claimed atomic.Bool
	// inQueue is set while the task counts in scheduler.queued; whoever
	// clears it — the worker that takes it off the queue, or a task that
	// claims it there — takes it out of the count.
	inQueue atomic.Bool
}

// A job is the work of a task: run runs it; drop fails its result when it
// will never run. A job usually holds its task, so that the task and its
// state are one allocation (a spawned function with its future, a call
// being served, funcTask).
type job interface {
	run(ctx context.Context)
	drop(err error)
}

// abandon fails the result of t, which will never run.
func (t *task) abandon(err error) {
	j := t.job
	t.job = nil // a dropped task keeps nothing of its caller's alive
	j.drop(err)
}

// funcTask is a task whose work is a pair of functions (scheduler.spawn).
type funcTask struct {
	t    task
	fn   func(ctx context.Context)
	fail func(err error)
}

func (f *funcTask) run(ctx context.Context) {
	fn := f.fn
	f.fn, f.fail = nil, nil
	fn(ctx)
}

func (f *funcTask) drop(err error) {
	fail := f.fail
	f.fn, f.fail = nil, nil
	fail(err)
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

// taskName returns the task's name: an action's, or for a local task its
// function's, found by adopt or else looked up the first time (only the
// task's goroutine asks, so it is named once).
func (t *task) taskName() string {
	if t.name == "" {
		t.name = t.s.funcName(t.pc)
	}
	return t.name
}

func (t *task) info() TaskInfo {
	return TaskInfo{GUID: t.guid, Parent: t.parent, Name: t.taskName(), Locality: t.s.locality, Lane: t.lane}
}

// entered reports that t took its lane to the tracer and the observer, if
// any: t started, or resumed after a yield. The tracer takes the task's
// fields as they are, without a TaskInfo: this runs twice per task.
func (s *scheduler) entered(t *task, resumed bool) {
	if tr := s.tracer; tr != nil {
		tr.Enter(t.lane, t.taskName(), t.guid, t.parent)
	}
	if o := s.observer; o != nil {
		if resumed {
			o.TaskResume(t.info())
		} else {
			o.TaskStart(t.info())
		}
	}
}

// left reports that t gave its lane up: it stopped, or yielded to wait.
func (s *scheduler) left(t *task, yielded bool) {
	if tr := s.tracer; tr != nil {
		tr.Leave(t.lane, t.taskName())
	}
	if o := s.observer; o != nil {
		if yielded {
			o.TaskYield(t.info())
		} else {
			o.TaskStop(t.info())
		}
	}
}

// watched says whether anybody sees the tasks' events.
func (s *scheduler) watched() bool { return s.tracer != nil || s.observer != nil }

// yield gives the task's lane back while the task blocks: to a task that
// is waiting to resume, to the next queued task, or to the free list. A
// task that parks on its wake channel (park) is listed among the parked
// tasks too, which the locality's end wakes.
func (t *task) yield(park bool) {
	s := t.s
	if s.watched() {
		s.left(t, true)
	}
	s.yields.Add(1)
	var p *task
	if park {
		p = t
	}
	s.release(t.lane, p)
}

// resume takes a lane again: a free one at once, or else the next one a
// task gives back. A parked task leaves the parked list.
func (t *task) resume() {
	t.lane = t.s.acquire(t)
	if t.s.watched() {
		t.s.entered(t, true)
	}
}

// maxNested bounds how deep tasks run inside the waits of others on one
// goroutine: a chain of tasks each waiting for the next would otherwise
// grow one stack without limit.
const maxNested = 64

// helpWith runs p, a task whose result t waits for, on t's own lane if p
// has not started yet: what a worker would do once t gave its lane back,
// without the hand-off. t steps aside for it like a task that blocks. It
// reports whether it ran p. Whatever context t waits with, it decides
// the same: a wait whose context ends meanwhile returns once p is done,
// as it would return only once it had a lane again had t given its lane
// to p.
func (t *task) helpWith(p *task) bool {
	if p.s != t.s || t.lane < 0 || t.nested >= maxNested || !p.claimed.CompareAndSwap(false, true) {
		return false
	}
	p.nested = t.nested + 1
	s := t.s
	if p.inQueue.CompareAndSwap(true, false) {
		s.queued.Add(-1)
	}
	watched := s.watched()
	if watched {
		s.left(t, true)
	}
	t.lane = s.runClaimed(p, t.lane)
	if watched {
		s.entered(t, true)
	}
	return true
}
