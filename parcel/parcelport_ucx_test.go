//go:build ucx

package parcel_test

import (
	"net"
	"strings"
	"testing"

	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/parcel/parceltest"
)

// The UCX parcelport passes the conformance suite over UCX's tcp transport
// and over its shared-memory ones. The byte streams of the suite are the
// TCP side's connections, whose frames take the same checks.

func ucxTransport(t *testing.T, tls string, poll bool) parceltest.Transport {
	t.Setenv("UCX_TLS", tls)
	return socketTransport(func(cfg parcel.PortConfig) (parcel.Parcelport, error) {
		c := parcel.UCXConfig{PortConfig: cfg}
		if poll {
			c.PollFor = 1 << 62
		}
		return parcel.NewUCX(c)
	})
}

func TestUCXConformanceTCP(t *testing.T) {
	parceltest.Run(t, ucxTransport(t, "tcp", false))
}

func TestUCXConformanceSharedMemory(t *testing.T) {
	parceltest.Run(t, ucxTransport(t, "sm,self", false))
}

func TestUCXConformancePoll(t *testing.T) {
	parceltest.Run(t, ucxTransport(t, "sm,self", true))
}

// A UCX_TLS that names no transport UCX has fails at start, with UCX's
// reason.
func TestUCXNoTransport(t *testing.T) {
	t.Setenv("UCX_TLS", "no-such-transport")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port, err := parcel.NewUCX(parcel.UCXConfig{PortConfig: parcel.PortConfig{Locality: 2, Listener: ln,
		Secret: []byte("0123456789abcdef0123456789abcdef"), Handler: nopHandler{}}})
	if err == nil {
		port.Close()
		t.Fatal("a UCX port started with UCX_TLS=no-such-transport")
	}
	if !strings.Contains(err.Error(), "locality 2") || !strings.Contains(err.Error(), "UCX init") {
		t.Fatalf("error %q does not name the locality and UCX's reason", err)
	}
	t.Log(err)
}

// nopHandler drops what it is given.
type nopHandler struct{}

func (nopHandler) Buffer(*parcel.Header, int, int) []byte { return nil }
func (nopHandler) Receive(*parcel.Parcel)                 {}
func (nopHandler) PeerDown(uint32, error)                 {}
