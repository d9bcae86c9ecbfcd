package agas

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tessera-amt/tessera/runtime"
)

// A locality's metrics include AGAS's counters once AGAS works there.
func TestAGASCountersInTheLocalityMetrics(t *testing.T) {
	reg := runtime.NewRegistry()
	s := New(reg)
	inc := RegisterMethod(reg, s, "metrics.box.inc", func(ctx context.Context, b *counter, _ struct{}) (int64, error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.Total++
		return b.Total, nil
	})
	prom := prometheus.NewPedanticRegistry()
	ctx := testCtx(t)
	job, err := runtime.StartLocal(ctx, 2, runtime.Config{Registry: reg, Metrics: prom})
	if err != nil {
		t.Fatal(err)
	}
	defer job.Close()
	gid := Create(s, job.Localities[1], &counter{})
	for range 3 {
		if _, err := Call(ctx, s, job.Localities[0], gid, inc, struct{}{}).Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	want := `
# HELP tessera_agas_resolutions_total Owner lookups for calls through a GID sent from the locality.
# TYPE tessera_agas_resolutions_total counter
tessera_agas_resolutions_total{locality="0"} 3
tessera_agas_resolutions_total{locality="1"} 0
# HELP tessera_agas_live_objects AGAS objects living on the locality.
# TYPE tessera_agas_live_objects gauge
tessera_agas_live_objects{locality="0"} 0
tessera_agas_live_objects{locality="1"} 1
`
	if err := testutil.GatherAndCompare(prom, strings.NewReader(want), "tessera_agas_resolutions_total", "tessera_agas_live_objects"); err != nil {
		t.Fatal(err)
	}
}
