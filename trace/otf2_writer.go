package trace

import (
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// OTF2 region roles, paradigms and other enums used by APEX-style traces.
const (
	OTF2RoleFunction uint8 = 1
	OTF2RoleTask     uint8 = 20

	OTF2ParadigmUser uint8 = 1
	OTF2ParadigmNone uint8 = 22

	OTF2LocationGroupProcess uint8 = 1
	OTF2LocationCPUThread    uint8 = 1

	OTF2MetricModeAbsolutePoint uint8 = 0x11
	OTF2BaseDecimal             uint8 = 1
	OTF2OccurrenceAsynchronous  uint8 = 2
	OTF2RecorderKindUnknown     uint8 = 0
)

// OTF2Config describes an archive to write: DIR/NAME.otf2, DIR/NAME.def and
// DIR/NAME/LOC.{evt,def}.
type OTF2Config struct {
	Dir  string
	Name string // APEX uses "APEX"; empty means "traces"

	// Chunk sizes: 0 means libotf2's defaults (1 MiB events, 4 MiB
	// definitions); otherwise between OTF2MinChunkSize and OTF2MaxChunkSize.
	EvtChunkSize uint64
	DefChunkSize uint64

	Machine, Creator, Description string

	// TraceID goes into the anchor file; 0 picks a random one.
	TraceID uint64

	// TimerResolution is the number of ticks per second (0 means 1e9, ns).
	TimerResolution uint64
	// RealtimeTimestamp is the wall-clock time, in ns since the Unix
	// epoch, of the clock properties' global offset: the first event's
	// time. 0 writes it as undefined.
	RealtimeTimestamp uint64
}

// OTF2Attr is one entry of an event's attribute list. Value holds the raw
// bits: the integer itself for integer and reference types,
// math.Float64bits for DOUBLE, math.Float32bits for FLOAT.
type OTF2Attr struct {
	Ref   uint32
	Type  OTF2Type
	Value uint64
}

// U64Attr is an attribute entry of type UINT64.
func U64Attr(ref uint32, v uint64) OTF2Attr {
	return OTF2Attr{Ref: ref, Type: OTF2TypeUint64, Value: v}
}

// OTF2MetricValue is one value of a Metric event (raw bits as in OTF2Attr).
type OTF2MetricValue struct {
	Type  OTF2Type
	Value uint64
}

// DoubleMetric is a metric value of type DOUBLE.
func DoubleMetric(v float64) OTF2MetricValue {
	return OTF2MetricValue{Type: OTF2TypeDouble, Value: math.Float64bits(v)}
}

// U64Metric is a metric value of type UINT64.
func U64Metric(v uint64) OTF2MetricValue {
	return OTF2MetricValue{Type: OTF2TypeUint64, Value: v}
}

// OTF2RegionDef is a Region definition.
type OTF2RegionDef struct {
	Name, Description string
	CanonicalName     string // empty: same as Name
	Role, Paradigm    uint8
	Flags             uint32
}

// OTF2MetricMemberDef is a MetricMember definition.
type OTF2MetricMemberDef struct {
	Name, Description string
	MetricType        uint8
	Mode              uint8
	ValueType         OTF2Type
	Base              uint8
	Exponent          int64
	Unit              string
}

// otf2Def is a global definition record, encoded at Close (a Location's
// event count is known only then).
type otf2Def struct {
	typ     byte
	est     int
	payload func() []byte
}

// OTF2Writer writes one OTF2 archive. Definitions are kept in the order they
// are made (strings on first use) and written by Close; each Location gets
// its own event writer, which streams full chunks to its file. Definition
// methods are safe for concurrent use; each event writer belongs to one
// goroutine at a time.
type OTF2Writer struct {
	cfg OTF2Config

	mu        sync.Mutex
	defs      []otf2Def
	strings   map[string]uint32
	regions   map[OTF2RegionDef]uint32
	nAttrs    uint32
	nNodes    uint32
	nGroups   uint32
	nRegions  uint32
	nMembers  uint32
	nClasses  uint32
	locations []*OTF2EventWriter
	locIDs    map[uint64]bool
	closed    bool
}

// CreateOTF2 starts an archive: it creates DIR and DIR/NAME.
func CreateOTF2(cfg OTF2Config) (*OTF2Writer, error) {
	if cfg.Name == "" {
		cfg.Name = "traces"
	}
	if cfg.EvtChunkSize == 0 {
		cfg.EvtChunkSize = OTF2DefaultEvtChunkSize
	}
	if cfg.DefChunkSize == 0 {
		cfg.DefChunkSize = OTF2DefaultDefChunkSize
	}
	for _, c := range []uint64{cfg.EvtChunkSize, cfg.DefChunkSize} {
		if c < OTF2MinChunkSize || c > OTF2MaxChunkSize {
			return nil, fmt.Errorf("otf2: chunk size %d outside [%d, %d]", c, OTF2MinChunkSize, OTF2MaxChunkSize)
		}
	}
	if cfg.TimerResolution == 0 {
		cfg.TimerResolution = 1e9
	}
	if cfg.TraceID == 0 {
		var b [8]byte
		_, _ = rand.Read(b[:])
		cfg.TraceID = binary.LittleEndian.Uint64(b[:]) | 1
	}
	if err := os.MkdirAll(filepath.Join(cfg.Dir, cfg.Name), 0o755); err != nil {
		return nil, fmt.Errorf("otf2: %w", err)
	}
	return &OTF2Writer{cfg: cfg, strings: map[string]uint32{}, regions: map[OTF2RegionDef]uint32{}, locIDs: map[uint64]bool{}}, nil
}

// AnchorPath is the path of the archive's anchor file (what readers open).
func (w *OTF2Writer) AnchorPath() string {
	return filepath.Join(w.cfg.Dir, w.cfg.Name+".otf2")
}

func (w *OTF2Writer) add(typ byte, est int, payload func() []byte) {
	w.defs = append(w.defs, otf2Def{typ: typ, est: est, payload: payload})
}

// String returns the reference of s, defining it on first use.
func (w *OTF2Writer) String(s string) uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.str(s)
}

func (w *OTF2Writer) str(s string) uint32 {
	if ref, ok := w.strings[s]; ok {
		return ref
	}
	ref := uint32(len(w.strings))
	w.strings[s] = ref
	p := appendString(appendU32c(nil, ref), s)
	w.add(otf2DefString, estU32+estString(s), func() []byte { return p })
	return ref
}

// Attribute defines an attribute (e.g. "GUID", UINT64).
func (w *OTF2Writer) Attribute(name, description string, typ OTF2Type) uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, d := w.str(name), w.str(description)
	ref := w.nAttrs
	w.nAttrs++
	p := appendU32c(append(appendU32c(appendU32c(nil, ref), n), byte(typ)), d)
	w.add(otf2DefAttribute, 3*estU32+estU8, func() []byte { return p })
	return ref
}

// SystemTreeNode defines a node of the system tree; parent is
// OTF2UndefinedU32 for the root.
func (w *OTF2Writer) SystemTreeNode(name, class string, parent uint32) uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, c := w.str(name), w.str(class)
	ref := w.nNodes
	w.nNodes++
	p := appendU32c(appendU32c(appendU32c(appendU32c(nil, ref), n), c), parent)
	w.add(otf2DefSystemTreeNode, 4*estU32, func() []byte { return p })
	return ref
}

// LocationGroup defines a process-type location group under a system tree
// node.
func (w *OTF2Writer) LocationGroup(name string, systemTreeParent uint32) uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.str(name)
	ref := w.nGroups
	w.nGroups++
	p := appendU32c(appendU32c(append(appendU32c(appendU32c(nil, ref), n), OTF2LocationGroupProcess), systemTreeParent), OTF2UndefinedU32)
	w.add(otf2DefLocationGroup, 4*estU32+estU8, func() []byte { return p })
	return ref
}

// Region defines a region (a task's or function's name). Defining the same
// region again returns the first definition's reference.
func (w *OTF2Writer) Region(r OTF2RegionDef) uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ref, ok := w.regions[r]; ok {
		return ref
	}
	n := w.str(r.Name)
	canon := n
	if r.CanonicalName != "" {
		canon = w.str(r.CanonicalName)
	}
	d := w.str(r.Description)
	ref := w.nRegions
	w.nRegions++
	w.regions[r] = ref
	p := appendU32c(nil, ref)
	p = appendU32c(p, n)
	p = appendU32c(p, d)
	p = append(p, 0) // regionType (deprecated)
	p = appendU32c(p, OTF2UndefinedU32)
	p = appendU32c(p, 0)
	p = appendU32c(p, 0)
	p = appendU32c(p, canon)
	p = append(p, r.Role, r.Paradigm)
	p = appendU32c(p, r.Flags)
	w.add(otf2DefRegion, 8*estU32+3*estU8, func() []byte { return p })
	return ref
}

// MetricMember defines a metric member.
func (w *OTF2Writer) MetricMember(m OTF2MetricMemberDef) uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, d, u := w.str(m.Name), w.str(m.Description), w.str(m.Unit)
	ref := w.nMembers
	w.nMembers++
	p := appendU32c(appendU32c(appendU32c(nil, ref), n), d)
	p = append(p, m.MetricType, m.Mode, byte(m.ValueType), m.Base)
	p = appendI64c(p, m.Exponent)
	p = appendU32c(p, u)
	w.add(otf2DefMetricMember, 4*estU32+4*estU8+estU64, func() []byte { return p })
	return ref
}

// MetricClass defines a metric class over members (asynchronous, unknown
// recorder kind when occurrence and recorderKind are those constants).
func (w *OTF2Writer) MetricClass(members []uint32, occurrence, recorderKind uint8) uint32 {
	w.mu.Lock()
	defer w.mu.Unlock()
	ref := w.nClasses
	w.nClasses++
	p := append(appendU32c(nil, ref), byte(len(members)))
	for _, m := range members {
		p = appendU32c(p, m)
	}
	p = append(p, occurrence, recorderKind)
	w.add(otf2DefMetricClass, estU32+estU8+len(members)*estU32+2*estU8, func() []byte { return p })
	return ref
}

// Location defines a CPU-thread location with the given id (APEX and
// Tessera use locality<<32 + lane) in a location group, and returns the
// writer of its events.
func (w *OTF2Writer) Location(id uint64, name string, group uint32) (*OTF2EventWriter, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil, errors.New("otf2: Location after Close")
	}
	if w.locIDs[id] {
		return nil, fmt.Errorf("otf2: location %d defined twice", id)
	}
	n := w.str(name)
	base := filepath.Join(w.cfg.Dir, w.cfg.Name, strconv.FormatUint(id, 10))
	f, err := os.Create(base + ".evt")
	if err != nil {
		return nil, fmt.Errorf("otf2: %w", err)
	}
	ew := &OTF2EventWriter{id: id, f: f, path: base + ".evt", defPath: base + ".def", chunkSize: w.cfg.EvtChunkSize, minTime: math.MaxUint64}
	ew.startChunk()
	w.locIDs[id] = true
	w.locations = append(w.locations, ew)
	w.add(otf2DefLocation, estU64+estU32+estU8+estU64+estU32, func() []byte {
		p := appendU32c(appendU64c(nil, id), n)
		p = append(p, OTF2LocationCPUThread)
		p = appendU64c(p, ew.events)
		return appendU32c(p, group)
	})
	return ew, nil
}

// Close finishes every event writer still open, writes each location's
// (empty) local definitions, the global definitions and the anchor file.
func (w *OTF2Writer) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return nil
	}
	w.closed = true
	var errs []error
	minT, maxT := uint64(math.MaxUint64), uint64(0)
	for _, l := range w.locations {
		if err := l.Close(); err != nil {
			errs = append(errs, err)
		}
		if err := os.WriteFile(l.defPath, emptyChunkedFile(), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("otf2: %w", err))
		}
		if l.events > 0 {
			minT = min(minT, l.minTime)
			maxT = max(maxT, l.lastTime)
		}
	}
	if minT == math.MaxUint64 {
		minT = 0
	}
	clock := appendU64c(nil, w.cfg.TimerResolution)
	clock = appendU64c(clock, minT)
	clock = appendU64c(clock, maxT-min(maxT, minT))
	rt := uint64(OTF2UndefinedU64)
	if w.cfg.RealtimeTimestamp != 0 {
		rt = w.cfg.RealtimeTimestamp
	}
	clock = appendU64c(clock, rt)
	defs := append([]otf2Def{{typ: otf2DefClockProperties, est: 4 * estU64, payload: func() []byte { return clock }}}, w.defs...)

	cw := newChunkWriter(nil, w.cfg.DefChunkSize, false)
	for _, d := range defs {
		p := d.payload()
		if err := cw.record(recordEstimate(d.est), appendRecord(nil, d.typ, d.est, p), false, 0, 0); err != nil {
			errs = append(errs, err)
		}
	}
	defBytes := cw.finish()
	if err := os.WriteFile(filepath.Join(w.cfg.Dir, w.cfg.Name+".def"), defBytes, 0o644); err != nil {
		errs = append(errs, fmt.Errorf("otf2: %w", err))
	}
	if err := os.WriteFile(w.AnchorPath(), w.anchor(uint64(len(defs))), 0o644); err != nil {
		errs = append(errs, fmt.Errorf("otf2: %w", err))
	}
	return errors.Join(errs...)
}

func (w *OTF2Writer) anchor(nDefs uint64) []byte {
	b := []byte{otf2ChunkHeader, otf2Endianness}
	b = appendString(b, "OTF2")
	b = append(b, 3, 2, 3, 0, 2) // anchor format, trace format, version 3.0.2
	b = appendU64(b, w.cfg.EvtChunkSize)
	b = appendU64(b, w.cfg.DefChunkSize)
	b = append(b, 1, 1) // substrate POSIX, compression none
	b = appendU64(b, uint64(len(w.locations)))
	b = appendU64(b, nDefs)
	b = appendString(b, w.cfg.Machine)
	b = appendString(b, w.cfg.Creator)
	b = appendString(b, w.cfg.Description)
	b = binary.LittleEndian.AppendUint32(b, 0) // properties
	b = appendU64(b, w.cfg.TraceID)
	b = binary.LittleEndian.AppendUint32(b, 0) // snapshots
	b = binary.LittleEndian.AppendUint32(b, 0) // thumbnails
	return append(b, otf2EndOfFile, otf2EndOfBuffer, 0)
}

// emptyChunkedFile is a chunked file without records (20 bytes).
func emptyChunkedFile() []byte {
	return append(appendChunkHeader(nil, chunkHeader{first: 1}), otf2EndOfFile, otf2EndOfBuffer)
}

// OTF2EventWriter writes the events of one location. Times are in the
// archive's timer ticks and must not go backwards.
type OTF2EventWriter struct {
	id        uint64
	f         *os.File
	path      string
	defPath   string
	chunkSize uint64
	cw        *chunkWriter
	events    uint64
	lastTime  uint64
	minTime   uint64
	written   bool // a timestamp has been written
	err       error
	closed    bool
	scratch   []byte
}

func (e *OTF2EventWriter) startChunk() {
	e.cw = newChunkWriter(func(b []byte) error {
		_, err := e.f.Write(b)
		return err
	}, e.chunkSize, true)
}

// ID is the location id.
func (e *OTF2EventWriter) ID() uint64 { return e.id }

// Events is the number of events written so far.
func (e *OTF2EventWriter) Events() uint64 { return e.events }

func attrValueEst(t OTF2Type) int {
	switch t {
	case OTF2TypeUint8, OTF2TypeInt8:
		return 1
	case OTF2TypeUint16, OTF2TypeInt16:
		return 2
	case OTF2TypeFloat:
		return 4
	case OTF2TypeDouble, OTF2TypeUint64, OTF2TypeInt64, OTF2TypeLocation:
		return estU64
	}
	return estU32
}

func appendAttrValue(b []byte, t OTF2Type, v uint64) []byte {
	switch t {
	case OTF2TypeUint8, OTF2TypeInt8:
		return append(b, byte(v))
	case OTF2TypeUint16, OTF2TypeInt16:
		return binary.LittleEndian.AppendUint16(b, uint16(v))
	case OTF2TypeFloat:
		return binary.LittleEndian.AppendUint32(b, uint32(v))
	case OTF2TypeDouble:
		return appendU64(b, v)
	case OTF2TypeUint64, OTF2TypeLocation:
		return appendU64c(b, v)
	case OTF2TypeInt64:
		return appendI64c(b, int64(v))
	case OTF2TypeInt32:
		return appendCompressed(b, uint64(uint32(v))) // negative: 04 + 4 bytes, never FF
	}
	return appendU32c(b, uint32(v))
}

func (e *OTF2EventWriter) event(t uint64, attrs []OTF2Attr, est int, body []byte) error {
	if e.err != nil {
		return e.err
	}
	if e.closed {
		return fmt.Errorf("otf2: location %d: event after Close", e.id)
	}
	if e.written && t < e.lastTime {
		return fmt.Errorf("otf2: location %d: time %d before the previous event's %d", e.id, t, e.lastTime)
	}
	rec := e.scratch[:0]
	if len(attrs) > 0 {
		aest := estU32
		p := appendU32c(nil, uint32(len(attrs)))
		for _, a := range attrs {
			p = appendU32c(p, a.Ref)
			p = append(p, byte(a.Type))
			p = appendAttrValue(p, a.Type, a.Value)
			aest += estU32 + estU8 + attrValueEst(a.Type)
		}
		rec = appendRecord(rec, otf2EvtAttributeList, aest, p)
		est += recordEstimate(aest)
	}
	rec = append(rec, body...)
	ts := !e.written || t > e.lastTime
	if err := e.cw.record(est, rec, ts, t, 1); err != nil {
		e.err = fmt.Errorf("otf2: %s: %w", e.path, err)
		return e.err
	}
	e.scratch = rec
	if !e.written {
		e.minTime = t
	}
	e.written = true
	e.lastTime = t
	e.events++
	return nil
}

// Enter records entering region at time t, with optional attributes.
func (e *OTF2EventWriter) Enter(t uint64, region uint32, attrs ...OTF2Attr) error {
	return e.event(t, attrs, 1+estU32, appendU32c([]byte{otf2EvtEnter}, region))
}

// Leave records leaving region at time t.
func (e *OTF2EventWriter) Leave(t uint64, region uint32, attrs ...OTF2Attr) error {
	return e.event(t, attrs, 1+estU32, appendU32c([]byte{otf2EvtLeave}, region))
}

// Metric records the values of a metric class (or instance) at time t.
func (e *OTF2EventWriter) Metric(t uint64, metric uint32, values ...OTF2MetricValue) error {
	if len(values) > 255 {
		return fmt.Errorf("otf2: location %d: %d metric values (at most 255)", e.id, len(values))
	}
	est := estU32 + estU8 + len(values)*(estU8+estU64)
	p := append(appendU32c(nil, metric), byte(len(values)))
	for _, v := range values { // type and value, by pairs
		p = appendU64c(append(p, byte(v.Type)), v.Value)
	}
	return e.event(t, nil, recordEstimate(est), appendRecord(nil, otf2EvtMetric, est, p))
}

// Close writes the last chunk and closes the event file. The archive
// writer's Close calls it for writers still open.
func (e *OTF2EventWriter) Close() error {
	if e.closed {
		return nil
	}
	e.closed = true
	_, err := e.f.Write(e.cw.finish())
	if cerr := e.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("otf2: %s: %w", e.path, err)
	}
	return e.err
}
