package trace

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
)

// A location's local definition file (DIR/NAME/LOC.def) says how to read
// its events: mapping tables from the references its events use to global
// ones, and clock offsets that correct its times. Readers apply both as
// they read the events — libotf2's (and so otf2-print and python3-otf2)
// and ReadOTF2 — so every event reaches the reader with global
// references and global times.

// OTF2 local definition records and mapping types.
const (
	otf2LocalDefMappingTable = 5
	otf2LocalDefClockOffset  = 6

	otf2MappingRegion = 3
	otf2MappingMetric = 5 // metric classes and instances

	otf2IDMapDense = 0
)

// OTF2ClockOffset is a ClockOffset local definition: at Time (in the
// location's own ticks) the global time is Time + Offset. Between two
// offsets a reader interpolates linearly; past the last pair it goes on
// along the last line. A single offset corrects nothing.
type OTF2ClockOffset struct {
	Time   uint64
	Offset int64
	StdDev float64
}

// otf2LocalDefs is the content of a location's local definition file.
type otf2LocalDefs struct {
	regions []uint64 // local region reference -> global
	metrics []uint64 // local metric reference -> global
	clock   []OTF2ClockOffset
}

// encode is the local definition file: dense mapping tables (a record
// each: mapping type, then the id map: u64 size, u8 mode, size compressed
// u64 global ids) and the clock offsets (fixed u64 time, compressed i64
// offset, double standard deviation). Empty maps take no record.
func (d otf2LocalDefs) encode() []byte {
	cw := newChunkWriter(nil, OTF2DefaultDefChunkSize, false)
	for _, m := range []struct {
		typ byte
		ids []uint64
	}{{otf2MappingRegion, d.regions}, {otf2MappingMetric, d.metrics}} {
		if len(m.ids) == 0 {
			continue
		}
		est := estU8 + estU64 + estU8 + len(m.ids)*estU64
		p := appendU64c([]byte{m.typ}, uint64(len(m.ids)))
		p = append(p, otf2IDMapDense)
		for _, g := range m.ids {
			p = appendU64c(p, g)
		}
		_ = cw.record(recordEstimate(est), appendRecord(nil, otf2LocalDefMappingTable, est, p), false, 0, 0)
	}
	for _, c := range d.clock {
		const est = 8 + estU64 + 8
		p := appendU64(nil, c.Time)
		p = appendI64c(p, c.Offset)
		p = appendU64(p, math.Float64bits(c.StdDev))
		_ = cw.record(recordEstimate(est), appendRecord(nil, otf2LocalDefClockOffset, est, p), false, 0, 0)
	}
	return cw.finish()
}

// readLocalDefs reads a location's local definitions (data): its REGION
// and METRIC mapping tables (nil when it has none) and its clock offsets.
func readLocalDefs(data []byte, chunkSize uint64) (otf2LocalDefs, error) {
	var defs otf2LocalDefs
	chunks, _, err := splitChunks(data, chunkSize)
	if err != nil {
		return defs, err
	}
	for ci, c := range chunks {
		d := &decoder{b: c}
	records:
		for {
			typ := d.u8()
			if d.err != nil {
				return defs, fmt.Errorf("chunk %d: no end marker", ci)
			}
			switch typ {
			case otf2EndOfChunk:
				break records
			case otf2EndOfFile:
				return defs, nil
			}
			l := d.recordLen()
			r := &decoder{b: d.bytes(l)}
			if d.err != nil {
				return defs, fmt.Errorf("chunk %d: record %d: %w", ci, typ, d.err)
			}
			switch typ {
			case otf2LocalDefClockOffset:
				c := OTF2ClockOffset{Time: r.fixedU64(), Offset: r.i64c()}
				c.StdDev = math.Float64frombits(r.fixedU64())
				if r.err != nil {
					return defs, fmt.Errorf("chunk %d: clock offset: %w", ci, r.err)
				}
				if n := len(defs.clock); n > 0 && c.Time <= defs.clock[n-1].Time {
					return defs, fmt.Errorf("chunk %d: clock offset at %d after one at %d", ci, c.Time, defs.clock[n-1].Time)
				}
				defs.clock = append(defs.clock, c)
			case otf2LocalDefMappingTable:
				var dst *[]uint64
				switch r.u8() {
				case otf2MappingRegion:
					dst = &defs.regions
				case otf2MappingMetric:
					dst = &defs.metrics
				default:
					continue
				}
				n := r.u64c()
				mode := r.u8()
				if r.err != nil || n > uint64(len(r.b)) {
					return defs, fmt.Errorf("chunk %d: bad mapping table", ci)
				}
				if mode != otf2IDMapDense {
					return defs, fmt.Errorf("chunk %d: sparse mapping tables are not read", ci)
				}
				if *dst != nil {
					return defs, fmt.Errorf("chunk %d: a second mapping table of the same type", ci)
				}
				m := make([]uint64, 0, n)
				for i := uint64(0); i < n; i++ {
					m = append(m, r.u64c())
				}
				if r.err != nil {
					return defs, fmt.Errorf("chunk %d: mapping table: %w", ci, r.err)
				}
				*dst = m
			}
		}
	}
	return defs, nil
}

// applyLocalDefs reads the local definitions of a location at defPath (a
// missing file changes nothing) and applies them to its events. It
// returns the clock offsets.
func applyLocalDefs(defPath string, chunkSize uint64, evs []OTF2Event) ([]OTF2ClockOffset, error) {
	data, err := os.ReadFile(defPath)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defs, err := readLocalDefs(data, chunkSize)
	if err == nil {
		err = defs.apply(evs)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", defPath, err)
	}
	return defs.clock, nil
}

// apply makes the region and metric references of evs global and
// corrects their times by the clock offsets.
func (d otf2LocalDefs) apply(evs []OTF2Event) error {
	clock := newClockCorrection(d.clock)
	for i := range evs {
		ev := &evs[i]
		switch {
		case (ev.Kind == OTF2Enter || ev.Kind == OTF2Leave) && d.regions != nil:
			if uint64(ev.Region) >= uint64(len(d.regions)) {
				return fmt.Errorf("region %d has no mapping (%d mapped)", ev.Region, len(d.regions))
			}
			ev.Region = uint32(d.regions[ev.Region])
		case ev.Kind == OTF2Metric && d.metrics != nil:
			if uint64(ev.Metric) >= uint64(len(d.metrics)) {
				return fmt.Errorf("metric %d has no mapping (%d mapped)", ev.Metric, len(d.metrics))
			}
			ev.Metric = uint32(d.metrics[ev.Metric])
		}
		ev.Time = clock.apply(ev.Time)
	}
	return nil
}

// clockCorrection turns a location's times into global ones the way
// libotf2 does: each pair of consecutive clock offsets is an interval
// with a slope; a time uses the first interval that ends at or after it,
// or the last one.
type clockCorrection struct {
	intervals []clockInterval
	cur       int // times come in order: the search goes on from here
}

type clockInterval struct {
	begin, end uint64
	offset     int64
	slope      float64
}

func newClockCorrection(offsets []OTF2ClockOffset) *clockCorrection {
	c := &clockCorrection{}
	for i := 1; i < len(offsets); i++ {
		a, b := offsets[i-1], offsets[i]
		c.intervals = append(c.intervals, clockInterval{begin: a.Time, end: b.Time, offset: a.Offset,
			slope: (float64(b.Offset) - float64(a.Offset)) / (float64(b.Time) - float64(a.Time))})
	}
	return c
}

func (c *clockCorrection) apply(t uint64) uint64 {
	if len(c.intervals) == 0 {
		return t
	}
	for c.cur < len(c.intervals)-1 && t > c.intervals[c.cur].end {
		c.cur++
	}
	iv := c.intervals[c.cur]
	diff := float64(t - iv.begin)
	if t < iv.begin {
		diff = -float64(iv.begin - t)
	}
	return t + uint64(iv.offset+int64(math.RoundToEven(iv.slope*diff)))
}
