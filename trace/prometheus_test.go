package trace

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCollectorExportsASnapshot(t *testing.T) {
	agas := false
	src := CounterFunc(func(s *Snapshot) {
		*s = Snapshot{TasksSpawned: 12, TasksExecuted: 10, TaskYields: 3, TaskQueueLength: 2, Lanes: 4,
			CallsSent: 7, CallsServed: 5, PendingCalls: 1, BytesLent: 64 << 20, BytesBorrowed: 32 << 20,
			Peers: []PeerTraffic{
				{Peer: 0, ParcelsSent: 9, BytesSent: 900, ParcelsReceived: 8, BytesReceived: 800, QueueLength: 1, Writes: 6},
				{Peer: 2, ParcelsSent: 1, BytesSent: 100},
			}}
		if agas {
			s.AGAS = &AGASCounters{Resolutions: 20, CacheHits: 15, CacheMisses: 5, Forwarded: 2, Migrations: 1, LiveObjects: 3}
		}
	})
	c := NewCollector(1, src)
	want := `
# HELP tessera_tasks_total Tasks that ran to the end.
# TYPE tessera_tasks_total counter
tessera_tasks_total{locality="1"} 10
# HELP tessera_task_queue_length Tasks waiting for a lane.
# TYPE tessera_task_queue_length gauge
tessera_task_queue_length{locality="1"} 2
# HELP tessera_parcel_bytes_sent_total Bytes of whole frames sent to the peer locality, heartbeats included.
# TYPE tessera_parcel_bytes_sent_total counter
tessera_parcel_bytes_sent_total{locality="1",peer="0"} 900
tessera_parcel_bytes_sent_total{locality="1",peer="2"} 100
# HELP tessera_pending_calls Action calls sent whose reply has not arrived.
# TYPE tessera_pending_calls gauge
tessera_pending_calls{locality="1"} 1
# HELP tessera_bytes_lent_total Bytes of shared memory lent to localities on this machine without a copy.
# TYPE tessera_bytes_lent_total counter
tessera_bytes_lent_total{locality="1"} 6.7108864e+07
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"tessera_tasks_total", "tessera_task_queue_length", "tessera_parcel_bytes_sent_total", "tessera_pending_calls", "tessera_bytes_lent_total"); err != nil {
		t.Fatal(err)
	}
	// 10 locality metrics, 6 per peer for 2 peers, no AGAS yet.
	if n := testutil.CollectAndCount(c); n != 10+12 {
		t.Fatalf("%d metrics without AGAS, want 22", n)
	}
	agas = true
	if n := testutil.CollectAndCount(c); n != 10+12+6 {
		t.Fatalf("%d metrics with AGAS, want 28", n)
	}
	want = `
# HELP tessera_agas_cache_hits_total Owner lookups answered by the resolution cache.
# TYPE tessera_agas_cache_hits_total counter
tessera_agas_cache_hits_total{locality="1"} 15
# HELP tessera_agas_live_objects AGAS objects living on the locality.
# TYPE tessera_agas_live_objects gauge
tessera_agas_live_objects{locality="1"} 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "tessera_agas_cache_hits_total", "tessera_agas_live_objects"); err != nil {
		t.Fatal(err)
	}
	// The metrics pass the registry's own consistency checks and the
	// linter's naming conventions.
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

// Collectors of several localities share one registry; the same locality
// twice is refused.
func TestCollectorsOfLocalitiesShareARegistry(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	src := CounterFunc(func(s *Snapshot) { s.TasksExecuted = 1 })
	for loc := range uint32(3) {
		if err := reg.Register(NewCollector(loc, src)); err != nil {
			t.Fatalf("locality %d: %v", loc, err)
		}
	}
	if err := reg.Register(NewCollector(1, src)); err == nil {
		t.Fatal("a second collector for locality 1 was accepted")
	}
	if n, err := testutil.GatherAndCount(reg, "tessera_tasks_total"); err != nil || n != 3 {
		t.Fatalf("tessera_tasks_total: %d series, %v; want 3", n, err)
	}
}
