package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/tessera-amt/tessera/trace"
)

// TraceConfig switches the tracer on for a locality (see package trace).
// Main fills every field left at its zero value from the environment, so
// a field set in the program wins over the variable (Start reads none):
//
//	TESSERA_TRACE=DIR                  Dir: write the run's OTF2 archive to DIR
//	TESSERA_TRACE_FORMAT=otf2,perfetto Formats (default otf2)
//	TESSERA_PROFILE=screen|csv         Profile
//	TESSERA_TRACE_SAMPLE=100ms         Sample
//
// `tessera run --trace DIR --trace-format F --profile P` sets them for
// every locality. All localities of a job must agree; the trace directory
// must be one all of them can write (a shared file system across hosts).
type TraceConfig struct {
	// Dir is the run's trace directory: DIR/tessera.otf2 and its files,
	// and DIR/trace.json for Perfetto. "" and no Profile: no tracing.
	Dir string
	// Formats are the timelines to write: "otf2" (always, when Dir is
	// set) and "perfetto" (DIR/trace.json, written by locality 0 from the
	// finished archive).
	Formats []string
	// Profile, "screen" or "csv", makes locality 0 print the job's
	// profile at exit: on its standard output, or as DIR/profile.csv
	// (./tessera-profile.csv without Dir). Without Dir the events go to a
	// temporary directory on locality 0's host that is removed afterwards,
	// so only localities that share it are profiled.
	Profile string
	// Sample is the sampler's period: 0 means 100ms, a negative one no
	// sampler.
	Sample time.Duration
	// EvtChunkSize is the OTF2 event chunk size; 0: 1 MiB.
	EvtChunkSize uint64
	// MergeWait bounds how long locality 0 waits at exit for the others'
	// parts of the archive before it merges what it has: 0 means 30s after
	// a clean Finalize and 3s otherwise (a failure, a shutdown without
	// Finalize).
	MergeWait time.Duration
}

// on says whether tracing is switched on.
func (c *TraceConfig) on() bool { return c.Dir != "" || c.Profile != "" }

// check says whether the formats and the profile are ones the tracer
// writes.
func (c *TraceConfig) check() error {
	for _, f := range c.Formats {
		if err := checkTraceFormat(f); err != nil {
			return fmt.Errorf("Config.Trace.Formats: %w", err)
		}
	}
	if c.Profile != "" {
		if err := checkProfile(c.Profile); err != nil {
			return fmt.Errorf("Config.Trace.Profile: %w", err)
		}
	}
	return nil
}

func checkTraceFormat(f string) error {
	if f != "otf2" && f != "perfetto" {
		return fmt.Errorf("trace format %q: want otf2 or perfetto", f)
	}
	return nil
}

func checkProfile(p string) error {
	if p != "screen" && p != "csv" {
		return fmt.Errorf("profile %q: want screen or csv", p)
	}
	return nil
}

// tracing is a locality's tracer and what to do with the trace at exit.
type tracing struct {
	cfg    TraceConfig
	dir    string // cfg.Dir, or a temporary one for a profile alone
	tracer *trace.Tracer
	once   sync.Once
}

// startTracing creates the locality's tracer when tracing is on; the
// scheduler then reports every task's start, stop, yield and resume to it,
// before cfg.Observer. It runs before the scheduler exists.
func (rt *Runtime) startTracing(cfg *Config) error {
	tc := cfg.Trace
	if !tc.on() {
		return nil
	}
	dir := tc.Dir
	if dir == "" {
		// A profile without a trace directory: the localities on one host
		// meet in a directory named after the job's secret.
		h := sha256.Sum256(append([]byte(cfg.RootAddr+"\x00"), cfg.Secret...))
		dir = filepath.Join(os.TempDir(), "tessera-profile-"+hex.EncodeToString(h[:8]))
	}
	t, err := trace.NewTracer(trace.TracerConfig{Dir: dir, Locality: cfg.Locality, Lanes: cfg.Lanes, EvtChunkSize: tc.EvtChunkSize})
	if err != nil {
		return fmt.Errorf("runtime: locality %d: tracing: %w", cfg.Locality, err)
	}
	rt.tracing = &tracing{cfg: tc, dir: dir, tracer: t}
	return nil
}

// startSampler starts the tracer's sampler once the port exists.
func (rt *Runtime) startSampler() {
	if rt.tracing == nil {
		return
	}
	rt.tracing.tracer.StartSampler(rt.tracing.cfg.Sample, func() trace.RuntimeSample {
		c := rt.Counters()
		s := trace.RuntimeSample{TaskQueueLen: c.TaskQueueLen, CallsInFlight: c.PendingCalls}
		for _, p := range c.Peers {
			s.ParcelsQueued += p.QueueLen
			s.ParcelsSent += p.ParcelsSent
			s.BytesSent += p.BytesSent
		}
		if c.Arrays != nil {
			s.LiveArrays, s.ArrayBytes = c.Arrays.Live, c.Arrays.LiveBytes
		}
		if c.AGAS != nil {
			s.AGASObjects = c.AGAS.LiveObjects
		}
		return s
	})
}

// stopTracing closes the tracer, which writes this locality's part of the
// archive; locality 0 then merges the parts of all localities it can find
// and writes the Perfetto timeline and the profile. It runs once, after
// the scheduler stopped, whether the job finished or failed.
func (rt *Runtime) stopTracing() {
	tr := rt.tracing
	if tr == nil {
		return
	}
	tr.once.Do(func() {
		if err := tr.tracer.Close(); err != nil {
			rt.log.Error("runtime: writing the trace", "err", err)
		}
		if rt.here != 0 {
			return
		}
		wait := tr.cfg.MergeWait
		if wait <= 0 {
			// After a clean Finalize every locality is closing its tracer
			// now; otherwise some may never.
			wait = 3 * time.Second
			if errors.Is(context.Cause(rt.ctx), errFinalized) {
				wait = 30 * time.Second
			}
		}
		if err := tr.finish(rt.n, wait, os.Stdout); err != nil {
			rt.log.Error("runtime: writing the trace", "err", err)
		}
	})
}

// finish merges the archive and writes what the configuration asks for.
func (tr *tracing) finish(n uint32, wait time.Duration, stdout *os.File) error {
	res, err := trace.MergeOTF2(context.Background(), tr.dir, n, wait)
	if err != nil {
		return err
	}
	var errs []error
	if len(res.Missing) > 0 {
		errs = append(errs, fmt.Errorf("trace %s: localities %v left no events (they failed before writing them); the archive holds localities %v", res.Anchor, res.Missing, res.Merged))
	}
	perfetto := slices.Contains(tr.cfg.Formats, "perfetto")
	if perfetto || tr.cfg.Profile != "" {
		a, err := trace.ReadOTF2(res.Anchor)
		if err != nil {
			return errors.Join(append(errs, err)...)
		}
		if perfetto {
			errs = append(errs, writeFile(filepath.Join(tr.dir, "trace.json"), func(f *os.File) error { return trace.WritePerfetto(f, a) }))
		}
		if tr.cfg.Profile != "" {
			errs = append(errs, tr.profile(a, stdout))
		}
	}
	if tr.cfg.Dir == "" {
		errs = append(errs, os.RemoveAll(tr.dir))
	}
	return errors.Join(errs...)
}

// profile prints the job's profile (screen) or writes it as CSV.
func (tr *tracing) profile(a *trace.OTF2Archive, stdout *os.File) error {
	per, all, err := trace.ProfileFromOTF2(a)
	if err != nil {
		return err
	}
	locs := make([]uint32, 0, len(per))
	for l := range per {
		locs = append(locs, l)
	}
	slices.Sort(locs)
	if tr.cfg.Profile == "screen" {
		return all.WriteText(stdout, fmt.Sprintf("tessera profile: %d localities", len(locs)))
	}
	path := "tessera-profile.csv"
	if tr.cfg.Dir != "" {
		path = filepath.Join(tr.cfg.Dir, "profile.csv")
	}
	return writeFile(path, func(f *os.File) error { return trace.WriteProfilesCSV(f, per, all) })
}

func writeFile(path string, write func(f *os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
