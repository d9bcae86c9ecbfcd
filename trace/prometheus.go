package trace

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// Snapshot is a locality's counters at one instant, as the Prometheus
// collector exports them. The runtime fills the task, call and peer
// fields; AGAS fills AGAS.
type Snapshot struct {
	TasksSpawned    uint64 // tasks created
	TasksExecuted   uint64 // tasks that ran to the end
	TaskYields      uint64 // times a task gave its lane back to wait
	TaskQueueLength int    // tasks waiting for a lane now
	Lanes           int    // worker lanes
	CallsSent       uint64 // action calls sent to other localities
	CallsServed     uint64 // action calls served for other localities
	PendingCalls    int    // calls sent whose reply has not arrived
	BytesLent       uint64 // shared memory lent to localities on this machine, not copied
	BytesBorrowed   uint64 // shared memory other localities lent here
	Peers           []PeerTraffic
	AGAS            *AGASCounters  // nil: no AGAS on this locality
	Arrays          *ArrayCounters // nil: no distributed arrays on this locality
}

// PeerTraffic is the parcel traffic with one peer locality.
type PeerTraffic struct {
	Peer            uint32
	ParcelsSent     uint64
	BytesSent       uint64
	ParcelsReceived uint64
	BytesReceived   uint64
	QueueLength     int    // parcels waiting for the writer now
	Writes          uint64 // write system calls
}

// AGASCounters is AGAS's work on one locality.
type AGASCounters struct {
	Resolutions uint64 // owner lookups for calls sent
	CacheHits   uint64
	CacheMisses uint64
	Forwarded   uint64 // calls passed on to where their object went
	Migrations  uint64 // objects that left the locality
	LiveObjects int    // objects living on the locality now
}

// ArrayCounters is the memory of one locality's distributed arrays: those
// made and not yet reclaimed (released by every locality).
type ArrayCounters struct {
	Live      int64 // arrays
	LiveBytes int64 // their tiles' memory
	AGASNames int64 // their tiles' names registered in AGAS
}

// CounterSource fills a Snapshot with what it counts. The runtime gives
// each locality's collector one (which includes the sources added to it,
// such as AGAS's).
type CounterSource interface {
	FillCounters(s *Snapshot)
}

// CounterFunc is a CounterSource made of a function.
type CounterFunc func(s *Snapshot)

// FillCounters calls f(s).
func (f CounterFunc) FillCounters(s *Snapshot) { f(s) }

type metricDef struct {
	name, help string
	kind       prometheus.ValueType
}

// The metrics, by scope. Counters end in _total; gauges do not.
var (
	localityMetrics = []struct {
		metricDef
		value func(*Snapshot) float64
	}{
		{metricDef{"tessera_tasks_total", "Tasks that ran to the end.", prometheus.CounterValue}, func(s *Snapshot) float64 { return float64(s.TasksExecuted) }},
		{metricDef{"tessera_tasks_spawned_total", "Tasks created: local tasks, continuations and served actions.", prometheus.CounterValue}, func(s *Snapshot) float64 { return float64(s.TasksSpawned) }},
		{metricDef{"tessera_task_yields_total", "Times a task gave its lane back to wait for a future.", prometheus.CounterValue}, func(s *Snapshot) float64 { return float64(s.TaskYields) }},
		{metricDef{"tessera_task_queue_length", "Tasks waiting for a lane.", prometheus.GaugeValue}, func(s *Snapshot) float64 { return float64(s.TaskQueueLength) }},
		{metricDef{"tessera_lanes", "Worker lanes: tasks that may compute at once.", prometheus.GaugeValue}, func(s *Snapshot) float64 { return float64(s.Lanes) }},
		{metricDef{"tessera_calls_sent_total", "Action calls sent to other localities.", prometheus.CounterValue}, func(s *Snapshot) float64 { return float64(s.CallsSent) }},
		{metricDef{"tessera_calls_served_total", "Action calls received from other localities.", prometheus.CounterValue}, func(s *Snapshot) float64 { return float64(s.CallsServed) }},
		{metricDef{"tessera_pending_calls", "Action calls sent whose reply has not arrived.", prometheus.GaugeValue}, func(s *Snapshot) float64 { return float64(s.PendingCalls) }},
		{metricDef{"tessera_bytes_lent_total", "Bytes of shared memory lent to localities on this machine without a copy.", prometheus.CounterValue}, func(s *Snapshot) float64 { return float64(s.BytesLent) }},
		{metricDef{"tessera_bytes_borrowed_total", "Bytes of shared memory other localities on this machine lent here.", prometheus.CounterValue}, func(s *Snapshot) float64 { return float64(s.BytesBorrowed) }},
	}
	peerMetrics = []struct {
		metricDef
		value func(*PeerTraffic) float64
	}{
		{metricDef{"tessera_parcels_sent_total", "Parcels sent to the peer locality (heartbeats not counted).", prometheus.CounterValue}, func(p *PeerTraffic) float64 { return float64(p.ParcelsSent) }},
		{metricDef{"tessera_parcel_bytes_sent_total", "Bytes of whole frames sent to the peer locality, heartbeats included.", prometheus.CounterValue}, func(p *PeerTraffic) float64 { return float64(p.BytesSent) }},
		{metricDef{"tessera_parcels_received_total", "Parcels received from the peer locality (heartbeats not counted).", prometheus.CounterValue}, func(p *PeerTraffic) float64 { return float64(p.ParcelsReceived) }},
		{metricDef{"tessera_parcel_bytes_received_total", "Bytes of whole frames received from the peer locality, heartbeats included.", prometheus.CounterValue}, func(p *PeerTraffic) float64 { return float64(p.BytesReceived) }},
		{metricDef{"tessera_parcel_queue_length", "Parcels waiting for the writer of the connection to the peer locality.", prometheus.GaugeValue}, func(p *PeerTraffic) float64 { return float64(p.QueueLength) }},
		{metricDef{"tessera_parcel_writes_total", "Write system calls on the connection to the peer locality (a batch of parcels is one).", prometheus.CounterValue}, func(p *PeerTraffic) float64 { return float64(p.Writes) }},
	}
	agasMetrics = []struct {
		metricDef
		value func(*AGASCounters) float64
	}{
		{metricDef{"tessera_agas_resolutions_total", "Owner lookups for calls through a GID sent from the locality.", prometheus.CounterValue}, func(a *AGASCounters) float64 { return float64(a.Resolutions) }},
		{metricDef{"tessera_agas_cache_hits_total", "Owner lookups answered by the resolution cache.", prometheus.CounterValue}, func(a *AGASCounters) float64 { return float64(a.CacheHits) }},
		{metricDef{"tessera_agas_cache_misses_total", "Owner lookups not in the cache, sent to the object's home.", prometheus.CounterValue}, func(a *AGASCounters) float64 { return float64(a.CacheMisses) }},
		{metricDef{"tessera_agas_forwarded_calls_total", "Calls that reached the locality for an object elsewhere and were passed on.", prometheus.CounterValue}, func(a *AGASCounters) float64 { return float64(a.Forwarded) }},
		{metricDef{"tessera_agas_migrations_total", "Objects that migrated away from the locality.", prometheus.CounterValue}, func(a *AGASCounters) float64 { return float64(a.Migrations) }},
		{metricDef{"tessera_agas_live_objects", "AGAS objects living on the locality.", prometheus.GaugeValue}, func(a *AGASCounters) float64 { return float64(a.LiveObjects) }},
	}
	arrayMetrics = []struct {
		metricDef
		value func(*ArrayCounters) float64
	}{
		{metricDef{"tessera_arrays_live", "Distributed arrays made on the locality and not yet reclaimed.", prometheus.GaugeValue}, func(a *ArrayCounters) float64 { return float64(a.Live) }},
		{metricDef{"tessera_array_bytes_live", "Bytes of the locality's tiles of those arrays.", prometheus.GaugeValue}, func(a *ArrayCounters) float64 { return float64(a.LiveBytes) }},
		{metricDef{"tessera_array_agas_names", "Names of the locality's tiles of those arrays registered in AGAS.", prometheus.GaugeValue}, func(a *ArrayCounters) float64 { return float64(a.AGASNames) }},
	}
)

// Collector exports a locality's counters to Prometheus. Every metric has
// the constant label locality; the parcel metrics also the label peer.
// Register one per locality with the program's prometheus.Registerer:
// localities of one process can share a registry, since their label
// differs.
type Collector struct {
	src                          CounterSource
	locality, peer, agas, arrays []*prometheus.Desc
}

// NewCollector returns the collector of locality's counters, read from
// src at every scrape.
func NewCollector(locality uint32, src CounterSource) *Collector {
	labels := prometheus.Labels{"locality": strconv.FormatUint(uint64(locality), 10)}
	c := &Collector{src: src}
	for _, m := range localityMetrics {
		c.locality = append(c.locality, prometheus.NewDesc(m.name, m.help, nil, labels))
	}
	for _, m := range peerMetrics {
		c.peer = append(c.peer, prometheus.NewDesc(m.name, m.help, []string{"peer"}, labels))
	}
	for _, m := range agasMetrics {
		c.agas = append(c.agas, prometheus.NewDesc(m.name, m.help, nil, labels))
	}
	for _, m := range arrayMetrics {
		c.arrays = append(c.arrays, prometheus.NewDesc(m.name, m.help, nil, labels))
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, ds := range [][]*prometheus.Desc{c.locality, c.peer, c.agas, c.arrays} {
		for _, d := range ds {
			ch <- d
		}
	}
}

// Collect implements prometheus.Collector. The AGAS metrics appear once
// the source reports AGAS counters, the array metrics once it reports
// array counters.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	var s Snapshot
	c.src.FillCounters(&s)
	for i, m := range localityMetrics {
		ch <- prometheus.MustNewConstMetric(c.locality[i], m.kind, m.value(&s))
	}
	for p := range s.Peers {
		peer := strconv.FormatUint(uint64(s.Peers[p].Peer), 10)
		for i, m := range peerMetrics {
			ch <- prometheus.MustNewConstMetric(c.peer[i], m.kind, m.value(&s.Peers[p]), peer)
		}
	}
	if s.AGAS != nil {
		for i, m := range agasMetrics {
			ch <- prometheus.MustNewConstMetric(c.agas[i], m.kind, m.value(s.AGAS))
		}
	}
	if s.Arrays != nil {
		for i, m := range arrayMetrics {
			ch <- prometheus.MustNewConstMetric(c.arrays[i], m.kind, m.value(s.Arrays))
		}
	}
}
