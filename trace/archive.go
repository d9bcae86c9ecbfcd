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
// DIR/tessera.parts/LOC.json (host, locations with their event counts and
// time span, its region names in reference order). MergeOTF2 then unifies
// the parts that exist: one global definition file (strings, attributes,
// system tree, location groups, locations, regions, metrics, clock), the
// anchor file, and for every location a local definition file whose
// MappingTable maps its locality's region references to global ones —
// libotf2's readers, and ReadOTF2, apply it when they read the events.

// otf2Part is one locality's part of an archive.
type otf2Part struct {
	Locality     uint32         `json:"locality"`
	Host         string         `json:"host"`
	Pid          int            `json:"pid"`
	EvtChunkSize uint64         `json:"evt_chunk_size"`
	Locations    []partLocation `json:"locations"`
	Regions      []string       `json:"regions"` // by locality reference
}

type partLocation struct {
	ID      uint64 `json:"id"`
	Name    string `json:"name"`
	Events  uint64 `json:"events"`
	First   uint64 `json:"first"` // ns since the Unix epoch
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
				minT, maxT = min(minT, l.First), max(maxT, l.Last)
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
	var members []uint32
	for _, m := range SampleMetrics() {
		members = append(members, w.MetricMember(m))
	}
	w.MetricClass(members, OTF2OccurrenceAsynchronous, OTF2RecorderKindUnknown)

	if minT == math.MaxUint64 {
		minT, maxT = 0, 0
	}
	clock := appendU64c(nil, 1e9)
	clock = appendU64c(clock, minT)
	clock = appendU64c(clock, maxT-minT)
	rt := uint64(OTF2UndefinedU64)
	if minT > 0 {
		rt = minT // times are ns since the Unix epoch
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
			if err := os.WriteFile(path, localDefs(maps[p.Locality]), 0o644); err != nil {
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

// OTF2 local definition records and mapping types.
const (
	otf2LocalDefMappingTable = 5
	otf2MappingRegion        = 3
	otf2IDMapDense           = 0
)

// localDefs is a location's local definition file: a dense REGION mapping
// table (record: mapping type, then the id map: u64 size, u8 mode, size
// compressed u64 global ids), or no record when the map is empty.
func localDefs(regions []uint64) []byte {
	cw := newChunkWriter(nil, OTF2DefaultDefChunkSize, false)
	if len(regions) > 0 {
		est := estU8 + estU64 + estU8 + len(regions)*estU64
		p := appendU64c([]byte{otf2MappingRegion}, uint64(len(regions)))
		p = append(p, otf2IDMapDense)
		for _, g := range regions {
			p = appendU64c(p, g)
		}
		_ = cw.record(recordEstimate(est), appendRecord(nil, otf2LocalDefMappingTable, est, p), false, 0, 0)
	}
	return cw.finish()
}

// readRegionMapping reads a location's local definitions (data) and returns
// its REGION mapping (local reference -> global), or nil when it has none.
func readRegionMapping(data []byte, chunkSize uint64) ([]uint64, error) {
	chunks, _, err := splitChunks(data, chunkSize)
	if err != nil {
		return nil, err
	}
	var m []uint64
	for ci, c := range chunks {
		d := &decoder{b: c}
	records:
		for {
			typ := d.u8()
			if d.err != nil {
				return nil, fmt.Errorf("chunk %d: no end marker", ci)
			}
			switch typ {
			case otf2EndOfChunk:
				break records
			case otf2EndOfFile:
				return m, nil
			}
			l := d.recordLen()
			r := &decoder{b: d.bytes(l)}
			if d.err != nil {
				return nil, fmt.Errorf("chunk %d: record %d: %w", ci, typ, d.err)
			}
			if typ != otf2LocalDefMappingTable || r.u8() != otf2MappingRegion {
				continue
			}
			n := r.u64c()
			mode := r.u8()
			if r.err != nil || n > uint64(len(r.b)) {
				return nil, fmt.Errorf("chunk %d: bad mapping table", ci)
			}
			if mode != otf2IDMapDense {
				return nil, fmt.Errorf("chunk %d: sparse region mapping tables are not read", ci)
			}
			for i := uint64(0); i < n; i++ {
				m = append(m, r.u64c())
			}
			if r.err != nil {
				return nil, fmt.Errorf("chunk %d: mapping table: %w", ci, r.err)
			}
		}
	}
	return m, nil
}

// applyRegionMapping reads the local definitions of location loc at defPath
// (a missing file maps nothing) and rewrites the region references of evs.
func applyRegionMapping(defPath string, chunkSize uint64, evs []OTF2Event) error {
	data, err := os.ReadFile(defPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	m, err := readRegionMapping(data, chunkSize)
	if err != nil {
		return fmt.Errorf("%s: %w", defPath, err)
	}
	if m == nil {
		return nil
	}
	for i := range evs {
		if evs[i].Kind != OTF2Enter && evs[i].Kind != OTF2Leave {
			continue
		}
		if r := evs[i].Region; uint64(r) < uint64(len(m)) {
			evs[i].Region = uint32(m[r])
		} else {
			return fmt.Errorf("%s: region %d has no mapping (%d mapped)", defPath, r, len(m))
		}
	}
	return nil
}
