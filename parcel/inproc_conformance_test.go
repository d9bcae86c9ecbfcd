package parcel_test

import (
	"testing"

	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/parcel/parceltest"
)

// The inproc parcelport passes the conformance suite. It carries no bytes
// (no Dial), proves no secret, sends no heartbeats and has no frame limit;
// its localities can be killed.
func TestInprocConformance(t *testing.T) {
	parceltest.Run(t, parceltest.Transport{
		NewJob: func(testing.TB) parceltest.Job {
			nw := parcel.NewInprocNetwork(0)
			return parceltest.Job{
				Start: func(o parceltest.Options) (parcel.Parcelport, error) { return nw.Port(o.Locality, o.Handler) },
				Kill:  nw.Kill,
			}
		},
	})
}
