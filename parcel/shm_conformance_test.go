package parcel_test

import (
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/parcel/parceltest"
)

// The shared-memory parcelport passes the conformance suite: its
// localities share this machine, so every connection made with Connect
// moves to rings in shared memory; the suite's byte streams (Dial) stay on
// TCP, which the port also speaks, so the hostile-frame subtests test the
// TCP side of it. What only the rings do is tested in
// parcelport_shm_test.go.

func TestSHMConformance(t *testing.T) {
	parceltest.Run(t, socketTransport(func(cfg parcel.PortConfig) (parcel.Parcelport, error) {
		return parcel.NewSHM(parcel.SHMConfig{TCPConfig: parcel.TCPConfig{PortConfig: cfg}})
	}))
}

// Small rings that sleep at once: writers wait for room and readers for
// data all the time.
func TestSHMSmallRingsConformance(t *testing.T) {
	parceltest.Run(t, socketTransport(func(cfg parcel.PortConfig) (parcel.Parcelport, error) {
		return parcel.NewSHM(parcel.SHMConfig{TCPConfig: parcel.TCPConfig{PortConfig: cfg}, RingBytes: 64 << 10, SpinFor: -1})
	}))
}

// Polling ring readers (the progress mode's poll).
func TestSHMPollConformance(t *testing.T) {
	parceltest.Run(t, socketTransport(func(cfg parcel.PortConfig) (parcel.Parcelport, error) {
		return parcel.NewSHM(parcel.SHMConfig{TCPConfig: parcel.TCPConfig{PortConfig: cfg, PollFor: time.Minute}})
	}))
}
