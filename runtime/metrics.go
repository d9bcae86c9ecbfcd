package runtime

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/tessera-amt/tessera/internal/jobenv"
	"github.com/tessera-amt/tessera/trace"
)

// metrics is a locality's side of Prometheus: the counter sources added to
// it and the address of its /metrics listener.
type metrics struct {
	mu      sync.Mutex
	sources []trace.CounterSource
	addr    string // where /metrics is served; "" none
	stops   []func()
}

// fillCounters fills s (the runtime's trace.CounterSource, as
// trace.CounterFunc(rt.fillCounters)): the locality's counters (Counters),
// its traffic with each peer, and what the sources added with
// AddCounterSource count (Counters holds those too).
func (rt *Runtime) fillCounters(s *trace.Snapshot) {
	c := rt.Counters()
	s.TasksSpawned, s.TasksExecuted, s.TaskYields = c.TasksSpawned, c.TasksExecuted, c.TaskYields
	s.TaskQueueLength, s.Lanes = c.TaskQueueLen, c.Lanes
	s.CallsSent, s.CallsServed, s.PendingCalls = c.CallsSent, c.CallsServed, c.PendingCalls
	s.BytesLent, s.BytesBorrowed = c.BytesLent, c.BytesBorrowed
	s.Peers = make([]trace.PeerTraffic, len(c.Peers))
	for i, p := range c.Peers {
		s.Peers[i] = trace.PeerTraffic{Peer: p.Peer, ParcelsSent: p.ParcelsSent, BytesSent: p.BytesSent,
			ParcelsReceived: p.ParcelsReceived, BytesReceived: p.BytesReceived, QueueLength: p.QueueLen, Writes: p.Writes}
	}
	s.AGAS, s.Arrays = c.AGAS, c.Arrays
}

// fillSources fills s with what the sources added with AddCounterSource
// count.
func (rt *Runtime) fillSources(s *trace.Snapshot) {
	rt.metrics.mu.Lock()
	sources := rt.metrics.sources
	rt.metrics.mu.Unlock()
	for _, src := range sources {
		src.FillCounters(s)
	}
}

// AddCounterSource adds what src counts to this locality's metrics (agas
// adds its counters this way).
func (rt *Runtime) AddCounterSource(src trace.CounterSource) {
	rt.metrics.mu.Lock()
	rt.metrics.sources = append(rt.metrics.sources[:len(rt.metrics.sources):len(rt.metrics.sources)], src)
	rt.metrics.mu.Unlock()
}

// MetricsAddr returns the address the locality serves /metrics on, or ""
// when it serves none.
func (rt *Runtime) MetricsAddr() string {
	rt.metrics.mu.Lock()
	defer rt.metrics.mu.Unlock()
	return rt.metrics.addr
}

// stopMetrics takes the locality's collector out of Config.Metrics and
// closes its /metrics listener. shutdown calls it.
func (rt *Runtime) stopMetrics() {
	rt.metrics.mu.Lock()
	stops := rt.metrics.stops
	rt.metrics.stops = nil
	rt.metrics.mu.Unlock()
	for _, stop := range stops {
		stop()
	}
}

// startMetrics registers the locality's collector with Config.Metrics and
// opens the /metrics listener of Config.MetricsAddr. Both end with the
// locality (stopMetrics).
func (rt *Runtime) startMetrics() error {
	if rt.cfg.Metrics != nil {
		c := trace.NewCollector(rt.here, trace.CounterFunc(rt.fillCounters))
		if err := rt.cfg.Metrics.Register(c); err != nil {
			return fmt.Errorf("runtime: locality %d: registering its metrics: %w", rt.here, err)
		}
		rt.metrics.stops = append(rt.metrics.stops, func() { rt.cfg.Metrics.Unregister(c) })
	}
	job := rt.cfg.MetricsAddr
	if job == "" {
		return nil
	}
	addr, err := jobenv.MetricsListenAddr(job, rt.here)
	if err != nil {
		return fmt.Errorf("runtime: locality %d: metrics address Config.MetricsAddr=%q: %w", rt.here, job, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("runtime: locality %d: metrics listener (metrics address %q): %w", rt.here, job, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(trace.NewCollector(rt.here, trace.CounterFunc(rt.fillCounters)))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	rt.metrics.mu.Lock()
	rt.metrics.addr = ln.Addr().String()
	rt.metrics.stops = append(rt.metrics.stops, func() { srv.Close() })
	rt.metrics.mu.Unlock()
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			rt.log.Warn("runtime: metrics listener stopped", "addr", ln.Addr().String(), "err", err)
		}
	}()
	rt.log.Info("runtime: serving metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	return nil
}
