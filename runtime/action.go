package runtime

import (
	"context"
	"fmt"
	goruntime "runtime"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/tessera-amt/tessera/parcel"
)

// Registry holds the actions a program's localities can run for each other.
// Every locality of a job registers the same actions under the same names
// before Start; after Start the registry is read-only. The zero Registry is
// not usable; make one with NewRegistry.
type Registry struct {
	mu        sync.RWMutex
	actions   map[string]*actionEntry
	sentinels map[string]error // errors that keep their identity across localities
	// served is actions once Start froze the registry (nil before): no
	// longer written, so a call's lookup reads it without taking mu.
	served atomic.Pointer[map[string]*actionEntry]

	sharedMu sync.Mutex
	shared   map[string]any // Shared's values, by key
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	// The runtime's own sentinel that an action's error may wrap travels
	// like those of RegisterErrors.
	return &Registry{actions: make(map[string]*actionEntry), sentinels: map[string]error{ErrDirectWait.Error(): ErrDirectWait}}
}

// actionEntry is the untyped face of a registered action, as the receiving
// side of a parcel sees it.
type actionEntry struct {
	name   string
	direct bool // RegisterDirect: run by the reader of the call's connection
	// serve decodes the arguments, runs the action, and encodes the
	// result, appending to rargs and rchunks.
	serve func(ctx context.Context, args []byte, chunks [][]byte, rargs []byte, rchunks [][]byte) ([]byte, [][]byte, parcel.Code, error)
	// spare is a direct action's serving that ran on a reader and is free
	// for its next call (direct.go).
	spare atomic.Pointer[directServing]
}

// Action is a registered function of type func(ctx, A) (R, error) that any
// locality can run on any other with Async.
type Action[A, R any] struct {
	name string
	span string // "call <name>", the caller's span (spans.go)
	fn   func(ctx context.Context, args A) (R, error)
	args codec[A]
	res  codec[R]
}

// Name returns the name the action was registered under.
func (a Action[A, R]) Name() string { return a.name }

// Register adds fn to reg under name and returns the typed handle to call it
// with. A and R must be able to travel in a parcel: basic types, string,
// []float64 and []byte (sent as raw chunks), struct{}, msgp types, or types
// implementing ParcelMarshaler and ParcelUnmarshaler. Register panics —
// this is program set-up, like a duplicate http pattern — when name is empty
// or taken, when a type cannot travel, or after the runtime has started.
func Register[A, R any](reg *Registry, name string, fn func(ctx context.Context, args A) (R, error)) Action[A, R] {
	return register(reg, name, fn, false)
}

// RegisterDirect is Register for a direct action, as HPX has them: a call
// from another locality runs on the goroutine that read it, holding a free
// lane, instead of being handed to a worker goroutine — one hand-off less
// per call. It is for short actions that do not wait: while it runs, no
// other parcel from the caller's locality is read, and a Get inside it on
// a future that is not ready fails at once with ErrDirectWait. When every
// lane is busy the call is queued as a task like any other; a call on the
// caller's own locality is a local task.
//
// The arguments and the context are the action's only until it returns:
// a []byte or []float64 argument (or one inside a type the action
// decodes itself) may be a view of the memory the call was read into,
// which the next call from that locality overwrites, and the context is
// the task's, which the next call reuses. An action that keeps an
// argument past its return copies it; one that starts work outlasting it
// gives that work a context of its own. The result may be a view of the
// arguments (an echo): it is sent before the memory is reused. So a call
// costs no allocation on the serving side.
func RegisterDirect[A, R any](reg *Registry, name string, fn func(ctx context.Context, args A) (R, error)) Action[A, R] {
	return register(reg, name, fn, true)
}

func register[A, R any](reg *Registry, name string, fn func(ctx context.Context, args A) (R, error), direct bool) Action[A, R] {
	ac, err := codecFor[A]()
	if err != nil {
		panic(fmt.Sprintf("runtime: action %q: argument: %v", name, err))
	}
	rc, err := codecFor[R]()
	if err != nil {
		panic(fmt.Sprintf("runtime: action %q: result: %v", name, err))
	}
	if name == "" || fn == nil {
		panic("runtime: Register needs a name and a function")
	}
	a := Action[A, R]{name: name, span: "call " + name, fn: fn, args: ac, res: rc}
	e := &actionEntry{name: name, direct: direct, serve: func(ctx context.Context, b []byte, c [][]byte, rb []byte, rch [][]byte) ([]byte, [][]byte, parcel.Code, error) {
		args, err := ac.decode(b, c)
		if err != nil {
			return nil, nil, parcel.CodeBadArgs, fmt.Errorf("decoding arguments: %w", err)
		}
		r, code, err := callAction(ctx, fn, args)
		if err != nil {
			return nil, nil, code, err
		}
		rb, rch, err = rc.encode(r, rb, rch)
		if err != nil {
			return nil, nil, parcel.CodeActionError, fmt.Errorf("encoding result: %w", err)
		}
		return rb, rch, parcel.CodeOK, nil
	}}
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.frozen() {
		panic(fmt.Sprintf("runtime: action %q registered after Start", name))
	}
	if reg.actions[name] != nil {
		panic(fmt.Sprintf("runtime: action %q registered twice", name))
	}
	reg.actions[name] = e
	return a
}

// callAction runs fn, turning a panic into an error.
func callAction[A, R any](ctx context.Context, fn func(context.Context, A) (R, error), args A) (r R, code parcel.Code, err error) {
	defer func() {
		if p := recover(); p != nil {
			buf := make([]byte, 4<<10)
			buf = buf[:goruntime.Stack(buf, false)]
			err = fmt.Errorf("%w: %v\n%s", ErrActionPanic, p, buf)
			code = parcel.CodeActionPanic
		}
	}()
	r, err = fn(ctx, args)
	if err != nil {
		code = parcel.CodeActionError
	}
	return r, code, err
}

func (reg *Registry) lookup(name string) *actionEntry {
	if m := reg.served.Load(); m != nil {
		return (*m)[name]
	}
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	return reg.actions[name]
}

func (reg *Registry) freeze() {
	reg.mu.Lock()
	reg.served.Store(&reg.actions)
	reg.mu.Unlock()
}

// frozen reports whether Start has frozen the registry.
func (reg *Registry) frozen() bool { return reg.served.Load() != nil }

// Names returns the registered action names, sorted.
func (reg *Registry) Names() []string {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	out := make([]string, 0, len(reg.actions))
	for n := range reg.actions {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
