//go:build !ucx

package parcel

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// UCXBuiltIn reports whether this build has the UCX parcelport (-tags ucx).
const UCXBuiltIn = false

// UCXVersion is the version of the UCX library the build links, or "" in
// a build without it.
func UCXVersion() string { return "" }

// ErrNoUCX is returned by NewUCX in a build without the UCX parcelport.
var ErrNoUCX = errors.New("this build has no UCX parcelport: rebuild with -tags ucx (needs libucx-dev: pkg-config ucx)")

// UCXConfig configures a UCX port; see the build with -tags ucx.
type UCXConfig struct {
	PortConfig
	PollFor time.Duration
}

// UCX is the fabric parcelport; this build does not have it.
type UCX struct{}

// NewUCX fails with ErrNoUCX: the build has no UCX parcelport.
func NewUCX(cfg UCXConfig) (*UCX, error) {
	return nil, fmt.Errorf("parcel: locality %d: %w", cfg.Locality, ErrNoUCX)
}

func (*UCX) Addr() string                                  { return "" }
func (*UCX) Connect(context.Context, uint32, string) error { return ErrNoUCX }
func (*UCX) Send(context.Context, *Parcel) error           { return ErrNoUCX }
func (*UCX) Counters() []PeerCounters                      { return nil }
func (*UCX) Close() error                                  { return nil }
func (*UCX) Polling() bool                                 { return false }
