package runtime

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/tessera-amt/tessera/internal/jobenv"
)

// mainGrace is how long Main lets the program's body return after the job
// has failed before it gives up on it and returns anyway.
const mainGrace = 3 * time.Second

// abortWait is how long Main waits for the job's failure to reach this
// locality when the body failed because another locality is gone or shut
// down, before it reports the body's error as the job's cause.
const abortWait = time.Second

// Main is the whole life of an SPMD program's locality: it fills the
// fields cfg leaves zero from the environment (the job that `tessera run`
// or slurm describes when cfg.NumLocalities is 0, and the options such as
// TESSERA_TRACE and TESSERA_PROGRESS; see package doc), Starts, runs body as
// the root task "main", Finalizes, and returns the process exit code: 0
// when every locality finished; ExitFailed when the job failed here (body
// returned an error, or the locality could not start); ExitStopped when
// this locality stopped because another failed first. It never hangs on a
// failed job: once the job has failed it waits at most 3 s for body
// to notice (body's ctx ends with the failure as its cause).
//
// A failure is reported once for the job, not once per locality. Under
// `tessera run`, which names a directory for them (TESSERA_FAILURE_DIR),
// a locality that fails writes its failure record there and prints
// nothing about it: the launcher sums the job up. Otherwise (srun) it
// prints one line: the locality where the job failed prints the cause,
// locality 0 how many others stopped and why, the others why they
// stopped. With TESSERA_VERBOSE=1 (`tessera run --verbose`) every locality
// also prints its error whole, as it saw it, and the default logger
// records the runtime's failure; otherwise that record is left out. A
// Logger in cfg is used as given.
//
// Main is the only function of the package that reads the environment.
//
//	func main() { os.Exit(runtime.Main(cfg, body)) }
func Main(cfg Config, body func(ctx context.Context, rt *Runtime) error) int {
	rep := &reporter{
		stderr:  os.Stderr,
		dir:     os.Getenv(jobenv.VarFailureDir),
		verbose: os.Getenv(jobenv.VarVerbose) == "1",
	}
	home, _ := os.UserHomeDir()
	cfg, warnings, err := fromEnvironment(cfg, os.Getenv, home, jobenv.InheritListener)
	if err != nil {
		l, _ := jobenv.FromEnv(os.Getenv) // which locality, as far as it says
		rep.n = l.NumLocalities
		return rep.report(classify(l.Locality, jobenv.PhaseStart, err))
	}
	rep.n = cfg.NumLocalities
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
		if !rep.verbose {
			cfg.Logger = slog.New(quietFailures{cfg.Logger.Handler()})
		}
	}
	for _, w := range warnings {
		cfg.Logger.Warn(w, "locality", cfg.Locality)
	}
	return runMain(context.Background(), cfg, body, rep)
}

func runMain(ctx context.Context, cfg Config, body func(ctx context.Context, rt *Runtime) error, rep *reporter) int {
	rt, err := Start(ctx, cfg)
	if err != nil {
		return rep.report(classify(cfg.Locality, jobenv.PhaseStart, err))
	}
	bodyDone := SpawnNamed(ctx, rt, "main", func(ctx context.Context) (struct{}, error) {
		return struct{}{}, body(ctx, rt)
	})
	errc := make(chan error, 1)
	go func() { errc <- bodyDone.Err(context.Background()) }()
	select {
	case err = <-errc:
	case <-rt.Done():
		select {
		case err = <-errc:
		case <-time.After(mainGrace):
		}
		if cause := rt.Err(); cause != nil {
			err = cause
		}
	}
	if err != nil && rt.Err() == nil && (errors.Is(err, ErrLocalityDown) || errors.Is(err, ErrShutdown)) {
		// The body failed because another locality is gone or shutting
		// down: most likely the job failed elsewhere and the abort that
		// says where is on its way. Wait a little for it, so that this
		// locality reports that it stopped, not a failure of its own.
		select {
		case <-rt.Done():
		case <-time.After(abortWait):
		}
	}
	if err != nil {
		if cause := rt.Err(); cause != nil {
			// The job failed first; the body's error is most likely a
			// consequence. Report the cause.
			err = cause
			rt.shutdown(cause)
		} else {
			rt.Abort(abortError(rt.here, err))
		}
		return rep.report(classify(rt.here, jobenv.PhaseMain, err))
	}
	if err := rt.Finalize(ctx); err != nil {
		if !errors.Is(err, errFinalized) {
			return rep.report(classify(rt.here, jobenv.PhaseFinalize, err))
		}
	}
	return 0
}

// reporter is where Main reports a failure.
type reporter struct {
	stderr  io.Writer
	dir     string // where the launcher wants a failure record; "": print a line
	verbose bool   // print the whole error too
	n       uint32 // localities in the job
}

// report reports f and returns its exit status.
func (r *reporter) report(f jobenv.Failure) int {
	if r.verbose {
		fmt.Fprintf(r.stderr, "tessera: locality %d: %s\n", f.Locality, f.Detail)
	}
	if r.dir != "" {
		err := jobenv.WriteFailure(r.dir, f)
		if err == nil {
			return f.Status
		}
		fmt.Fprintf(r.stderr, "tessera: %v\n", err)
	}
	if !r.verbose || r.dir == "" {
		fmt.Fprintln(r.stderr, f.Line(r.n))
	}
	return f.Status
}
