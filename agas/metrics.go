package agas

import (
	"github.com/tessera-amt/tessera/runtime"
	"github.com/tessera-amt/tessera/trace"
)

// counterSource feeds AGAS's counters on one locality into that
// locality's metrics (runtime.Runtime.AddCounterSource): the service adds
// one the first time it works on a locality.
type counterSource struct {
	s  *Service
	rt *runtime.Runtime
}

// FillCounters implements trace.CounterSource.
func (c counterSource) FillCounters(snap *trace.Snapshot) {
	select {
	case <-c.rt.Done():
		return // the service has forgotten the locality
	default:
	}
	k := c.s.Counters(c.rt)
	snap.AGAS = &trace.AGASCounters{Resolutions: k.Resolutions, CacheHits: k.CacheHits, CacheMisses: k.CacheMisses,
		Forwarded: k.Forwarded, Migrations: k.Migrations, LiveObjects: k.LiveObjects}
}
