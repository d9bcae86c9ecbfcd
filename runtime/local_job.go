package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/tessera-amt/tessera/parcel"
)

// LocalJob is a job of several localities inside one process, joined by an
// inproc parcelport. Tests use it to run SPMD code without sockets and to
// make localities fail on demand through Network.
type LocalJob struct {
	Localities []*Runtime
	Network    *parcel.InprocNetwork
}

// StartLocal starts n localities in this process, each with a copy of cfg
// (its job fields and Parcelport are set here), and returns once all
// passed the start barrier. Like Start, it reads no environment variable:
// the job is what cfg says.
func StartLocal(ctx context.Context, n int, cfg Config) (*LocalJob, error) {
	return startLocal(ctx, n, cfg, hooks{})
}

// startLocal is StartLocal with the tests' hooks.
func startLocal(ctx context.Context, n int, cfg Config, hk hooks) (*LocalJob, error) {
	if n < 1 {
		return nil, fmt.Errorf("runtime: StartLocal: %d localities", n)
	}
	nw := parcel.NewInprocNetwork(0)
	job := &LocalJob{Localities: make([]*Runtime, n), Network: nw}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		c := cfg
		c.Locality, c.NumLocalities = uint32(i), uint32(n)
		c.RootAddr = "inproc:0"
		c.Secret = []byte("inproc-local-job-secret")
		c.Parcelport = func(h parcel.Handler) (parcel.Parcelport, error) { return nw.Port(uint32(i), h) }
		wg.Add(1)
		go func() {
			defer wg.Done()
			job.Localities[i], errs[i] = start(ctx, c, hk)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, rt := range job.Localities {
			if rt != nil {
				rt.shutdown(err)
			}
		}
		return nil, err
	}
	return job, nil
}

// Run runs body on every locality at once (SPMD) and then finalizes them.
// It returns the errors of the bodies and of Finalize, joined.
func (j *LocalJob) Run(ctx context.Context, body func(ctx context.Context, rt *Runtime) error) error {
	errs := make([]error, len(j.Localities))
	var wg sync.WaitGroup
	for i, rt := range j.Localities {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := Spawn(ctx, rt, func(ctx context.Context) (struct{}, error) {
				return struct{}{}, body(ctx, rt)
			}).Err(ctx)
			if err != nil {
				rt.Abort(abortError(rt.here, err))
				errs[i] = err
				return
			}
			errs[i] = rt.Finalize(ctx)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Close shuts every locality down without the finalize handshake.
func (j *LocalJob) Close() {
	for _, rt := range j.Localities {
		rt.shutdown(ErrShutdown)
	}
}
