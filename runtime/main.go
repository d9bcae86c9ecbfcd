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

// MainGrace is how long Main lets the program's body return after the job
// has failed before it gives up on it and returns anyway.
const MainGrace = 3 * time.Second

// Main is the whole life of an SPMD program's locality: it fills the
// fields cfg leaves zero from the environment (the job that `tessera run`
// or slurm describes when cfg.NumLocalities is 0, and the options such as
// TESSERA_TRACE and TESSERA_PROGRESS; see package doc), Starts, runs body as
// the root task "main", Finalizes, and returns the process exit code — 0
// when every locality finished, 1 otherwise, after printing why to stderr.
// It never hangs on a failed job: once the job has failed it waits at most
// MainGrace for body to notice (body's ctx ends with the failure as its
// cause).
//
// Main is the only function of the package that reads the environment.
//
//	func main() { os.Exit(runtime.Main(cfg, body)) }
func Main(cfg Config, body func(ctx context.Context, rt *Runtime) error) int {
	home, _ := os.UserHomeDir()
	cfg, warnings, err := fromEnvironment(cfg, os.Getenv, home, jobenv.InheritListener)
	if err != nil {
		fmt.Fprintf(os.Stderr, "tessera: %v\n", err)
		return 1
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	for _, w := range warnings {
		log.Warn(w, "locality", cfg.Locality)
	}
	return runMain(context.Background(), cfg, body, os.Stderr)
}

func runMain(ctx context.Context, cfg Config, body func(ctx context.Context, rt *Runtime) error, stderr io.Writer) int {
	rt, err := Start(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "tessera: %v\n", err)
		return 1
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
		case <-time.After(MainGrace):
		}
		if cause := rt.Err(); cause != nil {
			err = cause
		}
	}
	if err != nil {
		if cause := rt.Err(); cause != nil {
			// The job failed first; the body's error is most likely a
			// consequence. Report the cause.
			err = cause
			rt.shutdown(cause)
		} else {
			rt.Abort(fmt.Errorf("locality %d: %w", rt.here, err))
		}
		fmt.Fprintf(stderr, "tessera: locality %d: %v\n", rt.here, err)
		return 1
	}
	if err := rt.Finalize(ctx); err != nil {
		if !errors.Is(err, errFinalized) {
			fmt.Fprintf(stderr, "tessera: locality %d: %v\n", rt.here, err)
			return 1
		}
	}
	return 0
}
