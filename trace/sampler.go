package trace

import (
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
}

// SampleMetrics returns the members of the sampler's one metric class, in
// the order of the values of each of its Metric events (all DOUBLE); their
// global references are their indexes and the class's reference is 0.
func SampleMetrics() []OTF2MetricMemberDef {
	ms := []OTF2MetricMemberDef{
		{Name: "CPU utilization", Description: "process CPU time over wall time since the last sample, all cores", Unit: "%"},
		{Name: "Resident set size", Description: "the process's resident memory", Unit: "bytes"},
		{Name: "Task queue length", Description: "tasks waiting for a worker lane", Unit: "tasks"},
		{Name: "Calls in flight", Description: "action calls sent whose reply has not arrived", Unit: "calls"},
		{Name: "Parcels queued", Description: "parcels waiting to be written to a connection", Unit: "parcels"},
		{Name: "Parcels sent", Description: "parcels sent since the start", Unit: "parcels"},
		{Name: "Bytes sent", Description: "bytes sent since the start", Unit: "bytes"},
	}
	for i := range ms {
		ms[i].Mode = OTF2MetricModeAbsolutePoint
		ms[i].ValueType = OTF2TypeDouble
		ms[i].Base = OTF2BaseDecimal
	}
	return ms
}

// sampler writes a Metric event to its location every period.
type sampler struct {
	t        *Tracer
	l        *laneLog
	counters func() RuntimeSample
	done     chan struct{}
	wg       sync.WaitGroup

	lastWall time.Time
	lastCPU  time.Duration
	values   []float64
}

func startSampler(t *Tracer, l *laneLog, every time.Duration, counters func() RuntimeSample) *sampler {
	s := &sampler{t: t, l: l, counters: counters, done: make(chan struct{}), values: make([]float64, len(SampleMetrics()))}
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
	if wall := now.Sub(s.lastWall); wall > 0 && cpu >= s.lastCPU {
		v[0] = 100 * float64(cpu-s.lastCPU) / float64(wall)
	}
	s.lastWall, s.lastCPU = now, cpu
	rss, _ := processRSS()
	v[1] = float64(rss)
	var r RuntimeSample
	if s.counters != nil {
		r = s.counters()
	}
	v[2], v[3], v[4] = float64(r.TaskQueueLen), float64(r.CallsInFlight), float64(r.ParcelsQueued)
	v[5], v[6] = float64(r.ParcelsSent), float64(r.BytesSent)
	s.l.mu.Lock()
	if !s.l.closed {
		s.l.metric(s.t.now(), 0, v)
	}
	s.l.mu.Unlock()
}

// stop takes a last sample and ends the sampler.
func (s *sampler) stop() {
	close(s.done)
	s.wg.Wait()
	s.sample()
}
