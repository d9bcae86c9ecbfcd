package runtime

import (
	"context"
	"net"
	goruntime "runtime"
	"strings"
	"testing"
)

// Config.TCPCongestion reaches the tcp parcelport: two localities over
// loopback with reno call each other; a control the system does not have
// fails Start with an error that names it.
func TestTCPCongestionConfig(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("choosing a connection's congestion control is Linux's")
	}
	reg := NewRegistry()
	echo := Register(reg, "congestion.echo", func(_ context.Context, b []byte) ([]byte, error) { return b, nil })
	rts := startTCPWith(t, 2, Config{Registry: reg, TCPCongestion: "reno"})
	ctx := testCtx(t)
	if got, err := Async(ctx, rts[0].Locality(1), echo, []byte("hi")).Get(ctx); err != nil || string(got) != "hi" {
		t.Fatalf("call over reno connections: %q, %v", got, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Start(ctx, Config{Locality: 0, NumLocalities: 2, RootAddr: ln.Addr().String(), Listener: ln,
		Secret: []byte("congestion-test-secret-0123"), TCPCongestion: "no-such-control"})
	if err == nil || !strings.Contains(err.Error(), `"no-such-control"`) {
		t.Fatalf("Start with an unknown congestion control: %v, want an error naming it", err)
	}
}
