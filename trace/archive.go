package trace

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// A run's archive is written in two steps. While the run goes, every
// locality writes the event files of its own locations, with region
// references of its own; when its tracer closes it describes its part in
// DIR/tessera.parts/LOC.json (host, the wall-clock time of its clock's
// origin, locations with their event counts and time span, its region
// names in reference order). MergeOTF2 then unifies the parts that exist:
// one global definition file (strings, attributes, system tree, location
// groups, locations, regions, metrics, clock), the anchor file, and for
// every location a local definition file (otf2_local.go) whose mapping
// tables map its locality's region and metric references to global ones
// and whose clock offsets move its times onto the run's clock — libotf2's
// readers, and ReadOTF2, apply them when they read the events.
//
// Times. A locality's event times are nanoseconds since its tracer's
// origin; the run's clock starts at the earliest origin of the parts, and
// a locality whose origin is d ns later has the clock offset d: its times
// read as d ns later. So every time is nanoseconds since the run's origin
// (a few hours of run stay far below 2^53, exact in a double, as a
// JavaScript viewer holds it), the times of different localities compare
// as their wall clocks did, and the ClockProperties give the wall-clock
// time: the global offset is the first event's time and the realtime
// timestamp its time in ns since the Unix epoch.

// otf2Part is one locality's part of an archive.
type otf2Part struct {
	Locality     uint32         `json:"locality"`
	Host         string         `json:"host"`
	Pid          int            `json:"pid"`
	EvtChunkSize uint64         `json:"evt_chunk_size"`
	Locations    []partLocation `json:"locations"`
	Regions      []string       `json:"regions"` // by locality reference
	// Origin is the wall-clock time of the part's time 0 in ns since the
	// Unix epoch; 0 (parts of earlier versions): times are ns since the
	// epoch.
	Origin uint64 `json:"origin,omitempty"`
}

type partLocation struct {
	ID      uint64 `json:"id"`
	Name    string `json:"name"`
	Events  uint64 `json:"events"`
	First   uint64 `json:"first"` // ns since the part's origin
	Last    uint64 `json:"last"`
	Sampler bool   `json:"sampler,omitempty"`
}

// PartsDir is where the localities describe their parts of the archive in
// the trace directory dir.
func PartsDir(dir string) string { return filepath.Join(dir, ArchiveName+".parts") }

func partPath(dir string, locality uint32) string {
	return filepath.Join(PartsDir(dir), strconv.FormatUint(uint64(locality), 10)+".json")
}

func writePart(dir string, p otf2Part) error {
	pd := PartsDir(dir)
	if err := os.MkdirAll(pd, 0o755); err != nil {
		return fmt.Errorf("trace: locality %d: %w", p.Locality, err)
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("trace: locality %d: %w", p.Locality, err)
	}
	final := partPath(dir, p.Locality)
	tmp := final + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return fmt.Errorf("trace: locality %d: %w", p.Locality, err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("trace: locality %d: %w", p.Locality, err)
	}
	return nil
}

func readPart(path string) (otf2Part, error) {
	var p otf2Part
	b, err := os.ReadFile(path)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("trace: %s: %w", path, err)
	}
	return p, nil
}

// MergeResult says what MergeOTF2 wrote.
type MergeResult struct {
	Anchor  string   // the archive's anchor file (DIR/tessera.otf2)
	Merged  []uint32 // localities whose events the archive holds
	Missing []uint32 // localities of the job that left no part
}

// MergeOTF2 writes the global definitions, the anchor file and the local
// mapping tables of the archive in dir from the parts of the localities
// 0..localities-1 (localities 0 means: whatever parts are there). It waits
// until every part is there, or until wait has passed or ctx ends, and then
// merges the parts it has: a locality that died leaves none, and the
// archive holds the others' events.
func MergeOTF2(ctx context.Context, dir string, localities uint32, wait time.Duration) (MergeResult, error) {
	var res MergeResult
	deadline := time.Now().Add(wait)
	var parts []otf2Part
	for {
		var err error
		parts, err = readParts(dir, localities)
		if err != nil {
			return res, err
		}
		if localities > 0 && uint32(len(parts)) >= localities || !time.Now().Before(deadline) || localities == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return res, fmt.Errorf("trace: merging %s: %w", dir, context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
	if len(parts) == 0 {
		return res, fmt.Errorf("trace: %s: no locality left its part of the trace", PartsDir(dir))
	}
	have := map[uint32]bool{}
	for _, p := range parts {
		have[p.Locality] = true
		res.Merged = append(res.Merged, p.Locality)
	}
	for l := uint32(0); l < localities; l++ {
		if !have[l] {
			res.Missing = append(res.Missing, l)
		}
	}
	anchor, err := writeGlobal(dir, parts)
	res.Anchor = anchor
	return res, err
}

// readParts reads the parts in dir of the localities below localities
// (0: all), in locality order.
func readParts(dir string, localities uint32) ([]otf2Part, error) {
	entries, err := os.ReadDir(PartsDir(dir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("trace: %w", err)
	}
	var parts []otf2Part
	for _, e := range entries {
		if filepath.Ext(e.Name()) != ".json" {
			continue
		}
		p, err := readPart(filepath.Join(PartsDir(dir), e.Name()))
		if err != nil {
			return nil, err
		}
		if localities == 0 || p.Locality < localities {
			parts = append(parts, p)
		}
	}
	slices.SortFunc(parts, func(a, b otf2Part) int { return int(a.Locality) - int(b.Locality) })
	return parts, nil
}

// writeGlobal writes the global definitions, the anchor file and every
// location's local definitions, and returns the anchor's path.
func writeGlobal(dir string, parts []otf2Part) (string, error) {
	chunk := parts[0].EvtChunkSize
	for _, p := range parts {
		if p.EvtChunkSize != chunk {
			return "", fmt.Errorf("trace: %s: locality %d wrote event chunks of %d bytes, locality %d of %d",
				dir, parts[0].Locality, chunk, p.Locality, p.EvtChunkSize)
		}
	}
	w := &OTF2Writer{
		cfg: OTF2Config{Dir: dir, Name: ArchiveName, EvtChunkSize: chunk, DefChunkSize: OTF2DefaultDefChunkSize,
			Creator: "tessera", TimerResolution: 1e9},
		strings: map[string]uint32{}, regions: map[OTF2RegionDef]uint32{}, locIDs: map[uint64]bool{},
	}
	w.Attribute(AttrGUID, "the task's GUID", OTF2TypeUint64)
	w.Attribute(AttrParentGUID, "the GUID of the task that spawned it", OTF2TypeUint64)
	root := w.SystemTreeNode("tessera job", "machine", OTF2UndefinedU32)
	hosts := map[string]uint32{}
	type loc struct {
		partLocation
		group uint32
	}
	var locs []loc
	// The run's origin is the earliest part's; shift(p) is how much later
	// p's is, the clock offset of its locations.
	origin := uint64(math.MaxUint64)
	for _, p := range parts {
		origin = min(origin, p.Origin)
	}
	shift := func(p otf2Part) uint64 { return p.Origin - origin }
	minT, maxT := uint64(math.MaxUint64), uint64(0)
	for _, p := range parts {
		node, ok := hosts[p.Host]
		if !ok {
			node = w.SystemTreeNode(p.Host, "node", root)
			hosts[p.Host] = node
		}
		g := w.LocationGroup(fmt.Sprintf("locality %d", p.Locality), node)
		for _, l := range p.Locations {
			locs = append(locs, loc{l, g})
			if l.Events > 0 {
				minT, maxT = min(minT, l.First+shift(p)), max(maxT, l.Last+shift(p))
			}
		}
	}
	for _, l := range locs {
		n := w.String(l.Name)
		w.add(otf2DefLocation, estU64+estU32+estU8+estU64+estU32, func() []byte {
			b := append(appendU32c(appendU64c(nil, l.ID), n), OTF2LocationCPUThread)
			return appendU32c(appendU64c(b, l.Events), l.group)
		})
	}
	// Regions: the union of the localities' names, each defined once.
	global := map[string]uint32{}
	maps := map[uint32][]uint64{} // locality -> its reference -> global
	for _, p := range parts {
		m := make([]uint64, len(p.Regions))
		for i, name := range p.Regions {
			ref, ok := global[name]
			if !ok {
				ref = w.Region(OTF2RegionDef{Name: name, Role: OTF2RoleTask, Paradigm: OTF2ParadigmUser})
				global[name] = ref
			}
			m[i] = uint64(ref)
		}
		maps[p.Locality] = m
	}
	// Metrics: each locality's own, a class of one member per metric,
	// named after the locality (Traveler tells metrics apart by name
	// only).
	metrics := map[uint32][]uint64{} // locality -> its reference -> global
	for _, p := range parts {
		for _, m := range SampleMetrics() {
			m.Name = fmt.Sprintf("%s (locality %d)", m.Name, p.Locality)
			class := w.MetricClass([]uint32{w.MetricMember(m)}, OTF2OccurrenceAsynchronous, OTF2RecorderKindUnknown)
			metrics[p.Locality] = append(metrics[p.Locality], uint64(class))
		}
	}

	if minT == math.MaxUint64 {
		minT, maxT = 0, 0
	}
	clock := appendU64c(nil, 1e9)
	clock = appendU64c(clock, minT)
	clock = appendU64c(clock, maxT-minT)
	rt := uint64(OTF2UndefinedU64)
	if origin+minT > 0 {
		rt = origin + minT // the wall-clock time of the global offset
	}
	clock = appendU64c(clock, rt)
	defs := append([]otf2Def{{typ: otf2DefClockProperties, est: 4 * estU64, payload: func() []byte { return clock }}}, w.defs...)
	cw := newChunkWriter(nil, w.cfg.DefChunkSize, false)
	for _, d := range defs {
		if err := cw.record(recordEstimate(d.est), appendRecord(nil, d.typ, d.est, d.payload()), false, 0, 0); err != nil {
			return "", fmt.Errorf("trace: %s: %w", dir, err)
		}
	}
	var errs []error
	for _, p := range parts {
		for _, l := range p.Locations {
			path := filepath.Join(dir, ArchiveName, strconv.FormatUint(l.ID, 10)+".def")
			local := otf2LocalDefs{regions: maps[p.Locality], metrics: metrics[p.Locality]}
			if d := shift(p); d > 0 && l.Events > 0 {
				// A constant offset: the same at the first event and after
				// the last (libotf2 needs two, and they must differ in time).
				local.clock = []OTF2ClockOffset{{Time: l.First, Offset: int64(d)}, {Time: max(l.Last, l.First+1), Offset: int64(d)}}
			}
			if err := os.WriteFile(path, local.encode(), 0o644); err != nil {
				errs = append(errs, fmt.Errorf("trace: %w", err))
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, ArchiveName+".def"), cw.finish(), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("trace: %w", err))
	}
	w.locations = make([]*OTF2EventWriter, len(locs)) // counted by the anchor
	if err := os.WriteFile(w.AnchorPath(), w.anchor(uint64(len(defs))), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("trace: %w", err))
	}
	return w.AnchorPath(), errors.Join(errs...)
}
