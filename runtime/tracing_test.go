package runtime

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/trace"
)

// countingObserver counts the observer calls it sees after the tracer's.
type countingObserver struct{ start, stop, yield, resume atomic.Int64 }

func (o *countingObserver) TaskStart(TaskInfo)  { o.start.Add(1) }
func (o *countingObserver) TaskStop(TaskInfo)   { o.stop.Add(1) }
func (o *countingObserver) TaskYield(TaskInfo)  { o.yield.Add(1) }
func (o *countingObserver) TaskResume(TaskInfo) { o.resume.Add(1) }

// In one process, three localities trace tasks that spawn tasks, call
// actions on each other and wait (yield); the archive locality 0 merges
// holds every task once with its name and parent, and the Perfetto
// timeline is written beside it.
func TestTracingLocalJob(t *testing.T) {
	dir := t.TempDir()
	reg := NewRegistry()
	var hop Action[int, int]
	hop = Register(reg, "tracetest.hop", func(ctx context.Context, n int) (int, error) {
		if n == 0 {
			return 1, nil
		}
		rt := FromContext(ctx)
		f := Async(ctx, rt.Locality((rt.Here()+1)%rt.NumLocalities()), hop, n-1)
		g := Spawn(ctx, rt, func(ctx context.Context) (int, error) { return 1, nil })
		a, err := f.Get(ctx)
		if err != nil {
			return 0, err
		}
		b, err := g.Get(ctx)
		return a + b, err
	})
	obs := &countingObserver{}
	cfg := Config{Registry: reg, Lanes: 2, Observer: obs,
		Trace: TraceConfig{Dir: dir, Formats: []string{"otf2", "perfetto"}, Sample: 5 * time.Millisecond}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job, err := StartLocal(ctx, 3, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var total atomic.Int64
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		for range 20 {
			n, err := Async(ctx, rt.Locality(rt.Here()), hop, 4).Get(ctx)
			if err != nil {
				return err
			}
			total.Add(int64(n))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	a := readCheckedArchive(t, dir)
	tasks := map[uint64]string{}
	parents := map[uint64]uint64{}
	enters := 0
	for _, l := range a.Locations {
		for _, ev := range a.Events[l.ID] {
			if ev.Kind != trace.OTF2Enter {
				continue
			}
			enters++
			guid, parent := ev.Attrs[0].Value, ev.Attrs[1].Value
			name := a.StringOf(a.Regions[ev.Region].Name)
			if old, ok := tasks[guid]; ok && old != name {
				t.Fatalf("task %d is %q and %q", guid, old, name)
			}
			tasks[guid], parents[guid] = name, parent
			if name == "tracetest.hop" && GUIDLocality(guid) != uint32(l.ID>>32) && GUIDLocality(parent) == uint32(l.ID>>32) {
				t.Fatalf("task %d runs on locality %d, made by %d", guid, l.ID>>32, GUIDLocality(guid))
			}
		}
	}
	// Tasks: each hop(4) chain is 5 hops and 4 spawned tasks, per call: 9;
	// plus one body task per locality.
	if want := 3*20*9 + 3; len(tasks) != want {
		t.Fatalf("%d tasks in the archive, want %d", len(tasks), want)
	}
	for g, p := range parents {
		if _, ok := tasks[p]; p != 0 && !ok {
			t.Fatalf("task %d (%s): parent %d is no task of the trace", g, tasks[g], p)
		}
	}
	var sawRemote, sawLocal bool
	for g, name := range tasks {
		sawRemote = sawRemote || name == "tracetest.hop" && GUIDLocality(parents[g]) != GUIDLocality(g)
		sawLocal = sawLocal || strings.HasPrefix(name, "runtime.TestTracingLocalJob.")
	}
	if !sawRemote || !sawLocal {
		t.Fatalf("remote hop tasks named: %v, local tasks named after their function: %v", sawRemote, sawLocal)
	}
	if int(obs.start.Load()+obs.resume.Load()) != enters {
		t.Errorf("the program's observer saw %d starts and resumes, the trace has %d Enter events", obs.start.Load()+obs.resume.Load(), enters)
	}
	b, err := os.ReadFile(filepath.Join(dir, "trace.json"))
	if err != nil || !json.Valid(b) {
		t.Fatalf("trace.json: %v (valid JSON: %v)", err, json.Valid(b))
	}
}

// The environment fills what the program left unset, and bad values are
// refused with the variable's name.
func TestTraceConfigEnvironment(t *testing.T) {
	env := map[string]string{"TESSERA_TRACE": "/from/env", "TESSERA_TRACE_FORMAT": "otf2, perfetto",
		"TESSERA_PROFILE": "csv", "TESSERA_TRACE_SAMPLE": "250ms"}
	getenv := func(k string) string { return env[k] }
	cfg, _, err := fromEnvironment(Config{}, getenv, "", noListener)
	if err != nil {
		t.Fatal(err)
	}
	c := cfg.Trace
	if c.Dir != "/from/env" || strings.Join(c.Formats, "+") != "otf2+perfetto" || c.Profile != "csv" || c.Sample != 250*time.Millisecond {
		t.Fatalf("from the environment: %+v", c)
	}
	cfg, _, err = fromEnvironment(Config{Trace: TraceConfig{Dir: "/mine", Formats: []string{"otf2"}, Profile: "screen", Sample: -1}}, getenv, "", noListener)
	if err != nil {
		t.Fatal(err)
	}
	c = cfg.Trace
	if c.Dir != "/mine" || len(c.Formats) != 1 || c.Profile != "screen" || c.Sample != -1 {
		t.Fatalf("the program's settings were overridden: %+v", c)
	}
	for k, v := range map[string]string{"TESSERA_TRACE_FORMAT": "otf2,chrome", "TESSERA_PROFILE": "html", "TESSERA_TRACE_SAMPLE": "often"} {
		bad := map[string]string{k: v}
		_, _, err := fromEnvironment(Config{}, func(k string) string { return bad[k] }, "", noListener)
		if err == nil || !strings.Contains(err.Error(), k[len("TESSERA_"):]) && !strings.Contains(err.Error(), k) {
			t.Errorf("%s=%s: %v", k, v, err)
		}
	}
}

// laneRecorder keeps, per lane, the events a TaskObserver sees, in order.
type laneRecorder struct {
	mu    sync.Mutex
	lanes map[int][]laneEvent
}

type laneEvent struct {
	enter        bool // a start or a resume; else a stop or a yield
	guid, parent uint64
	name         string
}

func (r *laneRecorder) add(i TaskInfo, enter bool) {
	r.mu.Lock()
	r.lanes[i.Lane] = append(r.lanes[i.Lane], laneEvent{enter, i.GUID, i.Parent, trace.RegionName(i.Name)})
	r.mu.Unlock()
}

func (r *laneRecorder) TaskStart(i TaskInfo)  { r.add(i, true) }
func (r *laneRecorder) TaskStop(i TaskInfo)   { r.add(i, false) }
func (r *laneRecorder) TaskYield(i TaskInfo)  { r.add(i, false) }
func (r *laneRecorder) TaskResume(i TaskInfo) { r.add(i, true) }

// The scheduler hands each start, stop, yield and resume to the tracer
// and to the program's observer: on every lane, the archive's Enter and
// Leave events are the observer's, in the same order, with the same GUID,
// parent and name. The tasks yield (they wait for a task running on the
// other lane) and run the tasks they wait for themselves.
func TestTracerSeesWhatTheObserverSees(t *testing.T) {
	dir := t.TempDir()
	rec := &laneRecorder{lanes: map[int][]laneEvent{}}
	cfg := Config{Lanes: 2, Observer: rec, Trace: TraceConfig{Dir: dir, Sample: -1}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	job, err := StartLocal(ctx, 1, cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = job.Run(ctx, func(ctx context.Context, rt *Runtime) error {
		var fs []*Future[int]
		for i := range 200 {
			fs = append(fs, Spawn(ctx, rt, func(ctx context.Context) (int, error) {
				g := SpawnNamed(ctx, rt, "tracetest.leaf", func(context.Context) (int, error) {
					if i%4 == 0 { // long enough that its parent waits for it
						time.Sleep(100 * time.Microsecond)
					}
					return i, nil
				})
				return g.Get(ctx)
			}))
		}
		return WhenAll(fs...).Err(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	a := readCheckedArchive(t, dir)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	lanes, enters, guids := 0, 0, map[uint64]bool{}
	for _, l := range a.Locations {
		lane := int(uint32(l.ID))
		if lane >= cfg.Lanes {
			continue // the sampler's location
		}
		lanes++
		var got []laneEvent
		for _, ev := range a.Events[l.ID] {
			e := laneEvent{enter: ev.Kind == trace.OTF2Enter, name: a.StringOf(a.Regions[ev.Region].Name)}
			if e.enter {
				e.guid, e.parent = ev.Attrs[0].Value, ev.Attrs[1].Value
			}
			got = append(got, e)
		}
		want := rec.lanes[lane]
		for i := range want {
			if !want[i].enter {
				want[i].guid, want[i].parent = 0, 0 // a Leave carries no attributes
			}
		}
		if len(got) != len(want) {
			t.Fatalf("lane %d: %d events in the archive, the observer saw %d", lane, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("lane %d, event %d: the archive has %+v, the observer saw %+v", lane, i, got[i], want[i])
			}
		}
		if len(got) < 2*200/cfg.Lanes {
			t.Errorf("lane %d: only %d events", lane, len(got))
		}
		for i := 1; i < len(got); i++ {
			if got[i].enter && got[i-1].enter {
				t.Fatalf("lane %d, event %d: two Enters in a row", lane, i)
			}
		}
		for _, e := range got {
			if e.enter {
				enters++
				guids[e.guid] = true
			}
		}
	}
	if lanes != cfg.Lanes {
		t.Fatalf("%d lane locations in the archive, want %d", lanes, cfg.Lanes)
	}
	if enters == len(guids) {
		t.Errorf("%d tasks, none resumed after a yield", len(guids))
	}
}

// readCheckedArchive reads the job's OTF2 archive in dir and fails the
// test if it cannot, or if trace.CheckOTF2 finds a problem in it.
func readCheckedArchive(t *testing.T, dir string) *trace.OTF2Archive {
	t.Helper()
	a, err := trace.ReadOTF2(filepath.Join(dir, trace.ArchiveName+".otf2"))
	if err != nil {
		t.Fatal(err)
	}
	if p := trace.CheckOTF2(a); len(p) > 0 {
		t.Fatalf("CheckOTF2: %d problems, first: %s", len(p), p[0])
	}
	return a
}
