package runtime

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tessera-amt/tessera/parcel"
	"github.com/tinylib/msgp/msgp"
)

// Sentinels, for errors.Is.
var (
	// ErrLocalityDown: a locality died, lost its connection, or aborted.
	// It is parcel.ErrPeerDown, so transport and runtime errors agree.
	ErrLocalityDown = parcel.ErrPeerDown
	// ErrUnknownAction: the target has no action of that name.
	ErrUnknownAction = errors.New("unknown action")
	// ErrActionPanic: the action panicked.
	ErrActionPanic = errors.New("action panicked")
	// ErrShutdown: the locality shut down before the work could run.
	ErrShutdown = errors.New("runtime: locality shut down")
	// ErrDirectWait: a direct action (RegisterDirect) asked for a future
	// that was not ready; it may not wait.
	ErrDirectWait = errors.New("runtime: a direct action cannot wait for a future that is not ready")
)

// ActionError is the error of a future whose action failed: where it ran,
// which action, and why.
type ActionError struct {
	Locality uint32 // where the action ran, or was to run
	Action   string
	Err      error
}

func (e *ActionError) Error() string {
	return fmt.Sprintf("action %q on locality %d: %v", e.Action, e.Locality, e.Err)
}

// Unwrap returns the cause.
func (e *ActionError) Unwrap() error { return e.Err }

// LocalityError says that a locality is gone and why. It wraps
// ErrLocalityDown.
type LocalityError struct {
	Locality uint32 // the locality that is gone
	Reason   string // what happened, as seen from here or as it told us

	// lost is, for a locality that aborted because it lost another, that
	// loss as the aborting locality saw it.
	lost *LocalityError
}

func (e *LocalityError) Error() string {
	return fmt.Sprintf("locality %d down: %s", e.Locality, e.Reason)
}

// Unwrap returns ErrLocalityDown.
func (e *LocalityError) Unwrap() error { return ErrLocalityDown }

// abortedPrefix starts the Reason of a LocalityError for a locality that
// aborted the job; what follows is why, as it told.
const abortedPrefix = "aborted: "

// aborted returns why the locality aborted the job, or ok false when it
// was lost without a word (it died, or went silent).
func (e *LocalityError) aborted() (why string, ok bool) {
	return strings.CutPrefix(e.Reason, abortedPrefix)
}

// remoteError is an error text that came back in a reply. It matches the
// sentinel its code stands for.
type remoteError struct {
	msg  string
	kind error
}

func (e *remoteError) Error() string { return e.msg }
func (e *remoteError) Unwrap() error { return e.kind }

// replyError rebuilds the error of a failed reply: its text, and the
// sentinel it wraps — one of the runtime's for its code, or one the program
// registered with RegisterErrors, named in args.
func (reg *Registry) replyError(code parcel.Code, msg string, args []byte) error {
	switch code {
	case parcel.CodeUnknownAction:
		return &remoteError{msg, ErrUnknownAction}
	case parcel.CodeActionPanic:
		return &remoteError{msg, ErrActionPanic}
	case parcel.CodeShutdown:
		return &remoteError{msg, ErrShutdown}
	}
	if name, _, err := msgp.ReadStringBytes(args); err == nil {
		reg.mu.RLock()
		s := reg.sentinels[name]
		reg.mu.RUnlock()
		if s != nil {
			return &remoteError{msg, s}
		}
	}
	return &remoteError{msg, nil}
}

// RegisterErrors makes errs travel: when an action's error wraps one of
// them, the caller's error wraps it too, so errors.Is works across
// localities. Sentinels are told apart by their text, which must be unique.
// Like Register, it is set-up: it panics after Start.
func (reg *Registry) RegisterErrors(errs ...error) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	if reg.frozen() {
		panic("runtime: RegisterErrors after Start")
	}
	if reg.sentinels == nil {
		reg.sentinels = make(map[string]error)
	}
	for _, err := range errs {
		reg.sentinels[err.Error()] = err
	}
}

// sentinelOf names the registered sentinel err wraps, msgp-encoded, or
// returns nil.
func (reg *Registry) sentinelOf(err error) []byte {
	reg.mu.RLock()
	defer reg.mu.RUnlock()
	for name, s := range reg.sentinels {
		if errors.Is(err, s) {
			return msgp.AppendString(nil, name)
		}
	}
	return nil
}
