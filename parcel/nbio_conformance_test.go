package parcel_test

import (
	"testing"

	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/parcel/parceltest"
)

// The NBIO parcelport passes the conformance suite.
func TestNBIOConformance(t *testing.T) {
	parceltest.Run(t, socketTransport(func(cfg parcel.PortConfig) (parcel.Parcelport, error) {
		return parcel.NewNBIO(parcel.NBIOConfig{PortConfig: cfg})
	}))
}
