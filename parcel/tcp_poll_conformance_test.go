package parcel_test

import (
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/parcel/parceltest"
)

// The TCP parcelport with polling readers (TCPConfig.PollFor) passes the
// conformance suite like the blocking one.

// A long window: readers poll for the whole test.
func TestTCPPollConformance(t *testing.T) {
	parceltest.Run(t, socketTransport(func(cfg parcel.PortConfig) (parcel.Parcelport, error) {
		return parcel.NewTCP(parcel.TCPConfig{PortConfig: cfg, PollFor: time.Minute})
	}))
}

// A window shorter than the gaps between parcels: readers keep going from
// polling to blocking and back.
func TestTCPPollBlockConformance(t *testing.T) {
	parceltest.Run(t, socketTransport(func(cfg parcel.PortConfig) (parcel.Parcelport, error) {
		return parcel.NewTCP(parcel.TCPConfig{PortConfig: cfg, PollFor: 50 * time.Microsecond})
	}))
}
