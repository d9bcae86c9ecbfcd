package parcel_test

import (
	"testing"

	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/parcel/parceltest"
)

// The TCP parcelport passes the conformance suite, with readers that block
// and, on Linux, with raw reads (TCPConfig.RawReads).

func TestTCPConformance(t *testing.T) {
	parceltest.Run(t, socketTransport(func(cfg parcel.PortConfig) (parcel.Parcelport, error) {
		return parcel.NewTCP(parcel.TCPConfig{PortConfig: cfg})
	}))
}

func TestTCPRawReadsConformance(t *testing.T) {
	parceltest.Run(t, socketTransport(func(cfg parcel.PortConfig) (parcel.Parcelport, error) {
		return parcel.NewTCP(parcel.TCPConfig{PortConfig: cfg, RawReads: true})
	}))
}
