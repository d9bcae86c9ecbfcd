package trace

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The fuzz targets in this file feed the reader's definition and event
// decoders, and then give whatever they accept to the consumers of an
// archive (CheckOTF2, ProfileFromOTF2, WritePerfetto, PrintEvents): none
// may panic, and an archive CheckOTF2 finds sound must be profiled and
// exported without error, as valid JSON. The seeds (golden archives, an
// archive with yielded tasks, damaged copies) run with plain `go test`;
// `go test -fuzz FuzzReadDefinitions ./trace` explores further.

// emptyArchive is an archive with no definitions and no events.
func emptyArchive() *OTF2Archive {
	return &OTF2Archive{
		Path:            "fuzz.otf2",
		Anchor:          OTF2Anchor{EvtChunkSize: OTF2MinChunkSize, DefChunkSize: OTF2MinChunkSize},
		Strings:         map[uint32]string{},
		Attributes:      map[uint32]OTF2AttributeDef{},
		SystemTreeNodes: map[uint32]OTF2SystemTreeNodeDef{},
		LocationGroups:  map[uint32]OTF2LocationGroupDef{},
		Regions:         map[uint32]OTF2RegionRecord{},
		MetricMembers:   map[uint32]OTF2MetricMemberRecord{},
		MetricClasses:   map[uint32]OTF2MetricClassRecord{},
		Events:          map[uint64][]OTF2Event{},
		Skipped:         map[string]int{},
	}
}

// analyse runs the consumers of an archive on a.
func analyse(t *testing.T, a *OTF2Archive) {
	problems := CheckOTF2(a)
	_, _, perr := ProfileFromOTF2(a)
	var b bytes.Buffer
	xerr := WritePerfetto(&b, a)
	if xerr == nil && !json.Valid(b.Bytes()) {
		t.Fatalf("WritePerfetto wrote invalid JSON:\n%s", b.Bytes())
	}
	if len(problems) == 0 && (perr != nil || xerr != nil) {
		t.Fatalf("CheckOTF2 finds no problem, but the profile says %v and the export %v", perr, xerr)
	}
	_ = a.PrintEvents(io.Discard)
}

// fuzzSeeds are the files of the golden archives and of an archive with
// yielded tasks whose names end with suffix, with a truncated and a
// bit-flipped copy of each.
func fuzzSeeds(f *testing.F, suffix string) [][]byte {
	dirs := []string{filepath.Join("testdata", "otf2", "tiny"), filepath.Join("testdata", "otf2", "two-localities"),
		filepath.Join("testdata", "otf2", goldenRunName)}
	own := f.TempDir()
	writeTaskArchive(f, own, twoLocalityRun)
	dirs = append(dirs, own)
	var seeds [][]byte
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(p, suffix) {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			flipped := bytes.Clone(b)
			flipped[len(flipped)/2] ^= 0x5a
			seeds = append(seeds, b, b[:len(b)*2/3], flipped)
			return nil
		})
		if err != nil {
			f.Fatal(err)
		}
	}
	return seeds
}

// FuzzReadDefinitions decodes global definition files; the locations it
// defines get the events of the golden two-localities archive.
func FuzzReadDefinitions(f *testing.F) {
	golden, err := ReadOTF2(goldenAnchor("two-localities"))
	if err != nil {
		f.Fatal(err)
	}
	var evs [][]OTF2Event
	for _, l := range golden.Locations {
		evs = append(evs, golden.Events[l.ID])
	}
	for _, s := range fuzzSeeds(f, ".def") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		a := emptyArchive()
		if _, err := a.readDefs(data, "fuzz.def"); err != nil {
			return
		}
		for i, l := range a.Locations {
			src := evs[i%len(evs)]
			mine := make([]OTF2Event, len(src))
			for j, ev := range src {
				ev.Location = l.ID
				mine[j] = ev
			}
			a.Events[l.ID] = mine
		}
		analyse(t, a)
	})
}

// FuzzAnalyseEvents decodes event files as location 0's events of the
// archive with yielded tasks (its other locations keep theirs).
func FuzzAnalyseEvents(f *testing.F) {
	base, err := ReadOTF2(writeTaskArchive(f, f.TempDir(), twoLocalityRun))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range fuzzSeeds(f, ".evt") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		evs, _, err := ReadOTF2Events(data, OTF2MinChunkSize, 0)
		if err != nil {
			return
		}
		a := *base
		a.Events = maps.Clone(base.Events)
		a.Events[0] = evs
		analyse(t, &a)
	})
}

// FuzzReadLocalDefs decodes local definition files (mapping tables,
// clock offsets) and applies them to the events of the golden run's
// locations.
func FuzzReadLocalDefs(f *testing.F) {
	base, err := ReadOTF2(filepath.Join("testdata", "otf2", goldenRunName, ArchiveName+".otf2"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range fuzzSeeds(f, ".def") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		defs, err := readLocalDefs(data, OTF2DefaultDefChunkSize)
		if err != nil {
			return
		}
		a := *base
		a.Events = map[uint64][]OTF2Event{}
		for id, evs := range base.Events {
			evs = slices.Clone(evs)
			if defs.apply(evs) != nil {
				return
			}
			a.Events[id] = evs
		}
		analyse(t, &a)
	})
}
