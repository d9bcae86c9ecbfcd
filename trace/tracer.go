package trace

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"
)

// ArchiveName is the name of a run's OTF2 archive in its trace directory:
// DIR/tessera.otf2, DIR/tessera.def and DIR/tessera/LOC.{evt,def}.
const ArchiveName = "tessera"

// The attributes every task Enter carries, with their global references.
const (
	AttrGUID       = "GUID"
	AttrParentGUID = "Parent GUID"

	attrGUIDRef   uint32 = 0
	attrParentRef uint32 = 1
)

// TracerConfig describes one locality's part of a run's trace.
type TracerConfig struct {
	Dir      string // the run's trace directory (shared by all localities)
	Locality uint32
	Lanes    int    // worker lanes: one OTF2 location each
	Host     string // system tree node of the locality; "": os.Hostname()

	// EvtChunkSize is the event chunk size, the same on every locality;
	// 0: OTF2DefaultEvtChunkSize.
	EvtChunkSize uint64
}

// Tracer writes one locality's part of a run's OTF2 archive: the events of
// each worker lane to that lane's location (id locality<<32 + lane, named
// "locality N lane M") and the sampler's metrics to one more location
// (lane number Lanes, "locality N samples"). Each lane's events go into a
// chunk buffer of its own, allocated once and written to the lane's event
// file whenever it fills, under the lane's own lock only: the hot path
// allocates nothing once a region name has been seen.
//
// Times are ns since the tracer's origin, just before it started; region
// and metric references in the event files are this locality's own. Close
// writes them with the rest of the part's description to
// DIR/tessera.parts/LOC.json, from which MergeOTF2 writes the global
// definitions and, per location, the mapping of its references to global
// ones and the offset of its clock.
type Tracer struct {
	// What every event reads first, together: the logs of the lanes and
	// of the sampler (the last one), and the clock.
	lanes  []laneLog
	base   time.Time
	origin uint64 // time 0 in ns since the Unix epoch: tickPad before base

	cfg  TracerConfig
	host string
	samp *sampler

	mu      sync.Mutex // regions
	regions map[string]uint32
	names   []string

	closeOnce sync.Once
	closeErr  error
}

// laneLog is the event log of one location. What an event reads and
// writes comes first (up to the chunk writer, whose current chunk and
// counts lead it): about two cache lines. The log ends with a line of
// padding: the lanes' logs, side by side in Tracer.lanes, are written from
// different cores at once and must not share a line.
type laneLog struct {
	mu      sync.Mutex
	last    uint64 // the time of the last event
	events  uint64
	lastKey nameKey // the name of the last event
	lastRef uint32  // its reference
	openRef uint32  // the region entered, if open
	err     error
	written bool // an event is written
	closed  bool
	open    bool        // a region is entered and not left
	cw      chunkWriter // the chunk being filled, written to f when full

	first uint64
	cache map[nameKey]uint32 // region name -> locality reference
	pay   []byte             // scratch: a metric's payload
	rec   []byte             // scratch: a metric's record
	id    uint64
	name  string
	path  string
	f     *os.File

	_ [64]byte
}

// NewTracer opens the event files of the locality's lanes and of its
// sampler, and starts the sampler.
func NewTracer(cfg TracerConfig) (*Tracer, error) {
	if cfg.Dir == "" {
		return nil, fmt.Errorf("trace: locality %d: no trace directory", cfg.Locality)
	}
	if cfg.Lanes <= 0 {
		return nil, fmt.Errorf("trace: locality %d: %d lanes", cfg.Locality, cfg.Lanes)
	}
	if cfg.EvtChunkSize == 0 {
		cfg.EvtChunkSize = OTF2DefaultEvtChunkSize
	}
	if cfg.EvtChunkSize < OTF2MinChunkSize || cfg.EvtChunkSize > OTF2MaxChunkSize {
		return nil, fmt.Errorf("trace: locality %d: event chunk size %d outside [%d, %d]", cfg.Locality, cfg.EvtChunkSize, OTF2MinChunkSize, OTF2MaxChunkSize)
	}
	host := cfg.Host
	if host == "" {
		host, _ = os.Hostname()
		if host == "" {
			host = "localhost"
		}
	}
	evtDir := filepath.Join(cfg.Dir, ArchiveName)
	if err := os.MkdirAll(evtDir, 0o755); err != nil {
		return nil, fmt.Errorf("trace: locality %d: %w", cfg.Locality, err)
	}
	now := time.Now()
	t := &Tracer{cfg: cfg, host: host, base: now, origin: uint64(now.UnixNano()) - tickPad, regions: map[string]uint32{},
		lanes: make([]laneLog, cfg.Lanes+1)}
	for lane := range t.lanes {
		name := fmt.Sprintf("locality %d lane %d", cfg.Locality, lane)
		if lane == cfg.Lanes {
			name = fmt.Sprintf("locality %d samples", cfg.Locality)
		}
		if err := t.openLane(&t.lanes[lane], uint64(cfg.Locality)<<32|uint64(lane), name); err != nil {
			for i := range lane {
				t.lanes[i].f.Close()
			}
			return nil, err
		}
	}
	// A part left by an earlier run in the same directory is not this one's.
	if err := os.Remove(partPath(cfg.Dir, cfg.Locality)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("trace: locality %d: %w", cfg.Locality, err)
	}
	return t, nil
}

// StartSampler starts writing a sample of the process and of counters
// (nil: those metrics are 0) every period (0: DefaultSampleEvery) to the
// sampler's location, from now until Close. A negative period samples
// nothing. Call it at most once.
func (t *Tracer) StartSampler(every time.Duration, counters func() RuntimeSample) {
	if every < 0 || t.samp != nil {
		return
	}
	if every == 0 {
		every = DefaultSampleEvery
	}
	t.samp = startSampler(t, &t.lanes[t.cfg.Lanes], every, counters)
}

// openLane creates the event file of location id and makes l its log.
func (t *Tracer) openLane(l *laneLog, id uint64, name string) error {
	path := filepath.Join(t.cfg.Dir, ArchiveName, strconv.FormatUint(id, 10)+".evt")
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("trace: locality %d: %w", t.cfg.Locality, err)
	}
	l.init(id, name, path, f, t.cfg.EvtChunkSize, func(b []byte) error {
		_, err := f.Write(b)
		return err
	})
	return nil
}

// init makes l the log of location id, whose full chunks of size bytes go
// to flush.
func (l *laneLog) init(id uint64, name, path string, f *os.File, size uint64, flush func([]byte) error) {
	l.id, l.name, l.path, l.f = id, name, path, f
	l.cache = map[nameKey]uint32{}
	l.pay, l.rec = make([]byte, 0, 64), make([]byte, 0, 128)
	l.cw = *newChunkWriter(flush, size, true)
	l.cw.cur = append(make([]byte, 0, size), l.cw.cur...)
}

// Locality is the locality whose part this tracer writes.
func (t *Tracer) Locality() uint32 { return t.cfg.Locality }

// tickPad is how long before the tracer's start its origin is: no event
// is at time 0.
const tickPad = uint64(time.Microsecond)

// now is the time in ns since the tracer's origin, read from the
// monotonic clock. Times are small (far below 2^53, so exact in a
// double) and MergeOTF2 puts the localities' origins on one clock.
func (t *Tracer) now() uint64 { return tickPad + uint64(time.Since(t.base)) }

// Enter records that the task guid (child of parent) entered its region
// name on lane: at its start, or when it resumes after a yield. It carries
// the attributes GUID and Parent GUID.
func (t *Tracer) Enter(lane int, name string, guid, parent uint64) {
	if lane < 0 || lane >= len(t.lanes)-1 { // the last is the sampler's
		return
	}
	l := &t.lanes[lane]
	l.mu.Lock()
	if !l.closed {
		l.enter(t.now(), t.lookup(l, name), guid, parent)
	}
	l.mu.Unlock()
}

// Leave records that the task left its region on lane: it ended, or it
// yielded the lane while it waits.
func (t *Tracer) Leave(lane int, name string) {
	if lane < 0 || lane >= len(t.lanes)-1 {
		return
	}
	l := &t.lanes[lane]
	l.mu.Lock()
	if !l.closed {
		l.leave(t.now(), t.lookup(l, name))
	}
	l.mu.Unlock()
}

// nameKey is a task name by the address and length of its bytes. Task
// names are action names held by the registry and Go function names in
// the binary: the same name comes back with the same bytes, so the lane's
// cache finds it without hashing the text. The cache keeps the bytes
// alive, so an address is never reused for another name; the same text at
// two addresses merely takes two entries, with the same reference.
type nameKey struct {
	p *byte
	n int
}

// lookup returns the reference of name through the lane's cache; l.mu is
// held.
func (t *Tracer) lookup(l *laneLog, name string) uint32 {
	k := nameKey{unsafe.StringData(name), len(name)}
	if k == l.lastKey && k.p != nil {
		return l.lastRef
	}
	ref, ok := l.cache[k]
	if !ok {
		ref = t.region(name)
		l.cache[k] = ref
	}
	l.lastKey, l.lastRef = k, ref
	return ref
}

// region returns the locality's reference of the region name.
func (t *Tracer) region(name string) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if ref, ok := t.regions[name]; ok {
		return ref
	}
	ref := uint32(len(t.names))
	t.regions[name] = ref
	t.names = append(t.names, RegionName(name))
	return ref
}

// RegionName is the region a task name becomes: action names stay as they
// are; a Go function's name (a local task's) loses the directories of its
// import path, so "example.com/x/y.work.func1" becomes "y.work.func1".
func RegionName(name string) string {
	path := name
	if b := strings.IndexByte(name, '['); b >= 0 {
		path = name[:b] // a generic function's type arguments keep their paths
	}
	if i := strings.LastIndexByte(path, '/'); i >= 0 && strings.IndexByte(path[i:], '.') > 0 {
		return name[i+1:]
	}
	if name == "" {
		return "(unnamed task)"
	}
	return name
}

// begin starts an event of at most est bytes at time t, which becomes the
// time of the previous event if it is earlier: times never go backwards on
// a location. It returns the room to encode the event in, for
// l.cw.commit, or nil after a write error.
func (l *laneLog) begin(t uint64, est int) []byte {
	c := &l.cw
	n := len(c.cur)
	if l.written && l.err == nil && tsLen+est < c.free() && n+tsLen+est <= cap(c.cur) {
		// The chunk has room (what c.begin checks first) and holds an
		// event already: the TIMESTAMP record, if the time moved on, and
		// the event go right here.
		if t > l.last {
			b := c.cur[n : n+tsLen]
			b[0] = otf2EvtTimestamp
			binary.LittleEndian.PutUint64(b[1:], t)
			n += tsLen
			c.cur = c.cur[:n]
			l.last = t
		}
		l.events++
		return c.cur[n : n+est]
	}
	if l.err != nil {
		return nil
	}
	if l.written && t < l.last {
		t = l.last
	}
	if err := c.begin(est, !l.written || t > l.last, t); err != nil {
		l.err = fmt.Errorf("trace: %s: %w", l.path, err)
		return nil
	}
	if !l.written {
		l.first = t
	}
	l.written = true
	l.last = t
	l.events++
	return c.room(est)
}

// put appends one event record (rec, upper bound est) at time t.
func (l *laneLog) put(t uint64, est int, rec []byte) {
	if b := l.begin(t, est); b != nil {
		l.cw.commit(copy(b, rec), 1)
	}
}

// The upper bounds of a task's events: an Enter with its attribute list
// (whose payload's bound, enterAttrEst, is below 255, so its length is one
// byte), and a Leave.
const (
	enterAttrEst = estU32 + 2*(estU32+estU8+estU64)
	enterEst     = 1 + 1 + enterAttrEst + 1 + estU32
	leaveEst     = 1 + estU32
)

// enter appends an Enter of region with the attributes GUID and Parent
// GUID, encoded in place: an ATTRIBUTE_LIST record (the number of
// attributes, then each one's reference, type and value) and the ENTER
// record.
func (l *laneLog) enter(t uint64, region uint32, guid, parent uint64) {
	if b := l.begin(t, enterEst); b != nil {
		b[0] = otf2EvtAttributeList
		n := 2 // b[1] is the payload's length
		n += putU32c(b[n:], 2)
		n += putU32c(b[n:], attrGUIDRef)
		b[n] = byte(OTF2TypeUint64)
		n++
		n += putU64c(b[n:], guid)
		n += putU32c(b[n:], attrParentRef)
		b[n] = byte(OTF2TypeUint64)
		n++
		n += putU64c(b[n:], parent)
		b[1] = byte(n - 2)
		b[n] = otf2EvtEnter
		n++
		n += putU32c(b[n:], region)
		l.cw.commit(n, 1)
	}
	l.open, l.openRef = true, region
}

func (l *laneLog) leave(t uint64, region uint32) {
	if b := l.begin(t, leaveEst); b != nil {
		b[0] = otf2EvtLeave
		l.cw.commit(1+putU32c(b[1:], region), 1)
	}
	l.open = false
}

// metricEst is the upper bound of the payload of a Metric event of one
// value.
const metricEst = estU32 + estU8 + estU8 + estU64

// metric appends a Metric event of metric class (or instance) ref with
// one value; l.mu is held.
func (l *laneLog) metric(t uint64, ref uint32, v OTF2MetricValue) {
	p := append(appendU32c(l.pay[:0], ref), 1, byte(v.Type))
	p = appendU64c(p, v.Value)
	r := appendRecord(l.rec[:0], otf2EvtMetric, metricEst, p)
	l.pay, l.rec = p, r
	l.put(t, recordEstimate(metricEst), r)
}

// close leaves the region still entered, if any (a task that runs on
// when the tracer closes), writes the last chunk and closes the event file.
func (l *laneLog) close(now uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	if l.open {
		l.leave(now, l.openRef)
	}
	l.closed = true
	_, err := l.f.Write(l.cw.finish())
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("trace: %s: %w", l.path, err)
	}
	return l.err
}

// Close stops the sampler, finishes every event file and writes the
// locality's part description. Events that come later are dropped. It is
// safe to call more than once.
func (t *Tracer) Close() error {
	t.closeOnce.Do(func() {
		if t.samp != nil {
			t.samp.stop()
		}
		var errs []error
		for i := range t.lanes {
			if err := t.lanes[i].close(t.now()); err != nil {
				errs = append(errs, err)
			}
		}
		t.mu.Lock()
		part := otf2Part{
			Locality:     t.cfg.Locality,
			Host:         t.host,
			Pid:          os.Getpid(),
			Origin:       t.origin,
			EvtChunkSize: t.cfg.EvtChunkSize,
			Regions:      append([]string(nil), t.names...),
		}
		t.mu.Unlock()
		for i := range t.lanes {
			l := &t.lanes[i]
			part.Locations = append(part.Locations, partLocation{ID: l.id, Name: l.name, Events: l.events,
				First: l.first, Last: l.last, Sampler: i == t.cfg.Lanes})
		}
		if err := writePart(t.cfg.Dir, part); err != nil {
			errs = append(errs, err)
		}
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}
