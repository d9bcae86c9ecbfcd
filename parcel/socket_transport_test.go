package parcel_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/tessera-amt/tessera/parcel"
	"github.com/tessera-amt/tessera/parcel/parceltest"
)

// socketTransport describes a socket parcelport (TCP, NBIO) to the
// conformance suite: open starts one from its configuration. Every
// locality listens on a loopback port of its own; a stream is a TCP
// connection that has made the handshake.
func socketTransport(open func(cfg parcel.PortConfig) (parcel.Parcelport, error)) parceltest.Transport {
	return parceltest.Transport{
		NewJob: func(testing.TB) parceltest.Job {
			return parceltest.Job{Start: func(o parceltest.Options) (parcel.Parcelport, error) {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					return nil, err
				}
				p, err := open(parcel.PortConfig{Locality: o.Locality, Listener: ln, Secret: o.Secret, Handler: o.Handler, Logger: o.Logger,
					MaxFrame: o.MaxFrame, HeartbeatInterval: o.HeartbeatInterval, HeartbeatTimeout: o.HeartbeatTimeout})
				if err != nil {
					ln.Close()
				}
				return p, err
			}}
		},
		Dial: dialStream,
		Caps: parceltest.Authenticates | parceltest.Heartbeats | parceltest.FrameLimit,
	}
}

// dialStream connects to a socket port and makes the handshake as
// locality self.
func dialStream(ctx context.Context, addr string, self, want uint32, secret []byte) (net.Conn, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	if dl, ok := ctx.Deadline(); ok {
		c.SetDeadline(dl)
	}
	if err := parcel.DialHandshake(c, self, want, secret); err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}
