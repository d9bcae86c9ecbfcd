package trace

import (
	"math"
	"sync"
	"time"
)

// DefaultSampleEvery is the sampler's period unless configured otherwise.
const DefaultSampleEvery = 100 * time.Millisecond

// RuntimeSample is the runtime's side of one sample, read from its
// counters.
type RuntimeSample struct {
	TaskQueueLen  int    // tasks waiting for a lane
	CallsInFlight int    // calls sent whose reply has not arrived
	ParcelsQueued int    // parcels waiting for a connection's writer
	ParcelsSent   uint64 // since the start
	BytesSent     uint64 // since the start
	LiveArrays    int64  // distributed arrays made here and not yet reclaimed
	ArrayBytes    int64  // their tiles' memory
	AGASObjects   int    // objects living in AGAS on the locality (tiles among them)
}

// SampleMetrics returns the sampler's metrics. Each is a metric class of
// its own with one member, whose reference in the sampler's event file is
// its index here: a sample is one Metric event of one value per metric,
// all at the same time, so that a reader that keeps one value per Metric
// record (Traveler takes the first value of each line otf2-print prints)
// sees every metric. MergeOTF2 defines them once per locality, named
// "NAME (locality N)", and maps each locality's references to its own.
//
// Counts and sizes are UINT64 and CPU utilisation a DOUBLE rounded to a
// thousandth of a percent: otf2-print prints integers in full and
// doubles with %g, which takes an exponent (that Traveler's parser
// misreads) only from 1e6 or below 1e-4.
func SampleMetrics() []OTF2MetricMemberDef {
	ms := []OTF2MetricMemberDef{
		{Name: "CPU utilization", Description: "process CPU time over wall time since the last sample, all cores", Unit: "%", ValueType: OTF2TypeDouble},
		{Name: "Resident set size", Description: "the process's resident memory", Unit: "bytes"},
		{Name: "Task queue length", Description: "tasks waiting for a worker lane", Unit: "tasks"},
		{Name: "Calls in flight", Description: "action calls sent whose reply has not arrived", Unit: "calls"},
		{Name: "Parcels queued", Description: "parcels waiting to be written to a connection", Unit: "parcels"},
		{Name: "Parcels sent", Description: "parcels sent since the start", Unit: "parcels"},
		{Name: "Bytes sent", Description: "bytes sent since the start", Unit: "bytes"},
		{Name: "Live arrays", Description: "distributed arrays made on the locality and not yet reclaimed", Unit: "arrays"},
		{Name: "Live array bytes", Description: "the memory of the live arrays' tiles", Unit: "bytes"},
		{Name: "AGAS objects", Description: "objects living in AGAS on the locality, tiles among them", Unit: "objects"},
	}
	for i := range ms {
		ms[i].Mode = OTF2MetricModeAbsolutePoint
		if ms[i].ValueType == 0 {
			ms[i].ValueType = OTF2TypeUint64
		}
		ms[i].Base = OTF2BaseDecimal
	}
	return ms
}

// minCPUWindow is the shortest time CPU utilisation is measured over: the
// process's CPU time grows by clock ticks of 10ms, so over a shorter time
// one tick would read as several cores busy. A sample taken sooner (the
// first one, at the start) repeats the last value (0 at first).
const minCPUWindow = 10 * time.Millisecond

// sampler writes a sample (a Metric event per metric) to its location
// every period.
type sampler struct {
	t        *Tracer
	l        *laneLog
	counters func() RuntimeSample
	done     chan struct{}
	wg       sync.WaitGroup

	lastWall time.Time
	lastCPU  time.Duration
	values   []OTF2MetricValue
}

func startSampler(t *Tracer, l *laneLog, every time.Duration, counters func() RuntimeSample) *sampler {
	s := &sampler{t: t, l: l, counters: counters, done: make(chan struct{}), values: make([]OTF2MetricValue, len(SampleMetrics()))}
	s.values[0] = DoubleMetric(0)
	s.lastWall = time.Now()
	s.lastCPU, _ = processCPU()
	s.sample() // one at the start, so that even a short run has a sample
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				s.sample()
			case <-s.done:
				return
			}
		}
	}()
	return s
}

// sample takes one sample and writes it.
func (s *sampler) sample() {
	now := time.Now()
	cpu, _ := processCPU()
	v := s.values
	if wall := now.Sub(s.lastWall); wall >= minCPUWindow && cpu >= s.lastCPU {
		v[0] = DoubleMetric(math.Round(1e5*float64(cpu-s.lastCPU)/float64(wall)) / 1e3)
		s.lastWall, s.lastCPU = now, cpu
	}
	rss, _ := processRSS()
	v[1] = U64Metric(rss)
	var r RuntimeSample
	if s.counters != nil {
		r = s.counters()
	}
	count := func(n int) OTF2MetricValue { return U64Metric(uint64(max(n, 0))) }
	v[2], v[3], v[4] = count(r.TaskQueueLen), count(r.CallsInFlight), count(r.ParcelsQueued)
	v[5], v[6] = U64Metric(r.ParcelsSent), U64Metric(r.BytesSent)
	v[7], v[8], v[9] = count(int(r.LiveArrays)), count(int(r.ArrayBytes)), count(r.AGASObjects)
	s.l.mu.Lock()
	if !s.l.closed {
		t := s.t.now()
		for i, x := range v {
			s.l.metric(t, uint32(i), x)
		}
	}
	s.l.mu.Unlock()
}

// stop takes a last sample and ends the sampler.
func (s *sampler) stop() {
	close(s.done)
	s.wg.Wait()
	s.sample()
}
