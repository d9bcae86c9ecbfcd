package trace

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The tests in this file read a run's archive the way viewers do, with the
// reference readers (see otf2_tools_test.go): Traveler through the text of
// otf2-print, a reader that keeps one value per Metric record through
// python3-otf2.

// sampledRun is a two-locality run whose samplers report fixed counters.
type sampledRun struct {
	anchor        string
	lanes         uint64
	before, after time.Time // wall clock around the run
	a             *OTF2Archive
}

// sampledCounters is what locality loc's counters read.
func sampledCounters(loc uint32) RuntimeSample {
	return RuntimeSample{TaskQueueLen: 3 + int(loc), CallsInFlight: 20 + int(loc), ParcelsQueued: 1,
		ParcelsSent: 1_234_567 + uint64(loc), BytesSent: 123_456_789_012 + uint64(loc)}
}

// wantSample is the value metric (a SampleMetrics name) of locality loc
// must have, false for those of the process (CPU, memory).
func wantSample(metric string, loc uint32) (float64, bool) {
	c := sampledCounters(loc)
	switch metric {
	case "Task queue length":
		return float64(c.TaskQueueLen), true
	case "Calls in flight":
		return float64(c.CallsInFlight), true
	case "Parcels queued":
		return float64(c.ParcelsQueued), true
	case "Parcels sent":
		return float64(c.ParcelsSent), true
	case "Bytes sent":
		return float64(c.BytesSent), true
	}
	return 0, false
}

// runSampled runs two localities, started a little apart (so their
// clocks have different origins), each with two lanes of tasks and a
// sampler, and merges their archive.
func runSampled(t *testing.T) sampledRun {
	t.Helper()
	r := sampledRun{lanes: 2, before: time.Now()}
	dir := t.TempDir()
	var trs []*Tracer
	var sampled [2]atomic.Int32
	for loc := range uint32(2) {
		tr, err := NewTracer(TracerConfig{Dir: dir, Locality: loc, Lanes: int(r.lanes), Host: "host-a"})
		must(t, err)
		tr.StartSampler(5*time.Millisecond, func() RuntimeSample {
			sampled[loc].Add(1)
			return sampledCounters(loc)
		})
		trs = append(trs, tr)
		time.Sleep(3 * time.Millisecond) // the next tracer's clock starts later
	}
	for loc, tr := range trs {
		runFakeLocality(t, tr, uint32(loc), int(r.lanes), 300)
	}
	for loc := range sampled { // a sample of the ticker between the start's and the end's
		waitSampled(t, &sampled[loc], 2)
	}
	for _, tr := range trs {
		must(t, tr.Close())
	}
	r.after = time.Now()
	res, err := MergeOTF2(context.Background(), dir, 2, 5*time.Second)
	must(t, err)
	r.anchor = res.Anchor
	if r.a, err = ReadOTF2(r.anchor); err != nil {
		t.Fatal(err)
	}
	if p := CheckOTF2(r.a); len(p) > 0 {
		t.Fatalf("CheckOTF2: %d problems, first %s", len(p), p[0])
	}
	for loc := range uint32(2) {
		if n := r.samples(loc); n < 3 {
			t.Fatalf("locality %d took %d samples, want one at the start, one of the ticker and one at the end", loc, n)
		}
	}
	return r
}

// samples is the number of samples (distinct times) on the sampler's
// location of locality loc.
func (r sampledRun) samples(loc uint32) int {
	n, last := 0, uint64(0)
	for _, ev := range r.a.Events[uint64(loc)<<32|r.lanes] {
		if ev.Time != last || n == 0 {
			n++
		}
		last = ev.Time
	}
	return n
}

// checkMetrics checks what a viewer kept, metric name -> time -> value:
// every metric of every locality, once per sample, with the counters'
// values.
func (r sampledRun) checkMetrics(t *testing.T, reader string, kept map[string]map[uint64]float64) {
	t.Helper()
	if len(kept) != 2*len(SampleMetrics()) {
		t.Errorf("%s: %d metrics, want %d: %v", reader, len(kept), 2*len(SampleMetrics()), keys(kept))
	}
	for loc := range uint32(2) {
		n := r.samples(loc)
		if n < 2 { // at the start and at the end
			t.Fatalf("locality %d took %d samples", loc, n)
		}
		for _, m := range SampleMetrics() {
			name := fmt.Sprintf("%s (locality %d)", m.Name, loc)
			vs := kept[name]
			if len(vs) != n {
				t.Errorf("%s: %d values of %q, the locality took %d samples", reader, len(vs), name, n)
			}
			want, fixed := wantSample(m.Name, loc)
			for ts, v := range vs {
				switch {
				case fixed && v != want:
					t.Errorf("%s: %q at %d is %v, want %v", reader, name, ts, v, want)
				case m.Name == "Resident set size" && runtime.GOOS == "linux" && v < 1<<20:
					t.Errorf("%s: %q at %d is %v", reader, name, ts, v)
				case v < 0:
					t.Errorf("%s: %q at %d is %v", reader, name, ts, v)
				}
			}
		}
	}
}

// checkTimes checks that the times a viewer read are below 2^53 (exact in
// a double) and that the clock properties put the run where it was.
func (r sampledRun) checkTimes(t *testing.T, reader string, maxTime uint64) {
	t.Helper()
	if maxTime >= 1<<53 || float64(maxTime) != float64(int64(maxTime)) {
		t.Errorf("%s: a time of %d, not exact in a double", reader, maxTime)
	}
	first, ok := r.a.Clock.WallClock(r.a.Clock.GlobalOffset)
	last, _ := r.a.Clock.WallClock(maxTime)
	if !ok || first.Before(r.before) || last.After(r.after) {
		t.Errorf("%s: events from %v to %v, the run went from %v to %v", reader, first, last, r.before, r.after)
	}
}

func keys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// The lines of otf2-print that Traveler reads, as it reads them: an event
// line starts with its kind, location and time; a METRIC line's first
// value is taken, its number read as the last run of digits and points.
var (
	travelerEvent  = regexp.MustCompile(`^(ENTER|LEAVE|METRIC)\s+(\d+)\s+(\d+)\s`)
	travelerMetric = regexp.MustCompile(`^METRIC\s+\d+\s+(\d+)\s+Metric: [\d, ]+Values?: \("([^"]*)" <\d+>; [^;]*; ([^)]*)`)
	travelerNumber = regexp.MustCompile(`[0-9.]+`)
)

// TestTravelerReadsEveryMetric reads a run's archive as Traveler does,
// from otf2-print's text, keeping per metric name the value at each time:
// every metric of every locality survives, with its value, and every time
// is exact in a double.
func TestTravelerReadsEveryMetric(t *testing.T) {
	tool := needOTF2Print(t)
	r := runSampled(t)
	counts := map[uint64]int{}
	for id, evs := range r.a.Events {
		counts[id] = len(evs)
	}
	checkOTF2Print(t, r.anchor, counts) // exits 0, no stderr, every event
	out, err := exec.Command(tool, r.anchor).Output()
	must(t, err)
	kept := map[string]map[uint64]float64{}
	var maxTime uint64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		line := sc.Text()
		ev := travelerEvent.FindStringSubmatch(line)
		if ev == nil {
			continue
		}
		ts, _ := strconv.ParseUint(ev[3], 10, 64)
		maxTime = max(maxTime, ts)
		if ev[1] != "METRIC" {
			continue
		}
		m := travelerMetric.FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("a METRIC line Traveler does not read: %q", line)
		}
		nums := travelerNumber.FindAllString(m[3], -1)
		v, err := strconv.ParseFloat(nums[len(nums)-1], 64)
		if err != nil || strings.TrimSpace(m[3]) != nums[len(nums)-1] {
			t.Fatalf("Traveler reads %v from %q: %q", v, m[3], line)
		}
		if kept[m[2]] == nil {
			kept[m[2]] = map[uint64]float64{}
		}
		kept[m[2]][ts] = v
	}
	r.checkMetrics(t, "otf2-print as Traveler reads it", kept)
	r.checkTimes(t, "otf2-print", maxTime)
}

// TestPythonReadsEveryMetric reads a run's archive with python3-otf2,
// keeping the first value of each Metric record, and the names of the
// locations and their groups.
func TestPythonReadsEveryMetric(t *testing.T) {
	py := pythonWithOTF2(t)
	r := runSampled(t)
	const script = `
import json, sys, otf2
kept, locs, max_time, inexact = {}, {}, 0, []
with otf2.reader.open(sys.argv[1]) as tr:
    for l in tr.definitions.locations:
        locs[str(l._ref)] = [l.name, l.group.name]
    for loc, ev in tr.events:
        max_time = max(max_time, ev.time)
        if float(ev.time) != ev.time:
            inexact.append(ev.time)
        if isinstance(ev, otf2.events.Metric):
            name = ev.metric.members[0].name
            kept.setdefault(name, {})[str(ev.time)] = float(ev.values[0])
print(json.dumps({"kept": kept, "locs": locs, "max_time": max_time, "inexact": inexact[:5]}))
`
	var stderr bytes.Buffer
	cmd := exec.Command(py, "-c", script, r.anchor)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3-otf2: %v\n%s", err, stderr.String())
	}
	var res struct {
		Kept    map[string]map[string]float64
		Locs    map[string][2]string
		MaxTime uint64 `json:"max_time"`
		Inexact []uint64
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("python3-otf2 printed %q: %v", out, err)
	}
	kept := map[string]map[uint64]float64{}
	for name, vs := range res.Kept {
		kept[name] = map[uint64]float64{}
		for ts, v := range vs {
			n, err := strconv.ParseUint(ts, 10, 64)
			must(t, err)
			kept[name][n] = v
		}
	}
	r.checkMetrics(t, "python3-otf2", kept)
	r.checkTimes(t, "python3-otf2", res.MaxTime)
	if len(res.Inexact) > 0 {
		t.Errorf("python3-otf2: times not exact in a double: %v", res.Inexact)
	}
	for _, l := range r.a.Locations {
		loc, lane := l.ID>>32, l.ID&0xffffffff
		want := [2]string{fmt.Sprintf("locality %d lane %d", loc, lane), fmt.Sprintf("locality %d", loc)}
		if lane == r.lanes {
			want[0] = fmt.Sprintf("locality %d samples", loc)
		}
		if got := res.Locs[strconv.FormatUint(l.ID, 10)]; got != want {
			t.Errorf("python3-otf2: location %d is %q, want %q", l.ID, got, want)
		}
	}
}
