package trace

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// The golden archive testdata/otf2/tessera-run is what two tracers and
// MergeOTF2 write for a fixed run: two localities on two hosts, their
// origins 2.5 ms apart, two lanes each with tasks that yield and resume,
// and two samples of every metric. Beside it, tessera-run.otf2-print.txt
// is what otf2-print 3.0.2 printed for it. TESSERA_UPDATE_GOLDEN=1
// rewrites both (the text only with otf2-print installed).

const goldenRunName = "tessera-run"

// writeGoldenRun writes the fixed run's archive in dir.
func writeGoldenRun(t *testing.T, dir string) string {
	t.Helper()
	base := uint64(time.Date(2026, 11, 28, 6, 0, 0, 0, time.UTC).UnixNano())
	for loc := range uint32(2) {
		tr, err := NewTracer(TracerConfig{Dir: dir, Locality: loc, Lanes: 2, Host: []string{"node-a", "node-b"}[loc]})
		must(t, err)
		tr.origin = base + uint64(loc)*2_500_000
		g := uint64(loc) << 44
		lane := func(i int, f func(l *laneLog)) {
			l := &tr.lanes[i]
			l.mu.Lock()
			f(l)
			l.mu.Unlock()
		}
		main, step := tr.region("main"), tr.region("example.step")
		lane(0, func(l *laneLog) {
			l.enter(1000, main, g|1, 0)
			l.leave(1500, main) // yields
		})
		lane(1, func(l *laneLog) {
			l.enter(1200, step, g|2, g|1)
			l.leave(2600, step)
			l.enter(2600, main, g|1, 0) // resumes here
			l.leave(3000, main)
		})
		lane(0, func(l *laneLog) {
			l.enter(1700, step, g|3, g|1)
			l.leave(2900, step)
		})
		lane(2, func(l *laneLog) {
			for i, ts := range []uint64{1100, 3100} {
				values := []OTF2MetricValue{DoubleMetric(12.345 * float64(i+1)), U64Metric(123_456_789 + uint64(i)),
					U64Metric(uint64(2 - i)), U64Metric(uint64(loc)), U64Metric(0), U64Metric(1_000_001 * uint64(i)), U64Metric(4_000_000_123 * uint64(i)),
					U64Metric(uint64(3 + i)), U64Metric(8_192 * uint64(3+i)), U64Metric(uint64(5 + i))}
				for ref, v := range values {
					l.metric(ts, uint32(ref), v)
				}
			}
		})
		must(t, tr.Close())
	}
	res, err := MergeOTF2(context.Background(), dir, 2, time.Second)
	must(t, err)
	must(t, os.RemoveAll(PartsDir(dir))) // not part of the archive
	return res.Anchor
}

func TestTesseraArchiveGolden(t *testing.T) {
	golden := filepath.Join("testdata", "otf2", goldenRunName)
	printed := golden + ".otf2-print.txt"
	dir := t.TempDir()
	anchor := writeGoldenRun(t, dir)
	if os.Getenv("TESSERA_UPDATE_GOLDEN") == "1" {
		must(t, os.RemoveAll(golden))
		copyDir(t, dir, golden)
		if tool, err := exec.LookPath("otf2-print"); err == nil {
			out, err := exec.Command(tool, filepath.Join(golden, ArchiveName+".otf2")).Output()
			must(t, err)
			must(t, os.WriteFile(printed, out, 0o644))
		}
	}
	compareArchives(t, dir, golden)

	want, err := os.ReadFile(printed)
	must(t, err)
	a, err := ReadOTF2(filepath.Join(golden, ArchiveName+".otf2"))
	must(t, err)
	if p := CheckOTF2(a); len(p) > 0 {
		t.Errorf("CheckOTF2: %v", p)
	}
	var ours bytes.Buffer
	must(t, a.PrintEvents(&ours))
	if ours.String() != string(want) {
		t.Errorf("PrintEvents:\n%s\nwant (otf2-print's):\n%s", ours.String(), want)
	}
	if _, err := exec.LookPath("otf2-print"); err != nil {
		return // the text above is otf2-print's
	}
	counts := map[uint64]int{}
	for id, evs := range a.Events {
		counts[id] = len(evs)
	}
	if out := checkOTF2Print(t, anchor, counts); out != string(want) {
		t.Errorf("otf2-print now prints:\n%s", out)
	}
}
