package primitives

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/tessera-amt/tessera/agas"
	"github.com/tessera-amt/tessera/annotate"
	"github.com/tessera-amt/tessera/runtime"
	"github.com/tessera-amt/tessera/trace"
)

// A locality's metrics include its live arrays, their tile bytes and
// their AGAS names, and go back to zero once the arrays are dropped.
func TestArrayCountersInTheLocalityMetrics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	reg := runtime.NewRegistry()
	acts := Register(reg, agas.New(reg))
	prom := prometheus.NewPedanticRegistry()
	job, err := runtime.StartLocal(ctx, 2, runtime.Config{Registry: reg, Metrics: prom})
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"tessera_arrays_live", "tessera_array_bytes_live", "tessera_array_agas_names"}
	metrics := func(live, bytes, named int) string {
		var b strings.Builder
		for i, help := range []string{
			"Distributed arrays made on the locality and not yet reclaimed.",
			"Bytes of the locality's tiles of those arrays.",
			"Names of the locality's tiles of those arrays registered in AGAS.",
		} {
			fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", names[i], help, names[i])
			v := []int{live, bytes, named}[i]
			fmt.Fprintf(&b, "%s{locality=\"0\"} %d\n%s{locality=\"1\"} %d\n", names[i], v, names[i], v)
		}
		return b.String()
	}
	err = job.Run(ctx, func(ctx context.Context, rt *runtime.Runtime) error {
		e, err := NewEnv(rt, acts)
		if err != nil {
			return err
		}
		defer e.Close()
		base := levelOf(e)
		x := Random(ctx, e, []int{8, 4}, Layout{Name: "metered"}, 1)
		a, err := x.Get(ctx)
		if err != nil {
			return err
		}
		// Fetched from, so named in AGAS on both localities.
		if _, err := a.Fetch(ctx, annotate.Block{{Start: 0, Stop: 8}, {Start: 0, Stop: 4}}).Get(ctx); err != nil {
			return err
		}
		a = nil
		for e.Counters().AGASNames != base.names+1 {
			if err := pause(ctx, e, time.Millisecond); err != nil {
				return err
			}
		}
		// Both localities hold x and its name between the two sums.
		if _, err := Sum(ctx, e, x).Get(ctx); err != nil {
			return err
		}
		var check error
		if e.Locality() == 0 {
			check = testutil.GatherAndCompare(prom, strings.NewReader(metrics(1, 4*4*8, 1)), names...)
		}
		// rt.Counters says the same as the collector.
		if c := rt.Counters(); c.Arrays == nil || c.Arrays.Live != 1 || c.Arrays.LiveBytes != 4*4*8 || c.Arrays.AGASNames != 1 {
			check = errors.Join(check, fmt.Errorf("locality %d's rt.Counters().Arrays with the array live: %+v, want 1 array, 128 bytes, 1 name", rt.Here(), c.Arrays))
		} else if c.AGAS == nil || c.AGAS.LiveObjects < 1 {
			check = errors.Join(check, fmt.Errorf("locality %d's rt.Counters().AGAS with a tile live: %+v", rt.Here(), c.AGAS))
		}
		if _, err := Sum(ctx, e, x).Get(ctx); err != nil {
			return err
		}
		if check != nil {
			return fmt.Errorf("with the array live: %w", check)
		}
		x = nil
		if err := waitCollected(ctx, e, base); err != nil {
			return err
		}
		if e.Locality() != 0 {
			return nil
		}
		// Locality 1 drops its tile once it hears of locality 0's release.
		for {
			err := testutil.GatherAndCompare(prom, strings.NewReader(metrics(0, 0, 0)), names...)
			if c := rt.Counters(); err == nil && (c.Arrays == nil || *c.Arrays != trace.ArrayCounters{}) {
				err = fmt.Errorf("rt.Counters().Arrays after the array was dropped: %+v", c.Arrays)
			}
			if err == nil {
				return nil
			}
			if err := pause(ctx, e, time.Millisecond); err != nil {
				return fmt.Errorf("after the array was dropped: %w", err)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
