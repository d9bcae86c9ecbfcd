package trace

import (
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// OTF2Anchor is the content of an archive's anchor file.
type OTF2Anchor struct {
	Version                       [3]uint8
	EvtChunkSize, DefChunkSize    uint64
	NumLocations, NumDefinitions  uint64
	Machine, Creator, Description string
	Properties                    map[string]string
	TraceID                       uint64
}

// OTF2ClockProperties is the ClockProperties definition. Times are in
// ticks (TimerResolution per second); GlobalOffset is at most the first
// event's time, GlobalOffset + TraceLength at least the last one's, and
// RealtimeTimestamp, when defined, the wall-clock time of GlobalOffset in
// ns since the Unix epoch.
type OTF2ClockProperties struct {
	TimerResolution, GlobalOffset, TraceLength, RealtimeTimestamp uint64
}

// WallClock is the wall-clock time of time t (ticks, as the events'
// times are), from the clock properties; false when they give no
// realtime timestamp.
func (c OTF2ClockProperties) WallClock(t uint64) (time.Time, bool) {
	if c.RealtimeTimestamp == OTF2UndefinedU64 {
		return time.Time{}, false
	}
	res := ticks(c.TimerResolution)
	at := time.Unix(0, int64(c.RealtimeTimestamp))
	if t >= c.GlobalOffset {
		return at.Add(res.duration(t - c.GlobalOffset)), true
	}
	return at.Add(-res.duration(c.GlobalOffset - t)), true
}

// OTF2AttributeDef is an Attribute definition.
type OTF2AttributeDef struct {
	Name, Description uint32
	Type              OTF2Type
}

// OTF2SystemTreeNodeDef is a SystemTreeNode definition.
type OTF2SystemTreeNodeDef struct{ Name, Class, Parent uint32 }

// OTF2LocationGroupDef is a LocationGroup definition.
type OTF2LocationGroupDef struct {
	Name             uint32
	Type             uint8
	SystemTreeParent uint32
	CreatingGroup    uint32
}

// OTF2LocationDef is a Location definition.
type OTF2LocationDef struct {
	ID             uint64
	Name           uint32
	Type           uint8
	NumberOfEvents uint64
	Group          uint32
}

// OTF2RegionRecord is a Region definition as read.
type OTF2RegionRecord struct {
	Name, Description, CanonicalName uint32
	SourceFile, BeginLine, EndLine   uint32
	Role, Paradigm                   uint8
	Flags                            uint32
}

// OTF2MetricMemberRecord is a MetricMember definition as read.
type OTF2MetricMemberRecord struct {
	Name, Description uint32
	MetricType, Mode  uint8
	ValueType         OTF2Type
	Base              uint8
	Exponent          int64
	Unit              uint32
}

// OTF2MetricClassRecord is a MetricClass definition.
type OTF2MetricClassRecord struct {
	Members                  []uint32
	Occurrence, RecorderKind uint8
}

// OTF2EventKind says what an OTF2Event is.
type OTF2EventKind uint8

// The event kinds this package reads.
const (
	OTF2Enter OTF2EventKind = iota + 1
	OTF2Leave
	OTF2Metric
)

// OTF2Event is one event of a location. Region is set for Enter and
// Leave, Metric and Values for Metric.
type OTF2Event struct {
	Kind     OTF2EventKind
	Location uint64
	Time     uint64
	Region   uint32
	Metric   uint32
	Values   []OTF2MetricValue
	Attrs    []OTF2Attr
}

// OTF2Archive is an archive read back: its anchor, global definitions and
// the events of every location (in each location's order).
type OTF2Archive struct {
	Path            string
	Anchor          OTF2Anchor
	Clock           OTF2ClockProperties
	Strings         map[uint32]string
	Attributes      map[uint32]OTF2AttributeDef
	SystemTreeNodes map[uint32]OTF2SystemTreeNodeDef
	LocationGroups  map[uint32]OTF2LocationGroupDef
	Locations       []OTF2LocationDef // in definition order
	Regions         map[uint32]OTF2RegionRecord
	MetricMembers   map[uint32]OTF2MetricMemberRecord
	MetricClasses   map[uint32]OTF2MetricClassRecord
	// Events holds each location's events, with global references and
	// times: its local definitions (mapping tables, clock offsets) are
	// applied.
	Events map[uint64][]OTF2Event
	// ClockOffsets holds the clock offsets of the locations that have
	// them.
	ClockOffsets map[uint64][]OTF2ClockOffset
	// Skipped counts records of types the reader does not know, by file.
	Skipped map[string]int
}

// ReadOTF2 reads the archive whose anchor file is anchorPath
// (DIR/NAME.otf2): definitions and all events. Errors name the file.
func ReadOTF2(anchorPath string) (*OTF2Archive, error) {
	a := &OTF2Archive{
		Path:            anchorPath,
		Strings:         map[uint32]string{},
		Attributes:      map[uint32]OTF2AttributeDef{},
		SystemTreeNodes: map[uint32]OTF2SystemTreeNodeDef{},
		LocationGroups:  map[uint32]OTF2LocationGroupDef{},
		Regions:         map[uint32]OTF2RegionRecord{},
		MetricMembers:   map[uint32]OTF2MetricMemberRecord{},
		MetricClasses:   map[uint32]OTF2MetricClassRecord{},
		Events:          map[uint64][]OTF2Event{},
		ClockOffsets:    map[uint64][]OTF2ClockOffset{},
		Skipped:         map[string]int{},
	}
	data, err := os.ReadFile(anchorPath)
	if err != nil {
		return nil, fmt.Errorf("otf2: %w", err)
	}
	if a.Anchor, err = ParseOTF2Anchor(data); err != nil {
		return nil, fmt.Errorf("otf2: %s: %w", anchorPath, err)
	}
	base := strings.TrimSuffix(anchorPath, ".otf2")
	defPath := base + ".def"
	data, err = os.ReadFile(defPath)
	if err != nil {
		return nil, fmt.Errorf("otf2: %w", err)
	}
	n, err := a.readDefs(data, defPath)
	if err != nil {
		return nil, fmt.Errorf("otf2: %s: %w", defPath, err)
	}
	if n != a.Anchor.NumDefinitions {
		return nil, fmt.Errorf("otf2: %s: %d definitions, the anchor file says %d", defPath, n, a.Anchor.NumDefinitions)
	}
	if uint64(len(a.Locations)) != a.Anchor.NumLocations {
		return nil, fmt.Errorf("otf2: %s: %d locations, the anchor file says %d", defPath, len(a.Locations), a.Anchor.NumLocations)
	}
	for _, l := range a.Locations {
		p := filepath.Join(base, strconv.FormatUint(l.ID, 10)+".evt")
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("otf2: location %d: %w", l.ID, err)
		}
		evs, skipped, err := ReadOTF2Events(data, a.Anchor.EvtChunkSize, l.ID)
		if err != nil {
			return nil, fmt.Errorf("otf2: %s: %w", p, err)
		}
		if skipped > 0 {
			a.Skipped[p] = skipped
		}
		clock, err := applyLocalDefs(strings.TrimSuffix(p, ".evt")+".def", a.Anchor.DefChunkSize, evs)
		if err != nil {
			return nil, fmt.Errorf("otf2: location %d: %w", l.ID, err)
		}
		if len(clock) > 0 {
			a.ClockOffsets[l.ID] = clock
		}
		a.Events[l.ID] = evs
	}
	return a, nil
}

// ParseOTF2Anchor parses an anchor file.
func ParseOTF2Anchor(data []byte) (OTF2Anchor, error) {
	var an OTF2Anchor
	d := &decoder{b: data}
	if h := d.bytes(2); d.err != nil || h[0] != otf2ChunkHeader || h[1] != otf2Endianness {
		if d.err != nil {
			return an, fmt.Errorf("anchor file truncated (%d bytes)", len(data))
		}
		return an, fmt.Errorf("not an OTF2 anchor file: header % x (want 03 42)", h)
	}
	if m := d.bytes(5); d.err != nil || string(m) != "OTF2\x00" {
		if d.err != nil {
			return an, fmt.Errorf("anchor file truncated (%d bytes)", len(data))
		}
		return an, fmt.Errorf("not an OTF2 anchor file: magic %q", m)
	}
	anchorFmt, traceFmt := d.u8(), d.u8()
	copy(an.Version[:], d.bytes(3))
	if d.err == nil && (anchorFmt != 3 || traceFmt != 2 || an.Version[0] != 3) {
		return an, fmt.Errorf("unsupported OTF2 version %d.%d.%d (anchor format %d, trace format %d); want 3.x, 3, 2",
			an.Version[0], an.Version[1], an.Version[2], anchorFmt, traceFmt)
	}
	an.EvtChunkSize = d.fixedU64()
	an.DefChunkSize = d.fixedU64()
	substrate, compression := d.u8(), d.u8()
	if d.err == nil && (substrate != 1 || compression != 1) {
		return an, fmt.Errorf("unsupported substrate %d / compression %d (want POSIX 1, none 1)", substrate, compression)
	}
	an.NumLocations = d.fixedU64()
	an.NumDefinitions = d.fixedU64()
	an.Machine, an.Creator, an.Description = d.str(), d.str(), d.str()
	np := d.fixedU32()
	if d.err == nil && uint64(np) > uint64(len(data)) {
		return an, fmt.Errorf("anchor file: %d properties in %d bytes", np, len(data))
	}
	for i := uint32(0); i < np && d.err == nil; i++ {
		if an.Properties == nil {
			an.Properties = map[string]string{}
		}
		k, v := d.str(), d.str()
		an.Properties[k] = v
	}
	an.TraceID = d.fixedU64()
	d.fixedU32() // snapshots
	d.fixedU32() // thumbnails
	if d.err != nil {
		return an, fmt.Errorf("anchor file truncated: %w", d.err)
	}
	for _, c := range []uint64{an.EvtChunkSize, an.DefChunkSize} {
		if c < OTF2MinChunkSize || c > OTF2MaxChunkSize {
			return an, fmt.Errorf("anchor file: chunk size %d outside [%d, %d]", c, OTF2MinChunkSize, OTF2MaxChunkSize)
		}
	}
	return an, nil
}

// readDefs reads the global definitions and returns how many there were.
func (a *OTF2Archive) readDefs(data []byte, path string) (uint64, error) {
	chunks, _, err := splitChunks(data, a.Anchor.DefChunkSize)
	if err != nil {
		return 0, err
	}
	var n uint64
	for ci, c := range chunks {
		d := &decoder{b: c}
		for {
			typ := d.u8()
			if d.err != nil {
				return n, fmt.Errorf("chunk %d: no end marker", ci)
			}
			if typ == otf2EndOfChunk {
				if ci == len(chunks)-1 {
					return n, fmt.Errorf("chunk %d: END_OF_CHUNK in the last chunk (file truncated?)", ci)
				}
				break
			}
			if typ == otf2EndOfFile {
				if d.u8() != otf2EndOfBuffer || d.err != nil {
					return n, fmt.Errorf("chunk %d: bad end of file", ci)
				}
				if ci != len(chunks)-1 {
					return n, fmt.Errorf("chunk %d: END_OF_FILE before the last chunk", ci)
				}
				return n, nil
			}
			l := d.recordLen()
			start := d.off
			r := &decoder{b: d.bytes(l)}
			if d.err != nil {
				return n, fmt.Errorf("chunk %d offset %d: record %d: %w", ci, start, typ, d.err)
			}
			n++
			a.defRecord(typ, r, path)
			if r.err != nil {
				return n, fmt.Errorf("chunk %d offset %d: definition record %d: %w", ci, start, typ, r.err)
			}
		}
	}
	return n, errors.New("no END_OF_FILE")
}

func (a *OTF2Archive) defRecord(typ byte, d *decoder, path string) {
	switch typ {
	case otf2DefClockProperties:
		a.Clock = OTF2ClockProperties{d.u64c(), d.u64c(), d.u64c(), d.u64c()}
	case otf2DefString:
		ref := d.u32c()
		a.Strings[ref] = d.str()
	case otf2DefAttribute:
		ref := d.u32c()
		a.Attributes[ref] = OTF2AttributeDef{Name: d.u32c(), Type: OTF2Type(d.u8()), Description: d.u32c()}
	case otf2DefSystemTreeNode:
		ref := d.u32c()
		a.SystemTreeNodes[ref] = OTF2SystemTreeNodeDef{Name: d.u32c(), Class: d.u32c(), Parent: d.u32c()}
	case otf2DefLocationGroup:
		ref := d.u32c()
		a.LocationGroups[ref] = OTF2LocationGroupDef{Name: d.u32c(), Type: d.u8(), SystemTreeParent: d.u32c(), CreatingGroup: d.u32c()}
	case otf2DefLocation:
		a.Locations = append(a.Locations, OTF2LocationDef{ID: d.u64c(), Name: d.u32c(), Type: d.u8(), NumberOfEvents: d.u64c(), Group: d.u32c()})
	case otf2DefRegion:
		ref := d.u32c()
		var r OTF2RegionRecord
		r.Name, r.Description = d.u32c(), d.u32c()
		d.u8() // regionType
		r.SourceFile, r.BeginLine, r.EndLine = d.u32c(), d.u32c(), d.u32c()
		r.CanonicalName = r.Name
		if d.off < len(d.b) {
			r.CanonicalName, r.Role, r.Paradigm, r.Flags = d.u32c(), d.u8(), d.u8(), d.u32c()
		}
		a.Regions[ref] = r
	case otf2DefMetricMember:
		ref := d.u32c()
		a.MetricMembers[ref] = OTF2MetricMemberRecord{Name: d.u32c(), Description: d.u32c(), MetricType: d.u8(), Mode: d.u8(),
			ValueType: OTF2Type(d.u8()), Base: d.u8(), Exponent: d.i64c(), Unit: d.u32c()}
	case otf2DefMetricClass:
		ref := d.u32c()
		n := int(d.u8())
		var c OTF2MetricClassRecord
		for i := 0; i < n && d.err == nil; i++ {
			c.Members = append(c.Members, d.u32c())
		}
		c.Occurrence, c.RecorderKind = d.u8(), d.u8()
		a.MetricClasses[ref] = c
	default:
		a.Skipped[path]++
	}
}

func readAttrValue(d *decoder, t OTF2Type) uint64 {
	switch t {
	case OTF2TypeUint8, OTF2TypeInt8:
		return uint64(d.u8())
	case OTF2TypeUint16, OTF2TypeInt16:
		p := d.bytes(2)
		if p == nil {
			return 0
		}
		return uint64(binary.LittleEndian.Uint16(p))
	case OTF2TypeFloat:
		return uint64(d.fixedU32())
	case OTF2TypeDouble:
		return d.fixedU64()
	case OTF2TypeUint64, OTF2TypeLocation, OTF2TypeInt64, OTF2TypeInt32:
		return d.u64c()
	}
	return uint64(d.u32c())
}

// ReadOTF2Events decodes the events of one location's .evt file, laid out
// in chunks of chunkSize bytes. It also returns how many records of
// unknown types it skipped. It never panics on bad input.
func ReadOTF2Events(data []byte, chunkSize uint64, loc uint64) ([]OTF2Event, int, error) {
	chunks, hdrs, err := splitChunks(data, chunkSize)
	if err != nil {
		return nil, 0, err
	}
	var evs []OTF2Event
	skipped := 0
	var count uint64 // events, including those of unknown types
	var t uint64
	var attrs []OTF2Attr
	for ci, c := range chunks {
		if hdrs[ci].first != count+1 {
			return evs, skipped, fmt.Errorf("chunk %d: header says first event %d, but %d events came before", ci, hdrs[ci].first, count)
		}
		d := &decoder{b: c}
	records:
		for {
			start := d.off
			typ := d.u8()
			if d.err != nil {
				return evs, skipped, fmt.Errorf("chunk %d: no end marker (file truncated?)", ci)
			}
			var ev OTF2Event
			switch typ {
			case otf2EndOfChunk:
				if ci == len(chunks)-1 {
					return evs, skipped, fmt.Errorf("chunk %d: END_OF_CHUNK in the last chunk (file truncated?)", ci)
				}
				break records
			case otf2EndOfFile:
				if d.u8() != otf2EndOfBuffer || d.err != nil {
					return evs, skipped, fmt.Errorf("chunk %d offset %d: bad end of file", ci, start)
				}
				if ci != len(chunks)-1 {
					return evs, skipped, fmt.Errorf("chunk %d: END_OF_FILE before the last chunk", ci)
				}
				if hdrs[ci].last != count {
					return evs, skipped, fmt.Errorf("chunk %d: header says last event %d, read %d", ci, hdrs[ci].last, count)
				}
				if attrs != nil {
					return evs, skipped, errors.New("attribute list without an event at the end of the file")
				}
				return evs, skipped, nil
			case otf2EvtTimestamp:
				nt := d.fixedU64()
				if d.err == nil && nt < t {
					return evs, skipped, fmt.Errorf("chunk %d offset %d: time goes backwards (%d after %d)", ci, start, nt, t)
				}
				t = nt
				continue
			case otf2EvtEnter, otf2EvtLeave:
				ev.Kind = OTF2Enter
				if typ == otf2EvtLeave {
					ev.Kind = OTF2Leave
				}
				ev.Region = d.u32c()
			default:
				l := d.recordLen()
				r := &decoder{b: d.bytes(l)}
				if d.err != nil {
					return evs, skipped, fmt.Errorf("chunk %d offset %d: record %#02x: %w", ci, start, typ, d.err)
				}
				switch typ {
				case otf2EvtAttributeList:
					n := r.u32c()
					if r.err == nil && uint64(n) > uint64(len(r.b)) {
						return evs, skipped, fmt.Errorf("chunk %d offset %d: attribute list of %d entries in %d bytes", ci, start, n, len(r.b))
					}
					attrs = make([]OTF2Attr, 0, n)
					for i := uint32(0); i < n && r.err == nil; i++ {
						at := OTF2Attr{Ref: r.u32c(), Type: OTF2Type(r.u8())}
						at.Value = readAttrValue(r, at.Type)
						attrs = append(attrs, at)
					}
					if r.err != nil {
						return evs, skipped, fmt.Errorf("chunk %d offset %d: attribute list: %w", ci, start, r.err)
					}
					continue
				case otf2EvtMetric:
					ev.Kind = OTF2Metric
					ev.Metric = r.u32c()
					n := int(r.u8())
					ev.Values = make([]OTF2MetricValue, n)
					for i := range ev.Values { // type and value, by pairs
						ev.Values[i].Type = OTF2Type(r.u8())
						ev.Values[i].Value = r.u64c()
					}
					if r.err != nil {
						return evs, skipped, fmt.Errorf("chunk %d offset %d: metric: %w", ci, start, r.err)
					}
				default:
					// An event type this reader does not know: it still counts
					// as an event, its attribute list goes with it.
					skipped++
					count++
					attrs = nil
					continue
				}
			}
			if d.err != nil {
				return evs, skipped, fmt.Errorf("chunk %d offset %d: record %#02x: %w", ci, start, typ, d.err)
			}
			ev.Location, ev.Time, ev.Attrs = loc, t, attrs
			attrs = nil
			evs = append(evs, ev)
			count++
		}
		if hdrs[ci].last != count {
			return evs, skipped, fmt.Errorf("chunk %d: header says last event %d, read %d", ci, hdrs[ci].last, count)
		}
	}
	return evs, skipped, errors.New("no END_OF_FILE")
}

// MergedEvents returns the events of all locations merged in time order;
// equal times keep location definition order, then each location's order
// (the order otf2-print shows them in).
func (a *OTF2Archive) MergedEvents() []OTF2Event {
	h := &evHeap{}
	for i, l := range a.Locations {
		if evs := a.Events[l.ID]; len(evs) > 0 {
			*h = append(*h, evCursor{evs: evs, idx: i})
		}
	}
	heap.Init(h)
	var out []OTF2Event
	for h.Len() > 0 {
		c := &(*h)[0]
		out = append(out, c.evs[0])
		c.evs = c.evs[1:]
		if len(c.evs) == 0 {
			heap.Pop(h)
		} else {
			heap.Fix(h, 0)
		}
	}
	return out
}

type evCursor struct {
	evs []OTF2Event
	idx int
}

type evHeap []evCursor

func (h evHeap) Len() int { return len(h) }
func (h evHeap) Less(i, j int) bool {
	if h[i].evs[0].Time != h[j].evs[0].Time {
		return h[i].evs[0].Time < h[j].evs[0].Time
	}
	return h[i].idx < h[j].idx
}
func (h evHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *evHeap) Push(x any)   { *h = append(*h, x.(evCursor)) }
func (h *evHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
