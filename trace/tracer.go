package trace

import (
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
// each worker lane to that lane's location (id locality<<32 + lane) and the
// sampler's metrics to one more location (lane number Lanes). Each lane's
// events go into a chunk buffer of its own, allocated once and written to
// the lane's event file whenever it fills, under the lane's own lock only:
// the hot path allocates nothing once a region name has been seen.
//
// Region references in the event files are this locality's own; Close
// writes them with the rest of the part's description to
// DIR/tessera.parts/LOC.json, from which MergeOTF2 writes the global
// definitions and the mapping of each location's references to global ones.
type Tracer struct {
	cfg   TracerConfig
	host  string
	base  time.Time
	epoch uint64 // base in ns since the Unix epoch
	lanes []*laneLog
	samp  *sampler

	mu      sync.Mutex // regions
	regions map[string]uint32
	names   []string

	closeOnce sync.Once
	closeErr  error
}

// laneLog is the event log of one location.
type laneLog struct {
	mu      sync.Mutex
	id      uint64
	name    string
	path    string
	f       *os.File
	cw      *chunkWriter
	events  uint64
	first   uint64
	last    uint64
	written bool
	closed  bool
	open    bool   // a region is entered and not left
	openRef uint32 // that region
	err     error
	cache   map[nameKey]uint32 // region name -> locality reference
	lastKey nameKey            // the name of the last event, and its reference
	lastRef uint32
	pay     []byte // scratch: attribute list payload
	rec     []byte // scratch: the records of one event
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
	t := &Tracer{cfg: cfg, host: host, base: now, epoch: uint64(now.UnixNano()), regions: map[string]uint32{}}
	for lane := 0; lane <= cfg.Lanes; lane++ {
		name := fmt.Sprintf("locality %d lane %d", cfg.Locality, lane)
		if lane == cfg.Lanes {
			name = fmt.Sprintf("locality %d samples", cfg.Locality)
		}
		l, err := t.openLane(uint64(cfg.Locality)<<32|uint64(lane), name)
		if err != nil {
			for _, o := range t.lanes {
				o.f.Close()
			}
			return nil, err
		}
		t.lanes = append(t.lanes, l)
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
	t.samp = startSampler(t, t.lanes[t.cfg.Lanes], every, counters)
}

func (t *Tracer) openLane(id uint64, name string) (*laneLog, error) {
	path := filepath.Join(t.cfg.Dir, ArchiveName, strconv.FormatUint(id, 10)+".evt")
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("trace: locality %d: %w", t.cfg.Locality, err)
	}
	l := &laneLog{id: id, name: name, path: path, f: f, cache: map[nameKey]uint32{},
		pay: make([]byte, 0, 64), rec: make([]byte, 0, 128)}
	l.cw = newChunkWriter(func(b []byte) error {
		_, err := f.Write(b)
		return err
	}, t.cfg.EvtChunkSize, true)
	l.cw.cur = append(make([]byte, 0, t.cfg.EvtChunkSize), l.cw.cur...)
	return l, nil
}

// Locality is the locality whose part this tracer writes.
func (t *Tracer) Locality() uint32 { return t.cfg.Locality }

// now is the time in ns since the Unix epoch, read from the monotonic clock
// since the tracer started.
func (t *Tracer) now() uint64 { return t.epoch + uint64(time.Since(t.base)) }

// Enter records that the task guid (child of parent) entered its region
// name on lane: at its start, or when it resumes after a yield. It carries
// the attributes GUID and Parent GUID.
func (t *Tracer) Enter(lane int, name string, guid, parent uint64) {
	if lane < 0 || lane >= t.cfg.Lanes {
		return
	}
	l := t.lanes[lane]
	l.mu.Lock()
	if !l.closed {
		l.enter(t.now(), t.lookup(l, name), guid, parent)
	}
	l.mu.Unlock()
}

// Leave records that the task left its region on lane: it ended, or it
// yielded the lane while it waits.
func (t *Tracer) Leave(lane int, name string) {
	if lane < 0 || lane >= t.cfg.Lanes {
		return
	}
	l := t.lanes[lane]
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

// put appends one event record (rec, upper bound est) at time t; times
// never go backwards on a location.
func (l *laneLog) put(t uint64, est int, rec []byte) {
	if l.err != nil {
		return
	}
	if l.written && t < l.last {
		t = l.last
	}
	if err := l.cw.record(est, rec, !l.written || t > l.last, t, 1); err != nil {
		l.err = fmt.Errorf("trace: %s: %w", l.path, err)
		return
	}
	if !l.written {
		l.first = t
	}
	l.written = true
	l.last = t
	l.events++
}

const enterAttrEst = estU32 + 2*(estU32+estU8+estU64)

func (l *laneLog) enter(t uint64, region uint32, guid, parent uint64) {
	p := appendU32c(l.pay[:0], 2)
	p = append(appendU32c(p, attrGUIDRef), byte(OTF2TypeUint64))
	p = appendU64c(p, guid)
	p = append(appendU32c(p, attrParentRef), byte(OTF2TypeUint64))
	p = appendU64c(p, parent)
	r := appendRecord(l.rec[:0], otf2EvtAttributeList, enterAttrEst, p)
	r = appendU32c(append(r, otf2EvtEnter), region)
	l.pay, l.rec = p, r
	l.put(t, recordEstimate(enterAttrEst)+1+estU32, r)
	l.open, l.openRef = true, region
}

func (l *laneLog) leave(t uint64, region uint32) {
	r := appendU32c(append(l.rec[:0], otf2EvtLeave), region)
	l.rec = r
	l.put(t, 1+estU32, r)
	l.open = false
}

// metric appends a Metric event of metric class (or instance) ref with
// DOUBLE values; l.mu is held.
func (l *laneLog) metric(t uint64, ref uint32, values []float64) {
	est := estU32 + estU8 + len(values)*(estU8+estU64)
	p := append(appendU32c(l.pay[:0], ref), byte(len(values)))
	for _, v := range values { // type and value, by pairs
		p = appendU64c(append(p, byte(OTF2TypeDouble)), DoubleMetric(v).Value)
	}
	r := appendRecord(l.rec[:0], otf2EvtMetric, est, p)
	l.pay, l.rec = p, r
	l.put(t, recordEstimate(est), r)
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
		for _, l := range t.lanes {
			if err := l.close(t.now()); err != nil {
				errs = append(errs, err)
			}
		}
		t.mu.Lock()
		part := otf2Part{
			Locality:     t.cfg.Locality,
			Host:         t.host,
			Pid:          os.Getpid(),
			EvtChunkSize: t.cfg.EvtChunkSize,
			Regions:      append([]string(nil), t.names...),
		}
		t.mu.Unlock()
		for i, l := range t.lanes {
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
