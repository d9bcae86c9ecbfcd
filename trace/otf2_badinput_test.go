package trace

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyGolden copies a golden archive into a temporary directory, writable.
func copyGolden(t *testing.T, name string) string {
	t.Helper()
	dst := t.TempDir()
	copyDir(t, filepath.Join("testdata", "otf2", name), dst)
	return dst
}

// copyDir copies the tree src into dst, writable.
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestOTF2ReadBadInput(t *testing.T) {
	type damage func(t *testing.T, dir string)
	truncate := func(file string, keep func(n int) int) damage {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			must(t, os.WriteFile(p, b[:keep(len(b))], 0o644))
		}
	}
	patch := func(file string, off int, v ...byte) damage {
		return func(t *testing.T, dir string) {
			p := filepath.Join(dir, file)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			copy(b[off:], v)
			must(t, os.WriteFile(p, b, 0o644))
		}
	}
	for _, tc := range []struct {
		name   string
		damage damage
		file   string // the error must name it
		want   string // and contain this
	}{
		{"missing anchor", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, "traces.otf2"))) }, "traces.otf2", "no such file"},
		{"empty anchor", truncate("traces.otf2", func(int) int { return 0 }), "traces.otf2", "truncated"},
		{"truncated anchor", truncate("traces.otf2", func(n int) int { return n - 20 }), "traces.otf2", "truncated"},
		{"wrong magic", patch("traces.otf2", 2, 'X'), "traces.otf2", "magic"},
		{"wrong endianness", patch("traces.otf2", 1, 0x23), "traces.otf2", "not an OTF2 anchor"},
		{"wrong version", patch("traces.otf2", 9, 2), "traces.otf2", "version"},
		{"wrong chunk size", patch("traces.otf2", 12, 0, 0, 0, 0), "traces.otf2", "chunk size"},
		{"missing definitions", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, "traces.def"))) }, "traces.def", "no such file"},
		{"truncated definitions", truncate("traces.def", func(n int) int { return n - 30 }), "traces.def", "runs past the end"},
		{"definitions without end", truncate("traces.def", func(n int) int { return n - 2 }), "traces.def", ""},
		{"wrong definition count", patch("traces.otf2", 0x26, 19), "traces.def", "20 definitions, the anchor file says 19"},
		{"missing event file", func(t *testing.T, dir string) { must(t, os.Remove(filepath.Join(dir, "traces", "0.evt"))) }, "0.evt", "no such file"},
		{"truncated event file", truncate("traces/0.evt", func(n int) int { return n - 5 }), "0.evt", ""},
		{"truncated event header", truncate("traces/0.evt", func(int) int { return 10 }), "0.evt", "truncated header"},
		{"event file without end", truncate("traces/0.evt", func(n int) int { return n - 2 }), "0.evt", "truncated"},
		{"bad event chunk marker", patch("traces/0.evt", 0, 7), "0.evt", "chunk marker"},
		{"wrong event count", patch("traces/0.evt", 10, 9), "0.evt", "last event 9"},
		{"time backwards", patch("traces/0.evt", 0x2b, 0x01, 0x01), "0.evt", "backwards"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyGolden(t, "tiny")
			tc.damage(t, dir)
			_, err := ReadOTF2(filepath.Join(dir, "traces.otf2"))
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tc.file) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q: want it to name %s and say %q", err, tc.file, tc.want)
			}
		})
	}
}

// FuzzReadEvents feeds event files to the event decoder: it may fail but
// must not panic, and what it accepts the writer writes back readably.
// Seeds: testdata/fuzz/FuzzReadEvents (the golden event files and
// damaged copies), run by plain `go test`.
func FuzzReadEvents(f *testing.F) {
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, _, err := ReadOTF2Events(data, OTF2MinChunkSize, 1)
		if err != nil {
			return
		}
		dir := t.TempDir()
		w, err := CreateOTF2(OTF2Config{Dir: dir})
		if err != nil {
			t.Fatal(err)
		}
		ew, err := w.Location(1, "l", 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, ev := range evs {
			switch ev.Kind {
			case OTF2Enter:
				err = ew.Enter(ev.Time, ev.Region, ev.Attrs...)
			case OTF2Leave:
				err = ew.Leave(ev.Time, ev.Region, ev.Attrs...)
			case OTF2Metric:
				err = ew.Metric(ev.Time, ev.Metric, ev.Values...)
			}
			if err != nil {
				t.Fatalf("rewriting accepted event %+v: %v", ev, err)
			}
		}
		must(t, w.Close())
		b, err := os.ReadFile(filepath.Join(dir, "traces", "1.evt"))
		if err != nil {
			t.Fatal(err)
		}
		back, _, err := ReadOTF2Events(b, OTF2DefaultEvtChunkSize, 1)
		if err != nil {
			t.Fatalf("reading back: %v", err)
		}
		if len(back) != len(evs) {
			t.Fatalf("read back %d events, wrote %d", len(back), len(evs))
		}
	})
}

// FuzzParseAnchor feeds anchor files to the anchor parser.
func FuzzParseAnchor(f *testing.F) {
	for _, name := range []string{"tiny", "two-localities"} {
		b, err := os.ReadFile(goldenAnchor(name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		an, err := ParseOTF2Anchor(data)
		if err == nil && !bytes.HasPrefix(data, []byte("\x03\x42OTF2\x00")) {
			t.Fatalf("accepted %q as %+v", data, an)
		}
	})
}
