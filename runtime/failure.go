package runtime

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/tessera-amt/tessera/internal/jobenv"
)

// Exit statuses of Main. A job that fails has one locality where it failed
// first, the root cause, and others that stopped because of it; each exits
// with the status that says which it is (the launcher's protocol,
// internal/jobenv, defines them).
const (
	ExitFailed  = jobenv.ExitFailed  // the job failed here
	ExitStopped = jobenv.ExitStopped // this locality stopped because another failed first
)

// abortError is what a locality whose body failed with err tells the
// others (Main, LocalJob.Run): "locality N: " and err.
func abortError(here uint32, err error) error { return fmt.Errorf("locality %d: %w", here, err) }

// cutAbortPrefix splits the text of an abortError into the locality it
// names and the body's error.
func cutAbortPrefix(why string) (loc uint32, rest string, ok bool) {
	rest, ok = strings.CutPrefix(why, "locality ")
	if !ok {
		return 0, why, false
	}
	num, rest, ok := strings.Cut(rest, ": ")
	if !ok {
		return 0, why, false
	}
	id, err := strconv.ParseUint(num, 10, 32)
	if err != nil {
		return 0, why, false
	}
	return uint32(id), rest, true
}

// classify says how err, which ended locality here in phase, fits in the
// job's failure: whether the job failed here, or this locality stopped
// because another failed, and the root cause.
func classify(here uint32, phase string, err error) jobenv.Failure {
	f := jobenv.Failure{Locality: here, Root: true, Origin: here, Phase: phase, Cause: err.Error(), Detail: err.Error(), Time: time.Now()}
	var ae *ActionError
	if errors.As(err, &ae) {
		f.Action = ae.Action
	}
	var le *LocalityError
	if !errors.As(err, &le) {
		f.Status = ExitFailed
		return f
	}
	f.Root, f.Status = false, ExitStopped
	why, aborted := le.aborted()
	switch {
	case !aborted:
		// Lost without a word: it died, or went silent.
		f.Origin, f.Cause = le.Locality, le.Reason
	case le.lost != nil:
		// The locality that aborted had lost another one.
		f.Origin, f.Cause = le.lost.Locality, le.lost.Reason
	default:
		f.Origin, f.Told, f.Cause = le.Locality, true, why
		if id, rest, ok := cutAbortPrefix(why); ok {
			f.Origin, f.Cause = id, rest
		}
	}
	if f.Origin == here {
		// The others lost this locality, and one of them said so: the job
		// failed here, as they saw it.
		f.Root, f.Origin, f.Told, f.Cause, f.Status = true, here, false, err.Error(), ExitFailed
	}
	return f
}

// msgLocalityFailed is the message of the runtime's log record of its own
// failure (fail).
const msgLocalityFailed = "runtime: locality failed"

// quietFailures is the log handler of Main's default logger when the job is
// not verbose: it leaves out the runtime's record of its own failure, which
// Main reports instead, once for the job, and passes on everything else.
type quietFailures struct{ slog.Handler }

func (h quietFailures) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == msgLocalityFailed {
		return nil
	}
	return h.Handler.Handle(ctx, r)
}

func (h quietFailures) WithAttrs(attrs []slog.Attr) slog.Handler {
	return quietFailures{h.Handler.WithAttrs(attrs)}
}

func (h quietFailures) WithGroup(name string) slog.Handler {
	return quietFailures{h.Handler.WithGroup(name)}
}
