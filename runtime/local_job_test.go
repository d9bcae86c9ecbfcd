package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/internal/jobenv"
	"github.com/tessera-amt/tessera/parcel"
)

// hostileEnv is a value for every variable of the launch protocol that
// would change a job if Start read it: another job's size and locality,
// tracing and a profile into traceDir, polling, nbio, a metrics listener,
// a congestion control that does not exist, a secret file in secretDir.
func hostileEnv(traceDir, secretDir string) map[string]string {
	env := map[string]string{
		jobenv.VarLocality: "5", jobenv.VarNumLocalities: "7", jobenv.VarNodeCPUs: "1000",
		jobenv.VarRootAddr: "192.0.2.1:1", jobenv.VarRootFD: "99", jobenv.VarListenHost: "192.0.2.1",
		jobenv.VarSecret: "not hex", jobenv.VarSecretFile: filepath.Join(secretDir, "secret"),
		jobenv.VarJobID: "another-job", jobenv.VarPort: "1",
		jobenv.VarParcelport: ParcelportNBIO, jobenv.VarProgress: ProgressNamePoll,
		jobenv.VarTCPCongestion: "no-such-congestion-control", jobenv.VarMetricsAddr: "127.0.0.1:0",
		jobenv.VarTrace: traceDir, jobenv.VarTraceFormat: "otf2,perfetto", jobenv.VarProfile: "csv",
		jobenv.VarTraceSample: "1ms",
		jobenv.SlurmNTasks:    "64", jobenv.SlurmProcID: "17", jobenv.SlurmNodeList: "n[1-8]",
		jobenv.SlurmStepNodeList: "n[1-8]", jobenv.SlurmCPUsOnNode: "1",
	}
	for _, name := range jobenv.Names() {
		if _, ok := env[name]; !ok {
			env[name] = "3"
		}
	}
	return env
}

// localityFacts is what a locality made of its Config.
type localityFacts struct {
	Here, N        uint32
	RootAddr       string
	Progress       Progress
	Transport      string
	Port           string // the parcelport's type
	TCPCongestion  string
	NodeLocalities int
	NodeCPUs       int
	Trace          TraceConfig
	Tracing        bool
	MetricsAddr    string
	Greeting       string // what a call to the next locality returned
}

// runInProcess runs a job of two localities through StartLocal and one
// through Start over TCP on the loopback, each calling an action on the
// other, and returns what their localities made of their Config.
func runInProcess(t *testing.T) []localityFacts {
	t.Helper()
	ctx := testCtx(t)
	reg, a := newEchoActions()
	job, err := StartLocal(ctx, 2, Config{Registry: reg})
	if err != nil {
		t.Fatalf("StartLocal: %v", err)
	}
	rts := append(job.Localities, startTCPWith(t, 2, Config{Registry: reg})...)
	facts := make([]localityFacts, len(rts))
	for i, rt := range rts {
		c := rt.cfg
		greeting, err := Async(ctx, rt.Locality((rt.here+1)%rt.n), a.greet, rt.here).Get(ctx)
		if err != nil {
			t.Fatalf("locality %d of job %d: %v", rt.here, i/2, err)
		}
		greeting, _, _ = strings.Cut(greeting, " (task") // the task's GUID differs from run to run
		facts[i] = localityFacts{Here: rt.here, N: rt.n, RootAddr: c.RootAddr, Progress: c.Progress, Transport: c.Transport,
			Port: fmt.Sprintf("%T", rt.port), TCPCongestion: c.TCPCongestion, NodeLocalities: c.NodeLocalities,
			NodeCPUs: c.NodeCPUs, Trace: c.Trace, Tracing: rt.tracing != nil, MetricsAddr: rt.MetricsAddr(), Greeting: greeting}
		if i >= 2 {
			facts[i].RootAddr = "" // a port of the kernel's choosing
		}
	}
	if err := job.Run(ctx, func(context.Context, *Runtime) error { return nil }); err != nil {
		t.Fatalf("StartLocal's job: %v", err)
	}
	finalizeAll(t, rts[2:])
	return facts
}

// Setting every variable of the launch protocol (package jobenv) changes
// nothing in a job started in this process: Start and StartLocal use their
// Config as given, so a developer's TESSERA_TRACE or TESSERA_PROGRESS does
// not change what the tests do. Only Main reads the environment.
func TestEnvironmentDoesNotReachStart(t *testing.T) {
	names := jobenv.Names()
	for _, name := range names {
		t.Setenv(name, "") // restored when the test ends
		os.Unsetenv(name)
	}
	plain := runInProcess(t)
	for _, f := range plain {
		if f.Progress != ProgressBlock || f.Transport != "" || f.Tracing || f.MetricsAddr != "" || f.TCPCongestion != "" {
			t.Fatalf("without the environment: %+v", f)
		}
	}

	traceDir, secretDir := t.TempDir(), t.TempDir()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	profile := filepath.Join(cwd, "tessera-profile.csv")
	_, profileBefore := os.Stat(profile)
	for name, v := range hostileEnv(traceDir, secretDir) {
		t.Setenv(name, v)
	}
	hostile := runInProcess(t)
	if !reflect.DeepEqual(hostile, plain) {
		t.Errorf("with every variable set, the localities differ:\n got %+v\nwant %+v", hostile, plain)
	}
	for i, f := range hostile {
		want := fmt.Sprintf("%T", &parcel.Inproc{}) // StartLocal's
		if i >= 2 {
			want = fmt.Sprintf("%T", &parcel.SHM{}) // Config.Transport ""
		}
		if f.Port != want {
			t.Errorf("locality %d of job %d runs on %s, want %s", f.Here, i/2, f.Port, want)
		}
	}
	for _, dir := range []string{traceDir, secretDir} {
		if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
			t.Errorf("%s holds %v (%v), want nothing: no trace, no secret file", dir, entries, err)
		}
	}
	if _, err := os.Stat(profile); errors.Is(profileBefore, os.ErrNotExist) && err == nil {
		os.Remove(profile)
		t.Errorf("a profile was written to %s", profile)
	}
}
